#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/python: the per-call overhead of the Python binding's A.forward(x) (numpy in, numpy
out) against the same call from C (forward-overhead.c: upload, forward, finish, download), in
one run, on a small case and on the PET-DMI CPU case (reference-cases.md: DMI scanner,
215 x 215 x 71 voxels of 2.78 mm, 10^6 NEMA events, Siddon, non-TOF).

C and Python alternate round by round and each keeps its best per-call time (the machine is
shared, so the minimum is the figure least disturbed by others' work).

    PYTHONPATH=build/python python3 bench/python/forward_overhead.py build/bench/forward-overhead \
        [--data DIR] [small|dmi ...]

--data DIR keeps the simulated list mode there (the DMI case takes about a minute to simulate
on 2 busy cores) and reuses it in later runs.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import tomolab as tl

SMALL = """name = bench-small
kind = ring
rings = 4
sides = 8
crystals_per_side = 8
crystal_pitch_mm = 4
radius_mm = 40
ring_pitch_mm = 4
crystal_size_mm = 4 4 10
"""

CASES = {
    # name: (scanner, grid dims, voxel mm, events, calls per round, rounds)
    'small': (lambda: tl.Scanner.from_text(SMALL), (16, 16, 4), 3.0, 2000, 200, 15),
    'dmi': (lambda: tl.Scanner.preset('dmi'), (215, 215, 71), 2.78, 1_000_000, 1, 2),
}


def run_case(exe, name, tmp):
    make_scanner, dims, mm, events, repeat, rounds = CASES[name]
    scanner = make_scanner()
    grid = tl.Grid.centred(dims, (mm, mm, mm))
    preset = 'nema' if name == 'dmi' else 'cylinder'
    act, mu = tl.phantom(preset, grid)
    t0 = time.monotonic()
    path = os.path.join(tmp, '%s-%d.tlm' % (name, events))
    if not os.path.exists(path):
        tl.Listmode.simulate(scanner, act, mu, events=events, seed=1).save(path)
    lm = tl.Listmode.load(path)
    print('%s: %s, %d x %d x %d voxels of %g mm, %d events (simulated or loaded in %.1f s)'
          % (name, scanner.name, *dims, mm, lm.n_events, time.monotonic() - t0), flush=True)
    A = tl.pet_operator(lm, grid)
    x = np.ones(grid.shape, np.float32)
    y = A.forward(x)  # warm-up
    best_py = best_c = best_inline = float('inf')
    c_sum = None
    inside = []  # per call: (Python wall time, the library's own time in that call)
    for _ in range(rounds):
        out = subprocess.run([exe, path, '%dx%dx%d@%g' % (*dims, mm), str(repeat), '1'],
                             check=True, capture_output=True, text=True).stdout.split()
        best_c = min(best_c, float(out[0]))
        c_sum = float(out[1])
        t0 = time.perf_counter()
        for _ in range(repeat):
            t1 = time.perf_counter()
            y = A.forward(x)
            inside.append((time.perf_counter() - t1, A.last_seconds))
        best_py = min(best_py, (time.perf_counter() - t0) / repeat)
        if name == 'small':
            # the same without the worker-thread hand-off that lets Ctrl-C cancel a call
            tl.set_interruptible(False)
            t0 = time.perf_counter()
            for _ in range(repeat):
                y = A.forward(x)
            best_inline = min(best_inline, (time.perf_counter() - t0) / repeat)
            tl.set_interruptible(True)
    assert abs(y.sum(dtype=np.float64) - c_sum) <= 1e-4 * abs(c_sum), (y.sum(), c_sum)
    # In-call: the binding's overhead of each call is its wall time minus the library's time
    # in that very call (same C sequence as forward-overhead.c), so other load on the machine
    # cancels out; the median over the calls.
    over = sorted(w - c for w, c in inside)[len(inside) // 2]
    lib = sorted(c for _, c in inside)[len(inside) // 2]
    print('%s: in-call   library %.3f ms   binding overhead %.3f ms (%.4f %% of the call)'
          % (name, lib * 1e3, over * 1e3, 100 * over / lib), flush=True)
    for label, t in (('Python', best_py), ('Python, set_interruptible(False)', best_inline)):
        if t < float('inf'):
            over = t - best_c
            print('%s: per call  C %.3f ms   %s %.3f ms   overhead %+.3f ms (%+.1f %%)'
                  % (name, best_c * 1e3, label, t * 1e3, over * 1e3, 100 * over / best_c),
                  flush=True)


def main(argv):
    exe = argv[1]
    args = argv[2:]
    data = None
    if args[:1] == ['--data']:
        data, args = args[1], args[2:]
        os.makedirs(data, exist_ok=True)
    names = args or ['small', 'dmi']
    print('device:', tl.default_context().name)
    with tempfile.TemporaryDirectory(prefix='tl-bench-python-') as tmp:
        for n in names:
            run_case(exe, n, data or tmp)


if __name__ == '__main__':
    main(sys.argv)
