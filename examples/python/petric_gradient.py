#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A MAP algorithm of your own in numpy over Tomolab's operators and priors: preconditioned
gradient ascent on PETRIC's objective (Poisson log-likelihood + relative difference prior
with per-voxel kappa), Phi = L - beta R, with the preconditioner of PETRIC's winner (MaGeZ):
P = 1 / (s / x + beta H_R(x)), H_R the prior Hessian's diagonal; the step is halved until Phi
rises. The solver only provides the objective, its gradient and the prior's Hessian diagonal
(Solver.objective_at / gradient / prior_hessian_diag); it checks itself against Tomolab's own
L-BFGS-B ('lbfgsb') on the same objective.
Usage: PYTHONPATH=build/python python3 examples/python/petric_gradient.py"""
import sys

import numpy as np

import tomolab as tl
from common import pet_case

_, grid, act, mu, lm = pet_case(events=100_000)
A = tl.pet_operator(lm, grid, projector='joseph', attenuation=mu)
opts = dict(prior='rdp', beta=0.05, gamma=2.0, epsilon=1e-3)
sv = tl.Solver(A, 'lbfgsb', iterations=1, **opts)
osem = tl.Solver(tl.pet_operator(lm, grid, projector='joseph', attenuation=mu, subsets=4),
                 'osem', iterations=2)
osem.run()
x = osem.image
sv.set_kappa(sv.compute_kappa(x))        # PETRIC's kappa, from the OSEM image
s = sv.sensitivity
phi = phi0 = sv.objective_at(x)[0]
print('start (OSEM):  Phi = %.6f' % phi)
rising = True
for it in range(15):
    g = sv.gradient(x)
    h = sv.prior_hessian_diag(x)
    P, m = np.zeros_like(x), s > 0
    P[m] = 1 / (s[m] / np.maximum(x[m], 1e-3 * x.mean()) + opts['beta'] * h[m])
    t = 1.0
    while True:
        xn = np.maximum(x + t * P * g, 0).astype(np.float32)
        phin = sv.objective_at(xn)[0]
        if phin >= phi or t < 1e-4:
            break
        t /= 2
    rising &= phin >= phi
    x, phi = xn, phin
    print('iteration %2d: Phi = %.6f (step %g)' % (it + 1, phi, t))
sv.set_image(osem.image)
for _ in range(15):
    sv.step()
ref = sv.objective()
print('lbfgsb, 15 iterations from the same start: Phi = %.6f' % ref)
gap = (ref - phi) / (ref - phi0)
print('Phi rose at every iteration: %s; remaining gap to lbfgsb: %.3f of the start\'s' % (rising, gap))
sys.exit(0 if rising and 0 <= gap < 0.05 else 1)
