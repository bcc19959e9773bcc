#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A regularised (MAP) reconstruction: BSREM with the relative difference prior against OSEM on
simulated NEMA-like data, compared where it matters, at equal contrast: the prior lowers the
background noise (coefficient of variation over the voxels whose 3 x 3 x 3 neighbourhood is all
warm background) by at least 20 % at the hot spheres' contrast it reaches, against OSEM's
curve (one point per sub-iteration) at that contrast. beta is relative (docs/recon.md): the
solver multiplies it by its prior_scale, so 0.03 is a moderate prior on any scanner. Every
algorithm and prior comes from the registry (tomolab.algorithms(), tomolab.priors()).

The last part runs OSL-style MAP EM with the device-resident arrays: the loop never leaves
the device (tomolab.Array, A.forward/adjoint into device arrays, tomolab.expr updates), the
prior's gradient (a quadratic one, in numpy here to keep the example short) is the only host
step.
Usage: PYTHONPATH=build/python python3 examples/python/regularised.py"""
import numpy as np

import tomolab as tl
from common import pet_case, show

print('algorithms:', ', '.join(a['name'] for a in tl.algorithms()))
print('priors:    ', ', '.join(p['name'] for p in tl.priors()))
_, grid, act, mu, lm = pet_case()
A = tl.pet_operator(lm, grid, projector='joseph', subsets=4, attenuation=mu)
truth = np.asarray(act.data).reshape(grid.shape)
# the warm background: the commonest activity, voxels whose 26 neighbours share it
values, counts = np.unique(truth[truth > 0], return_counts=True)
level = values[np.argmax(counts)]
background = truth == level
for axis in range(3):
    for k in (1, -1):
        background &= np.roll(truth == level, k, axis=axis)
hot = truth >= 0.95 * truth.max()


def measure(im):
    """(background CoV, hot / background mean ratio)."""
    b = im[background]
    return b.std() / b.mean(), im[hot].mean() / b.mean()


def curve(algorithm, iterations, **kw):
    sv = tl.Solver(A, algorithm, iterations=iterations, truth=act, **kw)
    points = []
    sv.run(callback=lambda p: points.append(measure(sv.image)))
    return sv, points


images = {}
osem, osem_curve = curve('osem', 5)
images['osem'] = osem.image
print('osem, %d sub-iterations: background CoV %.3f at contrast %.2f (truth %.2f)'
      % (len(osem_curve), *osem_curve[-1], truth[hot].mean() / level))
beta = 0.03
bsrem, bsrem_curve = curve('bsrem', 5, prior='rdp', beta=beta)
images['bsrem rdp %g' % beta] = bsrem.image
cov, contrast = bsrem_curve[-1]
# OSEM's background CoV at the contrast BSREM reached: its curve, interpolated (contrast rises
# with the sub-iterations until the noise takes over: the rising part only)
rising = [osem_curve[0]]
for p in osem_curve[1:]:
    if p[1] > rising[-1][1]:
        rising.append(p)
oc = np.interp(contrast, [p[1] for p in rising], [p[0] for p in rising])
print('bsrem rdp %g (prior scale %.4g): background CoV %.3f at contrast %.2f; OSEM at that '
      'contrast %.3f: %.0f %% lower, RMSE %.4f (OSEM %.4f)'
      % (beta, bsrem.prior_scale, cov, contrast, oc, 100 * (1 - cov / oc), bsrem.rmse, osem.rmse))
assert contrast <= max(p[1] for p in rising), 'BSREM beyond OSEM\'s contrast: no comparison'
assert cov <= 0.8 * oc, 'the prior should lower the background CoV by >= 20 %% at equal contrast'

# One-step-late MAP EM (Green 1990) with a device-resident loop:
#   x <- x / (s + beta dR/dx) * A^T (1 / A x)
A1 = tl.pet_operator(lm, grid, projector='joseph', attenuation=mu)
s = A1.sensitivity()
x0 = np.where(s > 0, np.float32(A1.shape[0] / s.sum(dtype=np.float64)), 0).astype(np.float32)
X, S = tl.Array(x0), tl.Array(s)
Q, C, G = tl.Array(A1.shape[0]), tl.Array(grid.n_voxels), tl.Array(grid.n_voxels)
beta = 0.02
for it in range(6):
    A1.forward(X, out=Q)
    tl.expr('q = select(q > 0, 1 / q, 0)', q=Q)
    A1.adjoint(Q, out=C)
    xh = X.numpy().reshape(grid.shape)
    grad = sum(2 * (xh - np.roll(xh, k, axis=a)) for a in range(3) for k in (1, -1))
    G.upload(grad)
    tl.expr('x = select(s + b*g > 0, x * c / (s + b*g), 0)', x=X, c=C, s=S, g=G, b=beta)
osl = X.numpy().reshape(grid.shape)
images['osl (device loop)'] = osl
print('osl quadratic %g: background CoV %.3f at contrast %.2f' % (beta, *measure(osl)))
show('MAP', images, 'regularised.png')
