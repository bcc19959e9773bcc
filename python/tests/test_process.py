# SPDX-License-Identifier: GPL-3.0-or-later
"""Process-level properties: reference counts do not leak (10^4 calls keep the resident set
flat) and Ctrl-C (SIGINT) interrupts a long reconstruction promptly, between submissions, with
KeyboardInterrupt, leaving the last complete image and a process that exits cleanly."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tomolab as tl


def rss_bytes():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def under_asan():
    with open('/proc/self/maps') as f:
        return 'libasan' in f.read()


@pytest.mark.skipif(under_asan(), reason='ASan keeps freed memory in its quarantine (the ASan '
                    'run checks memory errors; the normal build checks the resident set)')
def test_memory_flat(ctx, grid):
    # a tiny operator so 10^4 device round trips take seconds on lavapipe
    sc = tl.Scanner.from_text('kind = ring\nrings = 1\nsides = 4\ncrystals_per_side = 4\n'
                              'crystal_pitch_mm = 4\nradius_mm = 40\ncrystal_size_mm = 4 4 10\n')
    act = tl.Image(np.ones(grid.shape, np.float32), grid)
    lm = tl.Listmode.simulate(sc, act, events=200, seed=1, exact_count=True, threads=1)
    A = tl.pet_operator(lm, grid, ctx=ctx)
    x = np.ones(grid.shape, np.float32)
    X = tl.Array(x, ctx=ctx)

    def calls(n):
        for i in range(n):
            y = A.forward(x)
            A.adjoint(y)
            if i % 10 == 0:
                Y = A.forward(X)
                tl.expr('y = 2*y', y=Y)
                Y.numpy()
                try:
                    A.forward(np.zeros(3, np.float32))
                except ValueError:
                    pass
                try:
                    tl.expr('y = +', y=Y)
                except tl.ParseError:
                    pass
                tl.load_image.__doc__  # noqa: B018
            if i % 100 == 0:
                tl.Solver(A, 'mlem', iterations=1).run()

    calls(500)  # warm-up: pipeline caches, allocator pools
    before = rss_bytes()
    calls(5000)  # 10^4 operator calls (and 10^3 of the others)
    grown = rss_bytes() - before
    print('resident set growth over 10^4 calls: %d kB' % (grown // 1024))
    # a leaked result array alone would be 5000 x (200 x 4 + 1024 x 4) bytes = 24 MB
    assert grown < 4 * 1024 * 1024, grown


CHILD = textwrap.dedent('''
    import sys, time, numpy as np, tomolab as tl
    sys.path.insert(0, sys.argv[1])
    from conftest import SCANNER_TEXT
    sc = tl.Scanner.from_text(SCANNER_TEXT)
    g = tl.Grid.centred((16, 16, 4), (3.0, 3.0, 4.0))
    act, mu = tl.phantom('cylinder', g, radius_mm=18)
    lm = tl.Listmode.simulate(sc, act, events=200000, seed=2, threads=1)
    A = tl.pet_operator(lm, g, projector='joseph')
    # small submissions so a cancel lands quickly; 10^4 iterations would take many minutes
    sv = tl.Solver(A, 'mlem', iterations=10000, objective='never', submit_budget=1 << 14)
    sv.step()
    print('started', flush=True)
    try:
        sv.run()
        print('finished', flush=True)
    except KeyboardInterrupt:
        img = sv.image
        print('interrupted after', sv.sub_iterations, 'finite', bool(np.isfinite(img).all()),
              'sum', float(img.sum()), flush=True)
        assert tl.default_context().validation_messages == 0
        sys.exit(3)
''')


def test_ctrl_c(tmp_path):
    script = tmp_path / 'child.py'
    script.write_text(CHILD)
    p = subprocess.Popen([sys.executable, str(script), os.path.dirname(__file__)],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == 'started'
        time.sleep(0.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    print('SIGINT -> exit in %.2f s: %s' % (waited, out.strip()))
    assert p.returncode == 3, (p.returncode, out)
    assert out.startswith('interrupted after')
    words = out.split()
    assert int(words[2]) >= 1 and words[4] == 'True' and float(words[6]) > 0
    assert waited < 10, waited
