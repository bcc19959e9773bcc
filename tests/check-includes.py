#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module graph of compute/ and shaders/ is one-way (docs/architecture.md):

    core <- expr, image <- recon <- pet, ct        (pet and ct never include each other)

Every #include "..." of a C file under compute/MODULE/ and of a GLSL file under
shaders/MODULE/ is resolved the way the build resolves it (next to the including file, then
the include roots: compute/ and compute/core for C, shaders/core for GLSL) and the module it
lands in must be one MODULE may use. Unresolvable includes fail too (a header moved without
its users). `--self-test` builds a small tree with violations in a temporary folder and checks
that each is reported, so this check cannot pass by finding nothing.

Usage: check-includes.py SOURCE_ROOT | --self-test
"""
import os
import re
import sys
import tempfile

ALLOWED = {
    "core": {"core"},
    "expr": {"core", "expr"},
    "image": {"core", "image"},
    "recon": {"core", "expr", "image", "recon"},
    "pet": {"core", "expr", "image", "recon", "pet"},
    "ct": {"core", "expr", "image", "recon", "ct"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(root, top, path):
    rel = os.path.relpath(path, os.path.join(root, top))
    first = rel.split(os.sep)[0]
    return first if first in ALLOWED else None


def check(root):
    problems = []
    for top, exts, roots in (("compute", (".c", ".h"), ("compute", "compute/core")),
                             ("shaders", (".glsl", ".comp"), ("shaders/core",))):
        base = os.path.join(root, top)
        for mod in ALLOWED:
            d = os.path.join(base, mod)
            if not os.path.isdir(d):
                if top == "compute":
                    problems.append(f"{top}/{mod}: module folder missing")
                continue
            for dirpath, _, names in os.walk(d):
                for name in sorted(names):
                    if not name.endswith(exts):
                        continue
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                    for inc in INCLUDE.findall(text):
                        cands = [os.path.join(dirpath, inc)] + [os.path.join(root, r, inc) for r in roots]
                        hit = next((c for c in cands if os.path.isfile(c)), None)
                        where = os.path.relpath(path, root)
                        if hit is None:
                            if inc.endswith(".spv.h") or inc in ("tl-shader-table.h", "tl-shader-sources.h"):
                                continue  # generated at build time by shaders/meson.build
                            problems.append(f'{where}: #include "{inc}" resolves to no file')
                            continue
                        target = module_of(root, top, os.path.realpath(hit))
                        if target is None:
                            problems.append(f'{where}: #include "{inc}" leaves {top}/ modules')
                        elif target not in ALLOWED[mod]:
                            problems.append(f'{where}: #include "{inc}" is module {target}; '
                                            f'{mod} may use {", ".join(sorted(ALLOWED[mod]))}')
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def put(rel, text=""):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        for mod in ALLOWED:
            put(f"compute/{mod}/tl-{mod}.h")
        put("shaders/core/tl_common.glsl")
        put("shaders/ct/ct_common.glsl", '#include "tl_common.glsl"\n')
        put("compute/pet/ok.c", '#include "tl-core.h"\n#include "recon/tl-recon.h"\n#include "tl-pet.h"\n')
        if check(root):
            print("self-test: a clean tree was reported:", check(root))
            return 1
        put("compute/pet/bad.c", '#include "ct/tl-ct.h"\n')
        put("compute/ct/bad.c", '#include "pet/tl-pet.h"\n')
        put("compute/core/bad.c", '#include "image/tl-image.h"\n')
        put("compute/image/bad.c", '#include "tl-recon.h"\n')   # bare, not next to it: unresolved
        put("shaders/pet/bad.comp", '#include "../ct/ct_common.glsl"\n')
        found = check(root)
        want = ["compute/pet/bad.c", "compute/ct/bad.c", "compute/core/bad.c",
                "compute/image/bad.c", "shaders/pet/bad.comp"]
        missed = [w for w in want if not any(p.startswith(w) for p in found)]
        if missed or len(found) != len(want):
            print("self-test: expected one report for each of", want, "got", found)
            return 1
    print("1..1\nok 1 - every planted violation reported")
    return 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if sys.argv[1] == "--self-test":
        return self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print("not ok:", p)
    if problems:
        print(f"1..1\nnot ok 1 - {len(problems)} include(s) break the module graph")
        return 1
    print("1..1\nok 1 - module graph is one-way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
