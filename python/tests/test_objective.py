# SPDX-License-Identifier: GPL-3.0-or-later
"""The objective calls of tomolab.Solver (the C API of compute/recon/tl-objective.c): Phi and
its parts agree, the subsets' gradient shares add up to the full gradient, the gradient and
the prior's Hessian diagonal match central differences along random directions, PETRIC's kappa
changes the objective and a negative one is refused, and seeded svrg repeats itself (to float
rounding: list-mode back projections add atomically)."""
import numpy as np
import pytest

import tomolab as tl

BETA = 0.1


@pytest.fixture(scope='module')
def solver(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, subsets=3, ctx=ctx)
    return tl.Solver(A, 'svrg', prior='rdp', beta=BETA, epsilon=1e-2, iterations=1)


@pytest.fixture(scope='module')
def image(solver):
    rng = np.random.default_rng(3)
    x = solver.image
    return (x * rng.uniform(0.5, 1.5, x.shape)).astype(np.float32)


def test_parts_and_subsets(solver, image):
    phi, lik, R = solver.objective_at(image)
    assert R > 0 and abs(phi - (lik - BETA * R)) <= 1e-9 * abs(phi)
    g = solver.gradient(image).astype(np.float64)
    parts = sum(solver.gradient(image, subset=k).astype(np.float64) for k in range(3))
    assert np.abs(parts - g).max() <= 1e-4 * np.abs(g).max()
    d = solver.gradient(image, data_only=True) - BETA * solver.prior_gradient(image)
    assert np.abs(d - g).max() <= 1e-4 * np.abs(g).max()


def test_directional_differences(solver, image):
    # float objective: a direction and a step large enough for the difference to be resolved
    rng = np.random.default_rng(5)
    d = (rng.standard_normal(image.shape) * image * (solver.sensitivity > 0)).astype(np.float32)
    h = 1e-2
    fd = (solver.objective_at(image + h * d)[0] - solver.objective_at(image - h * d)[0]) / (2 * h)
    gd = float(np.dot(solver.gradient(image).ravel().astype(np.float64), d.ravel()))
    assert abs(fd - gd) <= 1e-2 * abs(gd), (fd, gd)
    # the Hessian diagonal: d/dt of the gradient along e_j, for the largest entries
    hd = solver.prior_hessian_diag(image)
    for j in np.argsort(hd.ravel())[-3:]:
        e = np.zeros(image.size, np.float32)
        e[j] = 1e-2 * image.ravel()[j]
        e = e.reshape(image.shape)
        gp, gm = solver.prior_gradient(image + e), solver.prior_gradient(image - e)
        fdj = (gp.ravel()[j] - gm.ravel()[j]) / (2 * e.ravel()[j])
        assert abs(fdj - hd.ravel()[j]) <= 2e-2 * hd.ravel()[j], (j, fdj, hd.ravel()[j])


def test_kappa(solver, image):
    k = solver.compute_kappa(image)
    assert np.isfinite(k).all() and (k >= 0).all() and k.max() > 0
    before = solver.objective_at(image)[2]
    solver.set_kappa(k)
    after = solver.objective_at(image)[2]
    solver.set_kappa(None)
    assert after != before and solver.objective_at(image)[2] == pytest.approx(before, rel=1e-6)
    with pytest.raises(Exception, match='kappa'):
        solver.set_kappa(-1 - k)


def test_seeded_svrg_repeats(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, subsets=4, ctx=ctx)
    images = []
    for seed in (3, 3, 4):
        sv = tl.Solver(A, 'svrg', prior='rdp', beta=BETA, iterations=2, seed=seed)
        sv.run()
        images.append(sv.image)
    # the list-mode back projection adds with float atomics, in no fixed order: the same seed
    # repeats to float rounding here (bit for bit on the CSR operator, test recon-petric)
    same = np.abs(images[0] - images[1]).max() / images[0].max()
    other = np.abs(images[0] - images[2]).max() / images[0].max()
    assert same <= 1e-5 and other > 1e-3, (same, other)
