# SPDX-License-Identifier: GPL-3.0-or-later
"""Reconstructions: MLEM written in numpy on Tomolab's operator against `tomolab-cli recon
--algo mlem` on the same file (1e-5 relative), the Solver's step/run/callback/profile/objective
over every registered algorithm that applies, and the GIL released while the device works."""
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import tomolab as tl


def numpy_mlem(A, iterations):
    """Shepp & Vardi's MLEM, x <- x / s * A^T (1 / A x), in numpy on Tomolab's projector, with
    the solver's start image (a constant where s > 0 so that sum(s x) is the event count)."""
    s = A.sensitivity()
    x = np.where(s > 0, np.float32(A.shape[0] / s.astype(np.float64).sum()), 0).astype(np.float32)
    for _ in range(iterations):
        q = A.forward(x)
        ratio = np.zeros_like(q)
        np.divide(1, q, out=ratio, where=q > 0)
        c = A.adjoint(ratio)
        x = np.where(s > 0, x * c / np.where(s > 0, s, 1), 0).astype(np.float32)
    return x


def test_numpy_mlem_equals_cli(ctx, listmode, grid, cli, tmp_path):
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    out = tmp_path / 'cli.nii'
    grid_arg = '%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm)
    subprocess.run([cli, 'recon', str(tlm), '--algo', 'mlem', '-n', '4', '--grid', grid_arg,
                    '-o', str(out), '--quiet'], check=True, timeout=300)
    ref = tl.load_image(str(out))
    assert ref.grid == grid
    # the same events (read back from the file, as the CLI read them)
    A = tl.pet_operator(tl.Listmode.load(str(tlm)), grid, ctx=ctx)
    x = numpy_mlem(A, 4)
    rel = np.linalg.norm(x - ref.data) / np.linalg.norm(ref.data)
    print('numpy MLEM vs tomolab-cli recon --algo mlem: relative difference %.3g' % rel)
    assert rel <= 1e-5, rel
    # and the module's own Solver gives the same image
    sv = tl.Solver(A, 'mlem', iterations=4)
    sv.run()
    assert np.linalg.norm(sv.image - ref.data) / np.linalg.norm(ref.data) <= 1e-5


def test_solver_run_callback_profile(ctx, listmode, grid, phantom):
    A = tl.pet_operator(listmode, grid, subsets=2, ctx=ctx)
    seen = []
    sv = tl.Solver(A, 'osem', iterations=2, truth=phantom[0], objective='subiteration')
    assert sv.run(callback=seen.append) == 4
    assert [p['sub_iterations'] for p in seen] == [1, 2, 3, 4]
    assert [(p['iteration'], p['subset']) for p in seen] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(np.isfinite(p['objective']) and np.isfinite(p['rmse']) for p in seen)
    assert sv.rmse == seen[-1]['rmse']
    prof = sv.profile
    assert prof and all(v['calls'] > 0 and v['gpu_ms'] >= 0 for v in prof.values())
    assert np.isfinite(sv.objective())
    img = sv.image
    assert img.shape == grid.shape and img.min() >= 0 and img.sum() > 0
    # a callback returning False stops the run
    sv2 = tl.Solver(A, 'osem', iterations=5)
    assert sv2.run(callback=lambda p: p['sub_iterations'] < 3) == 3
    # step() one sub-iteration at a time
    assert sv2.step()['sub_iterations'] == 4 and sv2.sub_iterations == 4


def test_start_subset(ctx, listmode, grid):
    """STIR's start subset: the sub-iterations run subsets 1, 0, 1, 0 and the image equals
    OSEM written in numpy in that order on the operator's subsets."""
    A = tl.pet_operator(listmode, grid, subsets=2, ctx=ctx)
    seen = []
    sv = tl.Solver(A, 'osem', iterations=2, start_subset=1)
    sv.run(callback=seen.append)
    assert [(p['iteration'], p['subset']) for p in seen] == [(1, 1), (1, 0), (2, 1), (2, 0)]
    s = A.sensitivity()
    x = np.where(s > 0, np.float32(A.shape[0] / s.astype(np.float64).sum()), 0).astype(np.float32)
    for k in [1, 0, 1, 0]:
        sk = A.sensitivity(subset=k)
        q = A.forward(x, subset=k)
        ratio = np.zeros_like(q)
        np.divide(1, q, out=ratio, where=q > 0)
        c = A.adjoint(ratio, subset=k)
        x = np.where(sk > 0, x * c / np.where(sk > 0, sk, 1), 0).astype(np.float32)
    rel = np.linalg.norm(sv.image - x) / np.linalg.norm(x)
    print('OSEM from subset 1 vs numpy: relative difference %.3g' % rel)
    assert rel <= 1e-5, rel
    with pytest.raises(ValueError, match='start subset 2; expected 0 to 1'):
        tl.Solver(A, 'osem', start_subset=2)


def test_every_registered_algorithm(ctx, listmode, grid):
    """Each algorithm of the registry (never a hard-coded list) runs on binned data with the
    options its flags ask for (a prior, a data vector, one subset) and gives a finite,
    non-zero image after one iteration."""
    A = tl.pet_operator(listmode, grid, binned=True, subsets=2, ctx=ctx)
    A1 = tl.pet_operator(listmode, grid, binned=True, ctx=ctx)
    names = [a['name'] for a in tl.algorithms()]
    assert 'mlem' in names and len(names) == len(set(names))
    prior = tl.priors()[0]['name']
    for a in tl.algorithms():
        op = A if 'subsets' in a['flags'] else A1
        kw = dict(prior=prior, beta=0.01) if 'prior' in a['flags'] else {}
        if 'emission' not in a['flags']:
            kw['data'] = op.counts()
        sv = tl.Solver(op, a['name'], iterations=1, **kw)
        sv.run()
        img = sv.image
        assert np.isfinite(img).all() and np.abs(img).sum() > 0, a['name']


def test_gil_released(ctx, listmode, grid):
    """Python threads run while the device reconstructs."""
    A = tl.pet_operator(listmode, grid, ctx=ctx)
    sv = tl.Solver(A, 'mlem', iterations=30, objective='never')
    ticks = []
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    t0 = time.monotonic()
    sv.run()
    t1 = time.monotonic()
    done.set()
    t.join()
    during = [v for v in ticks if t0 < v < t1]
    # the spinner ran throughout: at least a tick per 20 ms of the run
    assert len(during) >= (t1 - t0) / 0.02, (len(during), t1 - t0)
    # one operator, one call at a time: a second call while busy is refused, not raced
    assert A.forward(np.ones(grid.shape, np.float32)).shape == (A.shape[0],)


def test_projectors_from_registry(ctx, listmode, grid):
    """tomolab.projectors() is the registry (compute/tl-registry.h): the default first, names
    unique, and its flags honoured: every list-mode projector builds a list-mode operator,
    every other name is refused by it."""
    ps = tl.projectors()
    assert ps[0]['name'] == 'siddon'
    assert len({p['name'] for p in ps}) == len(ps) >= 4
    for p in ps:
        assert p['label'] and p['summary'] and p['flags']
        if 'listmode' in p['flags']:
            A = tl.pet_operator(listmode, grid, projector=p['name'], use_cache=False, ctx=ctx)
            assert A.forward(np.ones(grid.shape, np.float32)).sum() > 0
        else:
            with pytest.raises(tl.InvalidArgument):
                tl.pet_operator(listmode, grid, projector=p['name'], use_cache=False, ctx=ctx)
