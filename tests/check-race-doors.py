#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""One race file through two doors (issue 29 item 4), TAP:
  same      `tomolab-cli race --race FILE` and `tomolab --race FILE` (the window's race job,
            headless) on a small simulated scan: the same CSV header and rows, every column
            equal but the wall-clock seconds (the metrics, objectives and epochs of each update
            of each entrant, in turn order; the reference made by each door from the file's
            reference-algo), the seconds rising per entrant, no validation message;
  keys      the options are the file's keys: `--updates 2` over the file gives 2 updates;
  randoms   the key randoms = delayeds reaches the entrants through the file and --randoms
  refused   a bad key in the race file is refused by both doors, naming the file, the line, the
            key and the value.
Usage: check-race-doors.py TOMOLAB_CLI TOMOLAB"""
import csv
import os
import subprocess
import sys
import tempfile

RING = ("name = ring96\nkind = ring\nrings = 8\nsides = 12\ncrystals_per_side = 8\n"
        "crystal_pitch_mm = 4\nradius_mm = 70\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\n")


def run(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def rows(path):
    with open(path, newline='') as f:
        return list(csv.reader(f))


def main():
    cli, gui = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tests = []
    with tempfile.TemporaryDirectory(prefix='tomolab-race-doors-') as d:
        with open(os.path.join(d, 'ring.txt'), 'w') as f:
            f.write(RING)
        code, _, err = run([cli, 'simulate', '-s', 'ring.txt', '-n', '3000', '-g', '16x16x8@4',
                            '-o', 'scan.tlm', '-q'], d)
        if code != 0:
            print('Bail out! simulate failed: ' + err.strip().replace('\n', ' | '))
            return 1
        race = ("# a race as the window's Save would write it\n"
                "data = scan.tlm\n"
                "algos = mlem; osem:subsets=2; bsrem:subsets=2,prior=rdp,beta=0.1\n"
                "reference-algo = osem:subsets=2\nreference-updates = 8\n"
                "reference = ref-%s.nii\nupdates = 4\nobjective = true\ngrid = 16x16x8@4\n")
        for door in ('cli', 'gui'):
            with open(os.path.join(d, door + '.race'), 'w') as f:
                f.write(race % door)
        c1, _, e1 = run([cli, 'race', '--race', 'cli.race', '--csv', 'cli.csv'], d)
        c2, _, e2 = run([gui, '--race', 'gui.race', '--csv', 'gui.csv'], d)
        ok = c1 == 0 and c2 == 0
        why = '' if ok else 'exit %d / %d: %s | %s' % (c1, c2, e1.strip()[-300:], e2.strip()[-300:])
        if ok and ('Vulkan validation' in e1 or 'Vulkan validation' in e2):  # TOMOLAB_VALIDATE=1
            ok, why = False, 'a validation message: %s | %s' % (e1.strip()[-300:], e2.strip()[-300:])
        if ok:
            a, b = rows(os.path.join(d, 'cli.csv')), rows(os.path.join(d, 'gui.csv'))
            if a[0] != b[0] or len(a) != len(b) or len(a) != 1 + 3 * 4:
                ok, why = False, 'headers or row counts differ: %s %d / %s %d' % (a[0], len(a), b[0], len(b))
            for i, (ra, rb) in enumerate(zip(a[1:], b[1:]), 2):
                same = [x for k, x in enumerate(ra) if k != 2] == [x for k, x in enumerate(rb) if k != 2]
                if ok and not same:
                    ok, why = False, 'line %d differs: %s / %s' % (i, ra, rb)
            seconds = {}
            for r in b[1:]:
                if ok and float(r[2]) <= seconds.get(r[0], 0.0):
                    ok, why = False, '%s: seconds %s do not rise' % (r[0], r[2])
                seconds[r[0]] = float(r[2])
            if ok and b[0][:6] != ['label', 'update', 'seconds', 'epoch', 'objective', 'rmse']:
                ok, why = False, 'header %s' % b[0]
        tests.append(('same', ok, why))

        c3, _, e3 = run([cli, 'race', '--race', 'cli.race', '--csv', 'two.csv', '--updates', '2',
                         '--reference', 'ref-cli.nii', '--reference-algo', 'none'], d)
        ok = c3 == 0 and len(rows(os.path.join(d, 'two.csv'))) == 1 + 3 * 2
        tests.append(('keys', ok, '' if ok else 'exit %d: %s' % (c3, e3.strip()[-300:])))

        with open(os.path.join(d, 'bad.race'), 'w') as f:
            f.write("data = scan.tlm\nalgos = mlem; osem\nupdates = many\n")
        c4, _, e4 = run([cli, 'race', '--race', 'bad.race'], d)
        c5, _, e5 = run([gui, '--race', 'bad.race', '--csv', 'x.csv'], d)
        want = ["bad.race:3", "'updates'", "'many'"]
        ok = c4 != 0 and c5 != 0 and all(w in e4 and w in e5 for w in want)
        tests.append(('refused', ok, '' if ok else 'exit %d / %d: %s | %s' % (c4, c5, e4.strip(), e5.strip())))

        # the race key randoms reaches every entrant through both doors: these data have no
        # delayed events, so randoms = delayeds is refused by each with the entrant's message
        with open(os.path.join(d, 'delayeds.race'), 'w') as f:
            f.write(race % 'delayeds' + "randoms = delayeds\n")
        c6, _, e6 = run([cli, 'race', '--race', 'delayeds.race', '--csv', 'd1.csv'], d)
        c7, _, e7 = run([gui, '--race', 'delayeds.race', '--csv', 'd2.csv'], d)
        c8, _, e8 = run([cli, 'race', '--race', 'cli.race', '--csv', 'd3.csv', '--randoms', 'delayeds',
                         '--reference', 'ref-cli.nii', '--reference-algo', 'none'], d)
        want = ["randoms = delayeds", "no delayed events"]
        ok = c6 != 0 and c7 != 0 and c8 != 0 and all(w in e for w in want for e in (e6, e7, e8))
        tests.append(('randoms', ok, '' if ok else 'exit %d / %d / %d: %s | %s | %s' %
                      (c6, c7, c8, e6.strip(), e7.strip(), e8.strip())))
    print('1..%d' % len(tests))
    for i, (name, ok, why) in enumerate(tests, 1):
        print('%s %d - %s%s' % ('ok' if ok else 'not ok', i, name, '' if ok else ' # ' + why))
    return 0 if all(t[1] for t in tests) else 1


if __name__ == '__main__':
    sys.exit(main())
