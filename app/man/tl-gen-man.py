#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a man page (troff, man macros) from a built program's --help texts, so the pages
never drift from the options. For tomolab-cli, every verb listed under "Verbs:" gets its own
section from `tomolab-cli VERB --help`.
Usage: tl-gen-man.py OUTPUT NAME VERSION SUMMARY PROGRAM"""
import re
import subprocess
import sys


def help_text(argv):
    # --help needs neither a display nor a Vulkan device.
    out = subprocess.run(argv + ['--help'], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    return out.rstrip('\n')


def troff_block(text):
    """Help text as a no-fill block, escaped so no line reads as a request."""
    lines = ['.nf']
    for line in text.split('\n'):
        line = line.replace('\\', '\\e')
        if line.startswith(('.', "'")):
            line = '\\&' + line
        lines.append(line)
    lines.append('.fi')
    return '\n'.join(lines)


def main(output, name, version, summary, program):
    top = help_text([program])
    page = ['.TH {} 1 "" "Tomolab {}" "User Commands"'.format(name.upper(), version),
            '.SH NAME', '{} \\- {}'.format(name, summary),
            '.SH SYNOPSIS']
    verbs = []
    m = re.search(r'^Verbs:\n((?:  \S.*\n?)+)', top + '\n', re.M)
    if m:
        verbs = [line.split()[0] for line in m.group(1).splitlines()]
        page += ['.B {}'.format(name), '.I VERB', '[\\fIOPTIONS\\fR]']
    else:
        page += ['.B {}'.format(name), '[\\fIOPTIONS\\fR]']
    page += ['.SH DESCRIPTION', troff_block(top)]
    if verbs:
        page.append('.SH VERBS')
        for verb in verbs:
            page += ['.SS {}'.format(verb), troff_block(help_text([program, verb]))]
    page += ['.SH ENVIRONMENT',
             '.TP', '.B TOMOLAB_DEVICE', 'Vulkan device index or name substring to use.',
             '.TP', '.B TOMOLAB_VALIDATE', 'Set to 1 to turn the Vulkan validation layer on.',
             '.TP', '.B XDG_CACHE_HOME',
             'Sensitivity images and the pipeline cache live in $XDG_CACHE_HOME/tomolab.',
             '.SH SEE ALSO', '.BR tomolab (1),' if name != 'tomolab' else '.BR tomolab-cli (1),',
             'the documents in /usr/share/doc/tomolab.']
    with open(output, 'w', encoding='utf-8') as f:
        f.write('\n'.join(page) + '\n')


if __name__ == '__main__':
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
