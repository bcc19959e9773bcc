#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real PET list mode: the Siemens mMR file of ../shared/data (STIR's recon_test_pack: the
first ~0.6 s of an FDG scan, prompts, delayeds and a time tag every millisecond), opened
through the one door (tomolab.open: its Interfile header names the data file) and
reconstructed by MLEM on the dataset's grid (133 x 133 x 66 voxels of 4 mm, every door's).

Checks (exit 1 when one fails):
- the frame the time tags span is the README's ~0.6 s;
- one MLEM iteration written in numpy on the operator (x1 = x0 / s * A^T (1 / A x0): Shepp &
  Vardi 1982) equals Tomolab's MLEM to 1e-5 relative;
- MLEM keeps the counts: sum_j s_j x1_j = sum_i (A x0)_i / (A x0)_i = the events whose line
  crosses the image (A x0 > 0; a few hundred pass outside the grid's 264 mm half-width), to
  1e-4 (float sums of 2e5 terms).

Usage: PYTHONPATH=build/python python3 examples/python/mmr_mlem.py [HEADER]"""
import os
import sys
import time

import numpy as np

import tomolab as tl
from common import show

HERE = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, '..', '..', '..', 'shared', 'data', 'mmr', 'PET_ACQ_small.l.hdr.STIR')
failed = []

t0 = time.monotonic()
ds = tl.open(path)
lm = ds.data
print('%s: %s, %s, frame %.3f s from %.3f s; grid %s'
      % (os.path.basename(path), ds.format, lm, ds.duration_s, ds.start_s, ds.grid.dims))
if not 0.5 <= ds.duration_s <= 0.7:
    failed.append('frame %.3f s, expected ~0.6 s' % ds.duration_s)

# the run every door makes of it (tomolab-cli recon --run, the window's tomolab --run)
run = tl.Run(data=path, algorithm='mlem', iterations=1)
A = run.pet_operator(lm, grid=ds.grid)
sv = run.solver(A)
x0 = sv.image.astype(np.float64)
sv.run()
x1 = sv.image
s = sv.sensitivity.astype(np.float64)
print('Tomolab MLEM: %.1f s (sensitivity included; cached after the first run)'
      % (time.monotonic() - t0))

# the same iteration in numpy on A.forward / A.adjoint
fwd = A.forward(x0.astype(np.float32)).astype(np.float64)
seen = int((fwd > 0).sum())                            # events whose line crosses the image
ratio = np.divide(1.0, fwd, out=np.zeros_like(fwd), where=fwd > 0)
back = A.adjoint(ratio.astype(np.float32)).astype(np.float64)
mine = np.where(s > 0, x0 / np.where(s > 0, s, 1) * back, 0)
rel = float(np.linalg.norm(mine - x1) / np.linalg.norm(x1))
print('numpy MLEM vs Tomolab: relative L2 %.2e' % rel)
if not rel <= 1e-5:
    failed.append('numpy MLEM differs by %.2e' % rel)

kept = float((s * x1).sum())
print('sum(s x1) = %.1f for %d of the %d events crossing the image (%.2e relative)'
      % (kept, seen, lm.n_events, abs(kept - seen) / seen))
if not abs(kept - seen) <= 1e-4 * seen:
    failed.append('counts not kept: %.1f vs %d' % (kept, seen))
print('%.1f s' % (time.monotonic() - t0))
show('mMR', {'start': x0, 'MLEM 1': x1}, 'mmr_mlem.png')
if failed:
    print('FAILED: ' + '; '.join(failed))
    sys.exit(1)
