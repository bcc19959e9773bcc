# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators through Python: adjointness <A x, y> = <x, A^T y> (in double, from float32
results) for every PET and CT configuration, the device-array path against the numpy path,
subsets against the whole vector, and the CT gather/scatter permutation."""
import numpy as np
import pytest

import tomolab as tl
from conftest import rng


def adjointness(A, subset=None):
    r = rng(3)
    n = A.subset_range(subset)[1] if subset is not None else A.shape[0]
    x = r.random(A.grid.shape, dtype=np.float32)
    y = r.random(n, dtype=np.float32)
    Ax = A.forward(x, subset=subset)
    Aty = A.adjoint(y, subset=subset)
    assert Ax.shape == (n,) and Ax.dtype == np.float32
    assert Aty.shape == A.grid.shape and Aty.dtype == np.float32
    lhs = np.dot(Ax.astype(np.float64), y)
    rhs = np.dot(x.ravel().astype(np.float64), Aty.ravel())
    assert lhs > 0
    assert abs(lhs - rhs) <= 1e-4 * abs(lhs), (lhs, rhs)
    return Ax, Aty


@pytest.mark.parametrize('kw', [
    dict(),
    dict(projector='joseph'),
    dict(subsets=3),
    dict(tof=True),
    dict(attenuation=True),
    dict(binned=True),
    dict(binned=True, subsets=2, projector='joseph'),
], ids=str)
def test_pet_adjoint(ctx, listmode, grid, phantom, kw):
    if kw.get('attenuation'):
        kw['attenuation'] = phantom[1]
    A = tl.pet_operator(listmode, grid, ctx=ctx, **kw)
    assert A.shape == ((listmode.n_events if not kw.get('binned') else len(listmode.histogram())),
                       grid.n_voxels)
    assert A.n_subsets == kw.get('subsets', 1)
    assert A.modality == 'pet' and A.is_listmode == (not kw.get('binned'))
    assert A.has_diag == ('attenuation' in kw)
    for s in ([None] + list(range(A.n_subsets))):
        adjointness(A, s)


def test_subsets_compose_the_whole(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, subsets=3, ctx=ctx)
    x = rng(4).random(grid.shape, dtype=np.float32)
    whole = A.forward(x)
    for s in range(3):
        first, n = A.subset_range(s)
        np.testing.assert_array_equal(A.forward(x, subset=s), whole[first:first + n])
    y = rng(5).random(A.shape[0], dtype=np.float32)
    parts = sum(A.adjoint(y[slice(*(lambda f, n: (f, f + n))(*A.subset_range(s)))], subset=s)
                .astype(np.float64) for s in range(3))
    np.testing.assert_allclose(parts, A.adjoint(y), rtol=1e-5, atol=1e-5 * np.abs(parts).max())


def test_device_arrays_match_numpy(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, ctx=ctx)
    x = rng(6).random(grid.shape, dtype=np.float32)
    assert A.last_seconds == 0
    A.forward(x)
    assert 0 < A.last_seconds < 60
    xd = tl.Array(x, ctx=ctx)
    yd = A.forward(xd)
    assert isinstance(yd, tl.Array) and len(yd) == A.shape[0]
    np.testing.assert_array_equal(yd.numpy(), A.forward(x))
    back = tl.Array(grid.n_voxels, ctx=ctx)
    assert A.adjoint(yd, out=back) is back
    np.testing.assert_allclose(back.numpy().reshape(grid.shape), A.adjoint(yd.numpy()),
                               rtol=1e-5, atol=1e-6)


def test_expr_and_reduce(ctx):
    r = rng(7)
    x, y, z = (r.random(1000, dtype=np.float32) + 0.5 for _ in range(3))
    X, Y, Z = (tl.Array(v, ctx=ctx) for v in (x, y, z))
    tl.expr('x = x*y + y/z', x=X, y=Y, z=Z)
    np.testing.assert_allclose(X.numpy(), x * y + y / z, rtol=1e-6)
    tl.expr('x = a*y', x=X, y=Y, a=2.5)
    np.testing.assert_allclose(X.numpy(), 2.5 * y, rtol=1e-6)
    assert tl.reduce('dot(x, y)', x=X, y=Y) == pytest.approx(np.dot(2.5 * y.astype(np.float64), y), rel=1e-5)
    assert tl.reduce('max(y)', y=Y) == pytest.approx(y.max())


@pytest.fixture(scope='module')
def ct_setup(ctx):
    geom = tl.CtGeometry.cone(24, 200.0, 400.0, 24, 8, 2.0, 2.0)
    g = tl.Grid.centred((16, 16, 6), (1.5, 1.5, 1.5))
    return geom, g


@pytest.mark.parametrize('method,subsets', [('joseph', 1), ('siddon', 3), ('raycast', 1)])
def test_ct_adjoint(ctx, ct_setup, method, subsets):
    geom, g = ct_setup
    A = tl.ct_operator(geom, g, method=method, subsets=subsets, ctx=ctx)
    assert A.shape == (24 * 24 * 8, g.n_voxels) and A.modality == 'ct'
    adjointness(A)
    if method != 'raycast':  # raycast's adjoint is matched to its forward only to interpolation
        adjointness(A, subsets - 1)


def test_ct_gather_scatter(ctx, ct_setup):
    geom, g = ct_setup
    A = tl.ct_operator(geom, g, subsets=4, ctx=ctx)
    proj = rng(8).random((24, 8, 24), dtype=np.float32)
    data = A.gather(proj)
    # subset 1 holds views 1, 5, 9, ... contiguous (tl-ct-operator.h's data order)
    first, n = A.subset_range(1)
    np.testing.assert_array_equal(data[first:first + n].reshape(-1, 8, 24), proj[1::4])
    np.testing.assert_array_equal(A.scatter(data), proj)


def test_inline_mode_same_results(ctx, listmode, grid):
    """set_interruptible(False) runs calls on the calling thread: same results."""
    A = tl.pet_operator(listmode, grid, ctx=ctx)
    x = rng(10).random(grid.shape, dtype=np.float32)
    y = A.forward(x)
    assert tl.set_interruptible(False) is True
    try:
        np.testing.assert_array_equal(A.forward(x), y)
        with pytest.raises(tl.FileError):
            tl.load_image('/nonexistent/x.nii')
    finally:
        assert tl.set_interruptible(True) is False


def test_edited_kernel(ctx, listmode, grid):
    """Context.set_kernel: the Joseph forward kernel with its projection scaled by 2 doubles
    A x exactly; a syntax error raises with its line and keeps the kernel in use; revert gives
    the built-in back (the Python side of the window's kernel editor)."""
    assert 'pet_forward' in tl.kernel_names()
    src = tl.kernel_source('pet_forward')
    A = tl.pet_operator(listmode, grid, ctx=ctx, projector='joseph')
    x = rng(5).random(A.grid.shape, dtype=np.float32)
    y0 = A.forward(x)
    orig = 'y = pet_atten(pc.tl_base + i, l) * pet_trace('
    assert orig in src
    twice = src.replace(orig, 'y = 2.0 * pet_atten(pc.tl_base + i, l) * pet_trace(', 1)
    try:
        ctx.set_kernel('pet_forward', twice)
        assert ctx.kernel_replaced('pet_forward')
        y2 = A.forward(x)
        np.testing.assert_array_equal(y2, 2 * A.forward(x) / 2)
        np.testing.assert_allclose(y2, 2 * y0, rtol=1e-6)
        bad = twice.replace('void main() {', 'void main() {\n  not_declared = 1;', 1)
        line = bad[:bad.index('not_declared')].count('\n') + 1
        with pytest.raises(Exception) as e:
            ctx.set_kernel('pet_forward', bad)
        assert '0:%d:' % line in str(e.value) and 'not_declared' in str(e.value)
        np.testing.assert_allclose(A.forward(x), 2 * y0, rtol=1e-6)
    finally:
        ctx.revert_kernel('pet_forward')
    assert not ctx.kernel_replaced('pet_forward')
    np.testing.assert_array_equal(A.forward(x), y0)


def test_solver_kernel(ctx, listmode, grid):
    """Solver.set_kernel: an edit of the kernel this run's EM pass calls (Siddon: pet_em)
    doubling its ratio a m / y doubles the one-iteration MLEM image (x0 / s * A^T (2 m / A x0));
    an edit of pet_back, which an MLEM run never calls, is refused naming what it runs, and
    nothing is installed (issue 32)."""
    A = tl.pet_operator(listmode, grid, ctx=ctx, projector='siddon')
    ref = tl.Solver(A, 'mlem', iterations=1)
    ref.run()
    src = tl.kernel_source('pet_em')
    orig = 'a * l.m / y, pc.dst'
    assert src.count(orig) == 1
    sv = tl.Solver(A, 'mlem', iterations=1)
    with pytest.raises(ValueError) as e:
        sv.set_kernel('pet_back', tl.kernel_source('pet_back'))
    assert 'pet_back is not called by this run' in str(e.value) and 'pet_em' in str(e.value)
    assert not ctx.kernel_replaced('pet_back')
    try:
        sv.set_kernel('pet_em', src.replace(orig, '2.0 * a * l.m / y, pc.dst', 1))
        assert ctx.kernel_replaced('pet_em')
        sv.run()
        np.testing.assert_allclose(sv.image, 2 * ref.image, rtol=0,
                                   atol=1e-5 * np.abs(ref.image).max())
    finally:
        ctx.revert_kernel('pet_em')
