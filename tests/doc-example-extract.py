#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the worked examples of a Markdown file to C files for the doc-example test.

Usage: doc-example-extract.py DOC OUT...

Each OUT is named doc-example-NAME.c or .h; its text is the ```c block that follows the line
`<!-- example: NAME -->` in DOC (blank lines between them allowed), preceded by a #line
directive so that the compiler's messages name the doc's own lines. A marker that is missing,
repeated or not followed by a C block is an error naming DOC and the line.
"""
import os
import re
import sys

MARKER = re.compile(r'^<!--\s*example:\s*([A-Za-z0-9_-]+)\s*-->\s*$')


def blocks(doc):
    lines = open(doc, encoding='utf-8').read().split('\n')
    found = {}
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        i += 1
        if not m:
            continue
        name, at = m.group(1), i
        if name in found:
            sys.exit(f'{doc}:{at}: example "{name}" given twice (first at line {found[name][0]})')
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i == len(lines) or lines[i].strip() != '```c':
            sys.exit(f'{doc}:{at}: example "{name}" is not followed by a ```c block')
        first = i + 2  # 1-based number of the block's first code line
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != '```':
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f'{doc}:{first - 1}: the block of example "{name}" is never closed')
        found[name] = (first, body)
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    doc = sys.argv[1]
    found = blocks(doc)
    for out in sys.argv[2:]:
        m = re.fullmatch(r'doc-example-([A-Za-z0-9_-]+)\.[ch]', os.path.basename(out))
        if not m or m.group(1) not in found:
            sys.exit(f'{doc}: no example "{m.group(1) if m else out}" (known: '
                     f'{", ".join(sorted(found)) or "none"})')
        first, body = found[m.group(1)]
        path = os.path.abspath(doc).replace('\\', '\\\\').replace('"', '\\"')
        with open(out, 'w', encoding='utf-8') as f:
            f.write(f'/* generated from {os.path.basename(doc)} by doc-example-extract.py */\n')
            f.write(f'#line {first} "{path}"\n')
            f.write('\n'.join(body) + '\n')


if __name__ == '__main__':
    main()
