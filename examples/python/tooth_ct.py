#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real CT scan: the tooth of ../shared/data (tomopy's tooth.h5: parallel beam, 181 views
over 180 degrees, 2 rows of 640 columns, Data Exchange), opened through the one door, its
centre of rotation searched, then reconstructed by FDK and by CGLS on a coarse grid.

Checks (exit 1 when one fails):
- the centre found by tomolab.open agrees to 1 column with an estimate made here in numpy
  from the two opposed views (0 and 180 degrees: one is the other mirrored about the axis);
- CGLS lowers the data residual |A x - y| at every iteration (CGLS minimises it over growing
  Krylov spaces: Hestenes & Stiefel 1952), and ends below FDK's residual on the same grid.

Usage: PYTHONPATH=build/python python3 examples/python/tooth_ct.py [tooth.h5]"""
import os
import sys
import time

import numpy as np

import tomolab as tl
from common import show

HERE = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '..', '..', '..', 'shared',
                                                           'data', 'tooth', 'tooth.h5')
ITERATIONS = 8
failed = []

t0 = time.monotonic()
ds = tl.open(path)                       # the centre is searched as `ct-recon --centre auto`
d = ds.data
y = np.asarray(d.projections, np.float64)            # (views, rows, columns) line integrals
print('%s: %s, %d views of %d x %d, centre searched: %.2f (%.1f s)'
      % (os.path.basename(path), ds.format, y.shape[0], y.shape[2], y.shape[1], ds.centre,
         time.monotonic() - t0))

# Opposed views: p_180(u) = p_0(2c - u). Cross-correlate p_0 with the mirrored p_180: the lag
# of the peak is 2c - (n - 1), refined to a fraction by a parabola through the peak.
n = y.shape[2]
a = y[0].mean(axis=0)
b = y[-1].mean(axis=0)[::-1]
a, b = a - a.mean(), b - b.mean()
xc = np.correlate(a, b, mode='full')               # index k: lag k - (n - 1)
k = int(np.argmax(xc))
frac = 0.5 * (xc[k - 1] - xc[k + 1]) / (xc[k - 1] - 2 * xc[k] + xc[k + 1])
lag = k + frac - (n - 1)                            # a(u) = b(u - lag), b(u) = p_180(n - 1 - u)
centre = (n - 1 + lag) / 2
print('opposed views: centre %.2f (numpy); the search: %.2f' % (centre, ds.centre))
if not abs(centre - ds.centre) <= 1.0:
    failed.append('centre %.2f vs %.2f' % (centre, ds.centre))

grid = tl.Grid.centred((160, 160, 2), (4.0, 4.0, 1.0))   # 4 mm pixels: a coarse, fast image
A = tl.ct_operator(d.geometry, grid)
data = A.gather(d.projections)                             # geometry order -> operator order
fdk = tl.fdk(d.geometry, grid, d.projections, filter='shepp-logan')
res_fdk = float(np.linalg.norm(A.forward(fdk) - data))

sv = tl.Solver(A, 'cgls', data=data, iterations=ITERATIONS)
res = [float(np.linalg.norm(data))]                        # x = 0
for it in range(ITERATIONS):
    sv.step()
    res.append(float(np.linalg.norm(A.forward(sv.image) - data)))
    print('CGLS iteration %d: |A x - y| = %.4f' % (it + 1, res[-1]))
print('FDK: |A x - y| = %.4f; |y| = %.4f' % (res_fdk, res[0]))
if not all(r1 < r0 for r0, r1 in zip(res, res[1:])):
    failed.append('CGLS residual not falling: %s' % res)
if not res[-1] < res_fdk:
    failed.append('CGLS residual %.4f not below FDK %.4f' % (res[-1], res_fdk))
print('%.1f s' % (time.monotonic() - t0))
show('tooth', {'FDK': fdk, 'CGLS': sv.image}, 'tooth_ct.png')
if failed:
    print('FAILED: ' + '; '.join(failed))
    sys.exit(1)
