#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Citations in the sources are author/year and each is in docs/references.md.

Finds every "Surname YEAR", "Surname et al. YEAR", "A & B YEAR" and "A, B & C YEAR" in the
comments and strings of compute/, app/, shaders/, python/, bench/, tests/, scripts/, examples/
and requires an entry of docs/references.md naming that first surname and that year; and no
citation by the seed papers' file numbers ("seed 000"). `--selftest` plants both faults."""
import os
import re
import sys

DIRS = ['compute', 'app', 'shaders', 'python', 'bench', 'tests', 'scripts', 'examples']
EXTS = ('.c', '.h', '.cpp', '.comp', '.glsl', '.py', '.sh')
NAME = r"(?:[A-Z][a-zà-ÿ'\-]+|Mc[A-Z][a-z]+)"
CITE = re.compile(r"\b(" + NAME + r")(?: et al\.?|(?:, " + NAME + r")*,? (?:and|&) " + NAME +
                  r")?,? \(?((?:19|20)\d\d)[a-z]?\b")
SEED = re.compile(r"\b[Ss]eeds? ?0\d\d\b")
# capitalised words before a year that are not authors
NOT_AUTHORS = {'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
               'September', 'October', 'November', 'December', 'Nucleus', 'Table', 'Figure',
               'Fig', 'Since', 'In', 'Until', 'Before', 'After', 'Mesa', 'Debian', 'Version',
               'Release', 'Copyright', 'The', 'From', 'Of', 'Up', 'C', 'Python', 'Windows',
               'Visual', 'Studio', 'Ubuntu', 'Vulkan', 'Jan', 'Feb', 'Mar', 'Apr', 'Jun', 'Jul',
               'Aug', 'Sep', 'Oct', 'Nov', 'Dec', 'Unicode', 'Edition', 'By', 'Year', 'Dose',
               'Summer', 'Winter', 'Spring', 'Autumn', 'Fall', 'Since', 'To', 'For', 'On'}


def citations(root):
    found = {}
    for d in DIRS:
        for dp, _, fns in os.walk(os.path.join(root, d)):
            for fn in fns:
                if not fn.endswith(EXTS) or fn == 'check-references.py':
                    continue
                p = os.path.join(dp, fn)
                try:
                    text = open(p, encoding='utf-8').read()
                except (UnicodeDecodeError, OSError):
                    continue
                rel = os.path.relpath(p, root)
                for m in CITE.finditer(text):
                    name = m.group(1)[:-2] if m.group(1).endswith("'s") else m.group(1)
                    if name in NOT_AUTHORS:
                        continue
                    found.setdefault((name, m.group(2)), rel)
                for m in SEED.finditer(text):
                    found.setdefault(('seed', m.group(0)), rel)
    return found


def check(root):
    try:
        refs = open(os.path.join(root, 'docs', 'references.md'), encoding='utf-8').read()
    except OSError as e:
        return [f'docs/references.md: {e}']
    entries = [line for line in refs.splitlines() if line.startswith('- ')]
    errors = []
    for (name, year), where in sorted(citations(root).items()):
        if name == 'seed':
            errors.append(f'{where}: cites "{year}": cite the paper by author and year instead')
        elif not any(name in e and year in e for e in entries):
            errors.append(f'{where}: cites {name} {year}, which docs/references.md does not list')
    return errors


def selftest():
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, 'compute'))
        os.makedirs(os.path.join(t, 'docs'))
        open(os.path.join(t, 'docs', 'references.md'), 'w').write('- **Siddon 1985** - ...\n')
        open(os.path.join(t, 'compute', 'a.c'), 'w').write(
            '/* Siddon 1985; Joseph (1982); Hudson & Larkin 1994; seed 003 eq. 1 */\n')
        errs = check(t)
        want = ['Joseph 1982', 'Hudson 1994', 'seed 003']
        ok = len(errs) == 3 and all(any(w in e for e in errs) for w in want)
        print('ok' if ok else 'FAILED: ' + '; '.join(errs))
        return 0 if ok else 1


if __name__ == '__main__':
    if '--selftest' in sys.argv:
        sys.exit(selftest())
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    errs = check(root)
    for e in errs:
        print(e)
    print(f'{len(citations(root))} citations checked, {len(errs)} problems')
    sys.exit(1 if errs else 0)
