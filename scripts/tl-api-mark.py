#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""TL_API on the public declarations of libtomolab-compute (compute/core/tl-api.h).

Every header under compute/ is public (installed) unless compute/private-headers.txt names it.
In a public header every file-scope function declaration and `extern` variable carries TL_API
and the header includes "tl-api.h"; in a private header nothing carries TL_API. Static inline
functions, typedefs, struct/enum definitions and macros are left alone. The exported names
must start with tl_ (compute/tl-compute.map exports tl_* only).

  tl-api-mark.py --check [SOURCE_ROOT]   TAP: one line per header, the faults as comments
  tl-api-mark.py --apply [SOURCE_ROOT]   adds what is missing, removes TL_API from private ones
  tl-api-mark.py --self-test             plants faults in a temporary tree; each must be found

Re-runnable: --apply on a marked tree changes nothing; run it after headers move or appear."""
import os
import re
import sys
import tempfile

MARK = 'TL_API'
INCLUDE = '#include "tl-api.h"'
API_HEADER = 'core/tl-api.h'


def read_private(compute):
    path = os.path.join(compute, 'private-headers.txt')
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith('#')]


def headers(compute):
    found = []
    for root, dirs, names in os.walk(compute):
        dirs.sort()
        for name in sorted(names):
            if name.endswith('.h'):
                found.append(os.path.relpath(os.path.join(root, name), compute))
    return found


def tokens(text):
    """(kind, value, offset) at file level: comments, strings and preprocessor lines dropped."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == '\n':
            line_start = True
            i += 1
            continue
        if c in ' \t\r\f\v':
            i += 1
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 2
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        if c == '#' and line_start:
            # a directive, with its continuation lines
            while i < n:
                j = text.find('\n', i)
                if j < 0:
                    i = n
                    break
                if text[j - 1] == '\\':
                    i = j + 1
                    continue
                i = j
                break
            continue
        line_start = False
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(('str', text[i:j + 1], i))
            i = j + 1
            continue
        m = re.compile(r'[A-Za-z_][A-Za-z0-9_]*').match(text, i)
        if m:
            out.append(('id', m.group(0), i))
            i = m.end()
            continue
        m = re.compile(r'[0-9][0-9A-Za-z_.]*').match(text, i)
        if m:
            out.append(('num', m.group(0), i))
            i = m.end()
            continue
        out.append(('p', c, i))
        i += 1
    return out


def line_of(text, offset):
    return text.count('\n', 0, offset) + 1


def declarations(text):
    """File-scope declarations that TL_API applies to: (offset of the first token, name,
    has TL_API, offset of the TL_API token or None)."""
    toks = tokens(text)
    decls = []
    i, n = 0, len(toks)
    while i < n:
        kind, value, off = toks[i]
        # A macro line at statement start (G_BEGIN_DECLS, G_DEFINE_AUTOPTR_CLEANUP_FUNC(...)):
        # all capitals, maybe a balanced (...), and the next token on a later line.
        if kind == 'id' and re.fullmatch(r'[A-Z][A-Z0-9_]*', value) and value != MARK:
            j = i + 1
            if j < n and toks[j][1] == '(':
                depth = 0
                while j < n:
                    if toks[j][1] == '(':
                        depth += 1
                    elif toks[j][1] == ')':
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                end = toks[j][2] if j < n else len(text)
                j += 1
            else:
                end = off + len(value)
            if j >= n or '\n' in text[end:toks[j][2]] or toks[j][1] == ';':
                i = j + 1 if j < n and toks[j][1] == ';' else j
                continue
        # one statement: up to ';' at depth 0, or a function body's closing '}'
        start = i
        depth = 0
        is_body = False
        while i < n:
            v = toks[i][1]
            if toks[i][0] == 'p':
                if v in '([{':
                    if v == '{' and depth == 0 and i > start and toks[i - 1][1] == ')':
                        is_body = True
                    depth += 1
                elif v in ')]}':
                    depth -= 1
                    if depth == 0 and v == '}' and is_body:
                        break
                elif v == ';' and depth == 0:
                    break
            i += 1
        stmt = toks[start:i]
        i += 1
        if is_body or not stmt:
            continue
        words = [t[1] for t in stmt if t[0] == 'id']
        if not words or words[0] in ('typedef',) or 'static' in words or 'typedef' in words:
            continue
        has_mark = stmt[0][1] == MARK
        body = stmt[1:] if has_mark else stmt
        if not body:
            continue
        values = [t[1] for t in body]
        name = None
        if 'extern' in values:
            # the declarator's name: the last identifier before '[', '=' or the end
            cut = len(body)
            for k, t in enumerate(body):
                if t[1] in ('[', '='):
                    cut = k
                    break
            ids = [t[1] for t in body[:cut] if t[0] == 'id']
            name = ids[-1] if ids else None
        elif '(' in values and '{' not in values and '=' not in values:
            k = values.index('(')
            if k + 3 < len(body) and body[k + 1][1] == '*' and body[k + 2][0] == 'id' and \
                    body[k + 3][1] == '(':
                # a function returning a function pointer: T (*name(args))(args)
                name = body[k + 2][1]
            elif k > 0 and body[k - 1][0] == 'id':
                name = body[k - 1][1]
        if name is None:
            continue
        decls.append((stmt[0][2], name, has_mark))
    return decls


def examine(compute):
    """{header: [fault, ...]} and the planned edits {header: new text}."""
    private = read_private(compute)
    all_headers = headers(compute)
    faults = {}
    edits = {}
    for p in private:
        if p not in all_headers:
            faults.setdefault('private-headers.txt', []).append(
                'names %s, which is not a header under compute/ (moved? update the list)' % p)
    for h in all_headers:
        path = os.path.join(compute, h)
        with open(path) as f:
            text = f.read()
        is_private = h in private
        decls = declarations(text)
        mine = []
        new = text
        # edits from the end so earlier offsets stay valid
        for off, name, has_mark in sorted(decls, reverse=True):
            line = line_of(text, off)
            if is_private and has_mark:
                mine.append('line %d: %s carries TL_API in a private header' % (line, name))
                m = re.compile(re.escape(MARK) + r'[ \t]+').match(new, off)
                new = new[:off] + new[m.end():] if m else new
            elif not is_private and not has_mark:
                mine.append('line %d: %s has no TL_API (public header)' % (line, name))
                new = new[:off] + MARK + ' ' + new[off:]
            if not is_private and not name.startswith('tl_'):
                mine.append('line %d: %s is public but not tl_* (tl-compute.map hides it)'
                            % (line, name))
        wants_include = not is_private and h != API_HEADER and decls
        if wants_include and INCLUDE not in text:
            mine.append('does not include "tl-api.h"')
            m = re.search(r'^#pragma once[^\n]*\n', new, re.M)
            at = m.end() if m else 0
            new = new[:at] + INCLUDE + '\n' + new[at:]
        if is_private and INCLUDE in text and not any(d[2] for d in decls):
            # harmless, but a private header has no use for it
            pass
        mine.reverse()
        if mine:
            faults[h] = mine
        if new != text:
            edits[h] = new
    return all_headers, faults, edits


def check(root):
    compute = os.path.join(root, 'compute')
    all_headers, faults, _ = examine(compute)
    names = ['private-headers.txt'] + all_headers
    print('1..%d' % len(names))
    bad = 0
    for k, h in enumerate(names, 1):
        mine = faults.get(h, [])
        print('%s %d compute/%s' % ('not ok' if mine else 'ok', k, h))
        for m in mine:
            print('#   ' + m)
        bad += bool(mine)
    if bad:
        print('# fix: python3 scripts/tl-api-mark.py --apply')
    return 1 if bad else 0


def apply(root):
    compute = os.path.join(root, 'compute')
    _, faults, edits = examine(compute)
    for h, text in sorted(edits.items()):
        with open(os.path.join(compute, h), 'w') as f:
            f.write(text)
        print('marked compute/%s' % h)
    left = {h: f for h, f in faults.items() if h not in edits or 'tl_*' in ' '.join(f)}
    for h, fs in sorted(left.items()):
        for m in fs:
            if h not in edits or 'tl_*' in m:
                print('left for you: compute/%s: %s' % (h, m))
    return 0


SELF_TEST_PUBLIC = '''/* a public header */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef struct _TlThing TlThing;
typedef gboolean (*TlThingFunc)(TlThing *t,
                                GError **error);
typedef struct {
  int a;
  void (*cb)(int);
} TlPlain;
enum { TL_X = 1, TL_Y = 2 };
#define TL_THING_MAX(a, b) \\
  ((a) > (b) ? (a) : (b))

TlThing *tl_thing_new(const char *name,
                      GError **error);
void tl_thing_free(TlThing *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlThing, tl_thing_free)
static inline int tl_thing_twice(int x) {
  struct { int y; } s = {x};
  return 2 * s.y;
}
extern const TlPlain tl_thing_default;
const char *const *tl_thing_names(void); /* NULL-terminated */
gboolean
tl_thing_run(TlThing *t, const char *s /* a ; inside a comment */, GError **error);
void (*tl_thing_hook(int which))(int);
int helper_without_prefix(void);

G_END_DECLS
'''
SELF_TEST_EXPECT = ['tl_thing_new', 'tl_thing_free', 'tl_thing_default', 'tl_thing_names',
                    'tl_thing_run', 'tl_thing_hook', 'helper_without_prefix']
SELF_TEST_PRIVATE = '''/* internal */
#pragma once
#include "tl-api.h"
#include "a/tl-thing.h"

TL_API void tl_thing_secret(TlThing *t);
void tl_thing_quiet(TlThing *t);
'''


def self_test():
    print('1..6')
    ok_all = True

    def result(k, ok, what):
        nonlocal ok_all
        ok_all &= ok
        print('%s %d %s' % ('ok' if ok else 'not ok', k, what))

    with tempfile.TemporaryDirectory(prefix='tl-api-mark-') as root:
        compute = os.path.join(root, 'compute')
        for d in ('core', 'a'):
            os.makedirs(os.path.join(compute, d))
        files = {
            'core/tl-api.h': '#pragma once\n#define TL_API\n',
            'a/tl-thing.h': SELF_TEST_PUBLIC,
            'a/tl-thing-private.h': SELF_TEST_PRIVATE,
            'private-headers.txt': '# test\na/tl-thing-private.h\na/tl-gone.h\n',
        }
        for name, text in files.items():
            with open(os.path.join(compute, name), 'w') as f:
                f.write(text)
        # 1: the parser finds exactly the declarations TL_API applies to
        found = [d[1] for d in declarations(SELF_TEST_PUBLIC)]
        result(1, found == SELF_TEST_EXPECT, 'declarations found: %s' % found)
        # 2: --check reports each planted fault
        _, faults, _ = examine(compute)
        pub = ' '.join(faults.get('a/tl-thing.h', []))
        priv = ' '.join(faults.get('a/tl-thing-private.h', []))
        lst = ' '.join(faults.get('private-headers.txt', []))
        want = all(n + ' has no TL_API' in pub for n in SELF_TEST_EXPECT) and \
            'tl-api.h' in pub and 'helper_without_prefix is public but not tl_*' in pub and \
            'tl_thing_secret carries TL_API' in priv and 'tl_thing_quiet' not in priv and \
            'a/tl-gone.h' in lst
        result(2, want, 'check finds the planted faults')
        # 3: --apply fixes them, and a second run changes nothing
        with open(os.devnull, 'w') as null:
            saved, sys.stdout = sys.stdout, null
            try:
                apply(root)
                with open(os.path.join(compute, 'a/tl-thing.h')) as f:
                    once = f.read()
                apply(root)
            finally:
                sys.stdout = saved
        with open(os.path.join(compute, 'a/tl-thing.h')) as f:
            twice = f.read()
        result(3, once == twice and once.count(MARK) == len(SELF_TEST_EXPECT) and
               INCLUDE in once, 'apply marks every declaration once and is re-runnable')
        # 4: the marked text: TL_API in front of each declaration's first token, nothing else
        want_lines = ['TL_API TlThing *tl_thing_new(const char *name,', 'TL_API void tl_thing_free',
                      'TL_API extern const TlPlain', 'TL_API const char *const *tl_thing_names',
                      'TL_API gboolean\ntl_thing_run', 'TL_API void (*tl_thing_hook',
                      '#pragma once\n#include "tl-api.h"\n']
        result(4, all(w in once for w in want_lines) and 'TL_API static' not in once and
               'TL_API typedef' not in once and 'TL_API G_' not in once,
               'TL_API placed on the declarations only')
        _, faults, _ = examine(compute)
        with open(os.path.join(compute, 'a/tl-thing-private.h')) as f:
            priv_text = f.read()
        result(5, 'TL_API' not in priv_text.replace('#include "tl-api.h"', '') and
               'a/tl-thing-private.h' not in faults, 'apply removes TL_API from a private header')
        # 6: what apply cannot fix stays a fault: the non-tl_ name, the stale list entry
        left = ' '.join(faults.get('a/tl-thing.h', []) + faults.get('private-headers.txt', []))
        result(6, 'helper_without_prefix' in left and 'a/tl-gone.h' in left and
               set(faults) == {'a/tl-thing.h', 'private-headers.txt'},
               'faults left after apply: %s' % sorted(faults))
    return 0 if ok_all else 1


def main(argv):
    if len(argv) >= 2 and argv[1] == '--self-test':
        return self_test()
    if len(argv) < 2 or argv[1] not in ('--check', '--apply'):
        print(__doc__)
        return 2
    root = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         '..')
    return check(root) if argv[1] == '--check' else apply(root)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
