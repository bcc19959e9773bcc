#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""CGLS for cone-beam CT written in numpy on Tomolab's CT operator, against Tomolab's cgls and
FDK. CGLS (Hestenes & Stiefel 1952) minimises |A x - y|^2:

    r = y - A x,  p = s = A^T r,  gamma = |s|^2
    repeat: q = A p; alpha = gamma / |q|^2; x += alpha p; r -= alpha q;
            s = A^T r; gamma' = |s|^2; p = s + (gamma' / gamma) p; gamma = gamma'

Usage: PYTHONPATH=build/python python3 examples/python/cgls_ct.py"""
import sys

import numpy as np

import tomolab as tl
from common import show

ITERATIONS = 8
# The 3-D Shepp-Logan phantom fills a cube (tl-ct-phantom.h); the detector covers the cube at
# every angle (80 mm at the centre of rotation). Values in mm^-1 (scale 0.02: water-like).
geom = tl.CtGeometry.cone(60, 300.0, 600.0, 80, 80, 2.0, 2.0)
grid = tl.Grid.centred((32, 32, 32), (2.0, 2.0, 2.0))
scan = tl.CtData.simulate(geom, 'shepp-logan', grid, scale=0.02)  # exact line integrals
A = tl.ct_operator(geom, grid)
y = A.gather(scan.projections)                            # geometry order -> the operator's order
print(A)

x = np.zeros(grid.shape, np.float32)
r = y.copy()
s = A.adjoint(r)
p = s.copy()
dot = lambda a, b: np.vdot(a.astype(np.float64), b.astype(np.float64))  # noqa: E731
gamma = dot(s, s)
for it in range(ITERATIONS):
    q = A.forward(p)
    alpha = gamma / dot(q, q)
    x += np.float32(alpha) * p
    r -= np.float32(alpha) * q
    s = A.adjoint(r)
    gamma, old = dot(s, s), gamma
    p = s + np.float32(gamma / old) * p
    print('iteration %2d: |A x - y| = %.5f' % (it + 1, np.linalg.norm(r)))

sv = tl.Solver(A, 'cgls', data=y, iterations=ITERATIONS)
sv.run()
ref = sv.image
rel = np.linalg.norm(x - ref) / np.linalg.norm(ref)
print('max |x| %.5f, max |tomolab| %.5f, elements that differ: %d'
      % (np.abs(x).max(), np.abs(ref).max(), (x != ref).sum()))
fdk = tl.fdk(geom, grid, scan.projections)
print('numpy CGLS vs Tomolab cgls: relative difference %.2e' % rel)
print('FDK vs CGLS: correlation %.3f' % np.corrcoef(fdk.ravel(), x.ravel())[0, 1])
show('CT', {'numpy CGLS': x, 'tomolab cgls': sv.image, 'FDK': fdk}, 'cgls_ct.png')
sys.exit(0 if rel < 1e-3 else 1)
