#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""List-mode MLEM written in numpy on Tomolab's projector, checked against Tomolab's own MLEM.

    x <- x / s * A^T (1 / (A x))        (Shepp & Vardi 1982; one datum per event, count 1)

A.forward and A.adjoint run on the Vulkan device; the ratio and the update are numpy. The
start image is the solver's: a constant where s > 0 with sum(s x) = the number of events.
Usage: PYTHONPATH=build/python python3 examples/python/mlem_listmode.py [SCAN.tlm]"""
import sys
import time

import numpy as np

import tomolab as tl
from common import pet_case, show

ITERATIONS = 5

if len(sys.argv) > 1:
    lm = tl.Listmode.load(sys.argv[1])
    grid = lm.scanner.default_grid()
else:
    _, grid, act, mu, lm = pet_case()
A = tl.pet_operator(lm, grid, projector='joseph')
print(A, 'on', tl.default_context().name)

t0 = time.monotonic()
s = A.sensitivity()                                   # column sums over every detectable pair
x = np.where(s > 0, np.float32(A.shape[0] / s.sum(dtype=np.float64)), 0).astype(np.float32)
for it in range(ITERATIONS):
    q = A.forward(x)                                  # device
    ratio = np.divide(1, q, out=np.zeros_like(q), where=q > 0)
    x = np.where(s > 0, x * A.adjoint(ratio) / np.where(s > 0, s, 1), 0).astype(np.float32)
    print('iteration %d: log-likelihood %.6e' % (it + 1, np.log(q[q > 0]).sum() - (s * x).sum()))
t_numpy = time.monotonic() - t0

t0 = time.monotonic()
sv = tl.Solver(A, 'mlem', iterations=ITERATIONS)
sv.run()
t_tomolab = time.monotonic() - t0
ref = sv.image
rel = np.linalg.norm(x - ref) / np.linalg.norm(ref)
print('numpy MLEM %.2f s, Tomolab MLEM %.2f s; relative difference %.2e' % (t_numpy, t_tomolab, rel))
print('Tomolab kernels:', ', '.join('%s %.1f ms' % (k, v['gpu_ms']) for k, v in sv.profile.items()))
show('list-mode MLEM', {'numpy': x, 'tomolab': ref}, 'mlem_listmode.png')
sys.exit(0 if rel < 1e-4 else 1)
