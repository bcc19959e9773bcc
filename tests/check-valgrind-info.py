#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""valgrind (memcheck) over `tomolab-cli info FILE` for every shipped and test file (issue 27):
../shared/data (from the source root) and tests/data. `info` runs the loader a reconstruction
would, so this is every reader on every real file. Fails on any read of uninitialised memory
(memcheck's "uninitialised" errors, with --track-origins) and on any other memcheck error,
except inside the forked reader process of image/tl-isolate.c, which exists to contain a
third-party parser's crash (tests/data/dxchange-libhdf5-segv.h5 makes libhdf5 1.10.8 read
address 0 there; the CLI reports it and goes on). TAP output; skipped where valgrind is absent.

  check-valgrind-info.py TOMOLAB-CLI SOURCE-ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

cli, root = sys.argv[1], sys.argv[2]
valgrind = shutil.which("valgrind")
if not valgrind:
    print("1..0 # SKIP valgrind is not installed")
    sys.exit(0)

files = []
for top in (os.path.join(root, "..", "shared", "data"), os.path.join(root, "tests", "data")):
    for d, _, names in os.walk(top):
        files += [os.path.join(d, n) for n in sorted(names) if not n.endswith((".md", ".txt"))]
files.sort()
if not files:
    print("1..0 # SKIP no data files found")
    sys.exit(0)

print("1..%d" % len(files))
failed = 0
with tempfile.TemporaryDirectory() as tmp:
    for i, f in enumerate(files, 1):
        logs = os.path.join(tmp, "vg%d" % i)
        os.mkdir(logs)
        r = subprocess.run([valgrind, "--tool=memcheck", "--track-origins=yes",
                            "--trace-children=yes", "--log-file=" + logs + "/%p.log", cli,
                            "info", f], capture_output=True, text=True, errors="replace",
                           timeout=600)
        bad = []
        for log in sorted(os.listdir(logs)):
            text = open(os.path.join(logs, log), errors="replace").read()
            # one error: a block of "==PID==" lines after a blank "==PID== " line
            blocks = re.split(r"\n==\d+== \n", text)
            for b in blocks:
                if not re.search(r"==\d+== (Invalid|Conditional jump|Use of uninitialised|"
                                 r"Syscall param|Mismatched|Source and destination|"
                                 r"Argument .* of function)", b):
                    continue
                isolated = "child_main (tl-isolate.c" in b
                if "uninitialised" in b or not isolated:
                    bad.append(b.strip())
        name = os.path.relpath(f, root)
        if bad:
            failed += 1
            print("not ok %d - %s: %d memcheck error(s)" % (i, name, len(bad)))
            for b in bad[:3]:
                for line in b.splitlines()[:25]:
                    print("# " + line)
        else:
            first = (r.stderr.strip().splitlines() or [""])[-1][:160]
            print("ok %d - %s (exit %d%s)" % (i, name, r.returncode,
                                              ": " + first if r.returncode else ""))
sys.exit(1 if failed else 0)
