# SPDX-License-Identifier: GPL-3.0-or-later
"""Operator algebra and operators from arrays (tomolab/linop.py, python/src/tlpy-algebra.c,
tlpy-lines.c; docs/python.md "Operator algebra"):

- (A + 2B).T @ y and the other sums, scalings and products against the same composition
  evaluated by hand from A.forward / A.adjoint, on numpy and on device arrays;
- scipy's lsqr on A.aslinearoperator() against the library's CGLS;
- the end-point operator against the list-mode operator on the same lines (and TOF bins);
- shaped CT data (views, rows, columns) both ways, with and without subsets;
- adjointness <y, A x> = <A^T y, x> of every new operator and of compositions;
- csr_operator against scipy's own product; ct_geometry from angles against the orbit's
  matrices; records() against the list mode's events."""
import math
import warnings

import numpy as np
import pytest

import tomolab as tl
from conftest import rng

C_MM_PER_PS = 0.299792458  # compute/pet/scanner/tl-scanner.c


def dot(a, b):
    return float(np.dot(np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()))


def assert_adjoint(A, seed=3):
    """<y, A x> = <A^T y, x> through the algebra (A @ x, A.T @ y), in double of float32; y
    shaped as A @ x returns it (CT: geometry order)."""
    r = rng(seed)
    x = r.random(A.shape[1], dtype=np.float32)
    y = r.random(A.data_shape, dtype=np.float32)
    lhs, rhs = dot(y, (A @ x)), dot(A.T @ y, x)
    assert lhs > 0
    assert abs(lhs - rhs) <= 1e-4 * abs(lhs), (lhs, rhs)


def rel(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.fixture(scope='module')
def ct_pair(ctx):
    """Two CT operators of one geometry and grid (Joseph and Siddon), 3 subsets."""
    grid = tl.Grid.centred((12, 12, 2), (1.0, 1.0, 1.0))
    geom = tl.CtGeometry.parallel(10, 18, 2, 1.0, 1.0)
    A = tl.ct_operator(geom, grid, method='joseph', subsets=3, ctx=ctx)
    B = tl.ct_operator(geom, grid, method='siddon', subsets=3, ctx=ctx)
    return A, B


def test_sum_adjoint_equals_composition_by_hand(ct_pair):
    A, B = ct_pair
    r = rng(11)
    y = r.random(A.data_shape, dtype=np.float32)      # shaped: (views, rows, columns)
    got = (A + 2 * B).T @ y
    yd = A.gather(y)                                   # the same data in data order
    want = A.adjoint(yd).astype(np.float64) + 2 * B.adjoint(yd).astype(np.float64)
    assert got.shape == A.grid.shape and got.dtype == np.float32
    assert rel(got, want) <= 1e-6, rel(got, want)
    # A.H is A.T; y in data order (1-D) gives the same
    np.testing.assert_allclose((A + 2 * B).H @ yd, got, rtol=1e-6, atol=1e-6 * np.abs(got).max())
    # the device path: an Array in, an Array out, never the host between the operators
    Y = tl.Array(yd)
    G = (A + 2 * B).T @ Y
    assert isinstance(G, tl.Array)
    assert rel(G.numpy(), want) <= 1e-6


def test_other_algebra_by_hand(ct_pair):
    A, B = ct_pair
    x = rng(12).random(A.grid.shape, dtype=np.float32)
    fa, fb = A.forward(x).astype(np.float64), B.forward(x).astype(np.float64)
    cases = {
        'A - B': (A - B, fa - fb),
        '-A': (-A, -fa),
        'A / 4': (A / 4, fa / 4),
        'np.float32(3) * A': (np.float32(3) * A, 3 * fa),
        '0.5 * (A + B) - A * 2': (0.5 * (A + B) - A * 2, 0.5 * (fa + fb) - 2 * fa),
    }
    for name, (op, want) in cases.items():
        assert isinstance(op, tl.LinearOperator), name
        got = op(x)
        assert got.shape == A.data_shape, name
        np.testing.assert_allclose(A.gather(got), want, rtol=1e-5,
                                   atol=1e-6 * np.abs(want).max(), err_msg=name)
    # compositions: the normal operator A^T A, and (B.T @ A).T = A.T @ B
    want = A.adjoint(A.forward(x)).astype(np.float64)
    got = (A.T @ A) @ x
    assert rel(got, want) <= 1e-6
    y = rng(13).random(A.shape[1], dtype=np.float32)
    want = A.adjoint(B.forward(y))
    assert rel((B.T @ A).T @ y, want) <= 1e-6
    assert rel((A.T * B)(y), want) <= 1e-6     # scipy's A * B = composition
    assert (A.T).T is not None and isinstance((A.T).T, tl.LinearOperator)
    with pytest.raises(ValueError, match='equal shapes'):
        A + A.T
    with pytest.raises(ValueError, match='product of operators'):
        A @ B
    with pytest.raises(TypeError):
        A + 1.0
    with pytest.raises(ValueError, match='elements'):
        A @ np.zeros(5, np.float32)


def test_adjointness_of_compositions(ct_pair, ctx, listmode, grid):
    A, B = ct_pair
    assert_adjoint(A)
    assert_adjoint(A + 2 * B)
    assert_adjoint(A.T @ B)
    P = tl.pet_operator(listmode, grid, subsets=2, projector='joseph', ctx=ctx)
    assert_adjoint(P)
    assert_adjoint(3 * P - P)


def test_shaped_ct_round_trip(ctx):
    grid = tl.Grid.centred((10, 10, 3), (1.0, 1.0, 1.0))
    geom = tl.CtGeometry.parallel(9, 14, 3, 1.0, 1.0)
    x = rng(21).random(grid.shape, dtype=np.float32)
    for subsets in (1, 3):
        A = tl.ct_operator(geom, grid, subsets=subsets, ctx=ctx)
        assert A.data_shape == (9, 3, 14)
        p = A @ x
        assert p.shape == (9, 3, 14)
        # geometry order is the scatter of the data order (docs/python.md)
        np.testing.assert_array_equal(p, A.scatter(A.forward(x)))
        if subsets == 1:   # one subset: data order is geometry order
            np.testing.assert_array_equal(p.reshape(-1), A.forward(x))
        # shaped in, image out, and the 1-D data order gives the same
        np.testing.assert_allclose(A.T @ p, A.adjoint(A.gather(p)), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(A.T @ A.gather(p), A.T @ p, rtol=1e-6, atol=1e-6)
        # a CtData's projections go in and come out in the same shape and order
        d = tl.CtData(geom, p)
        np.testing.assert_array_equal(d.projections, p)
        np.testing.assert_array_equal(A.scatter(A.gather(d.projections)), p)


def test_lsqr_converges_to_cgls(ctx):
    import scipy.sparse.linalg as scipy_linalg  # required: a "done when" check of issue 30
    grid = tl.Grid.centred((10, 10, 1), (1.0, 1.0, 1.0))
    A = tl.ct_projector(np.linspace(0, 180, 24, endpoint=False), 16, 1, 1.0, grid, ctx=ctx)
    truth, _ = tl.phantom('cylinder', grid, radius_mm=4)
    y = A @ truth + 0.01 * rng(31).standard_normal(A.data_shape).astype(np.float32)
    # 150 iterations: 5e-7 from numpy's lstsq on the dense matrix (60 left 5e-3)
    sv = tl.Solver(A, 'cgls', data=A.gather(y), iterations=150)
    sv.run()
    cgls = sv.image.astype(np.float64)
    L = A.aslinearoperator()
    assert L.shape == A.shape
    x = scipy_linalg.lsqr(L, A.gather(y).astype(np.float64), atol=1e-12, btol=1e-12,
                          iter_lim=200)[0]
    assert rel(x, cgls) <= 1e-4, rel(x, cgls)
    # the adjoint through scipy too
    v = rng(32).random(A.shape[0])
    np.testing.assert_allclose(L.rmatvec(v), A.adjoint(v.astype(np.float32)).ravel(),
                               rtol=1e-6, atol=1e-6 * np.abs(L.rmatvec(v)).max())


def lines_of(A, scanner):
    rec = A.records()
    c = np.asarray(scanner.crystals, np.float32)
    return rec, c[rec['a'], :3], c[rec['b'], :3]


@pytest.mark.parametrize('projector', ['joseph', 'siddon'])
@pytest.mark.parametrize('tof', [False, True], ids=['notof', 'tof'])
def test_end_points_equal_listmode(ctx, listmode, grid, projector, tof):
    A = tl.pet_operator(listmode, grid, projector=projector, tof=tof, ctx=ctx)
    rec, start, end = lines_of(A, listmode.scanner)
    assert rec.dtype == tl.EVENT_DTYPE and len(rec) == A.shape[0]
    s2, e2 = tl.lor_end_points(listmode.scanner, np.column_stack([rec['a'], rec['b']]))
    np.testing.assert_array_equal(s2, start)
    np.testing.assert_array_equal(e2, end)
    kw = {}
    if tof:
        s = listmode.scanner
        kw = dict(tof_bin=rec['tof_bin'], tof_bin_mm=s.tof_bin_mm,
                  tof_sigma_mm=0.5 * C_MM_PER_PS * s.tof_fwhm_ps / (2 * math.sqrt(2 * math.log(2))))
        assert np.any(rec['tof_bin'] != 0)
    L = tl.line_operator(start, end, grid, projector=projector, ctx=ctx, **kw)
    assert L.shape == A.shape and L.modality == 'pet'
    x = rng(41).random(grid.shape, dtype=np.float32)
    fa, fl = A @ x, L @ x
    assert np.abs(fa).max() > 0
    assert np.abs(fl - fa).max() <= 1e-6 * np.abs(fa).max()
    y = rng(42).random(A.shape[0], dtype=np.float32)
    ba, bl = A.T @ y, L.T @ y
    # back projections add with float atomics in a run-to-run order: the same sums, rounded
    # differently (measured over 8 runs: Joseph relative L2 <= 4e-7, one voxel <= 1.4e-6 of
    # its value; Siddon equal)
    assert rel(bl, ba) <= 1e-6, rel(bl, ba)
    assert_adjoint(L)
    if tof:  # the bins matter: mirrored bins (measured: 29 % / 39 % of the max) differ
        kw['tof_bin'] = -rec['tof_bin']
        M = tl.line_operator(start, end, grid, projector=projector, ctx=ctx, **kw)
        assert np.abs(M @ x - fa).max() > 0.05 * np.abs(fa).max()


def test_line_operator_subsets_and_order(ctx, grid):
    """Lines through the grid in the caller's order; subsets are contiguous blocks."""
    r = rng(51)
    n = 500
    phi = r.uniform(0, np.pi, n)
    z = r.uniform(-6, 6, (n, 2))
    d = np.stack([np.cos(phi), np.sin(phi)], 1) * 40
    start = np.column_stack([d, z[:, 0]]).astype(np.float32)
    end = np.column_stack([-d, z[:, 1]]).astype(np.float32)
    L = tl.line_operator(start, end, grid, subsets=4, ctx=ctx)
    assert L.n_subsets == 4 and [L.subset_range(s) for s in range(4)] == \
        [(0, 125), (125, 125), (250, 125), (375, 125)]
    x = np.ones(grid.shape, np.float32)
    y = L @ x
    # each line's forward projection of ones: its chord length inside the grid's box
    one = tl.line_operator(start[7:8], end[7:8], grid, ctx=ctx) @ x
    assert abs(y[7] - one[0]) <= 1e-6 * one[0]
    np.testing.assert_array_equal(L.forward(x, subset=1), y[125:250])
    assert_adjoint(L)


def test_line_operator_errors(ctx, grid):
    s = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match=r'shape \(n, 3\)'):
        tl.line_operator(np.zeros((3, 2)), s, grid)
    with pytest.raises(ValueError, match='end has 2 lines; expected 3'):
        tl.line_operator(s, s[:2], grid)
    with pytest.raises(ValueError, match='not finite'):
        tl.line_operator(s, np.full((3, 3), np.nan), grid)
    with pytest.raises(ValueError, match='tof_bin has 2 elements'):
        tl.line_operator(s, s + 1, grid, tof_bin=[0, 1], tof_sigma_mm=10, tof_bin_mm=20)
    with pytest.raises(ValueError, match='tof_sigma_mm 0'):
        tl.line_operator(s, s + 1, grid, tof_bin=[0, 1, 2])
    with pytest.raises(tl.InvalidArgument, match='4 subsets'):
        tl.line_operator(s, s + 1, grid, subsets=4)
    with pytest.raises(tl.InvalidArgument):
        tl.line_operator(s, s + 1, grid, projector='nope')


def test_csr_operator(ctx):
    sparse = pytest.importorskip('scipy.sparse')
    r = rng(61)
    M = sparse.random(40, 30, density=0.2, random_state=5, format='coo', dtype=np.float32)
    x = r.random(30, dtype=np.float32)
    y = r.random(40, dtype=np.float32)
    want_f = M.toarray().astype(np.float64) @ x
    want_b = M.toarray().astype(np.float64).T @ y
    for make in (lambda: tl.csr_operator(M, ctx=ctx),
                 lambda: tl.csr_operator(M.tocsr(), subsets=3, ctx=ctx),
                 lambda: tl.csr_operator((M.tocsr().indptr, M.tocsr().indices, M.tocsr().data,
                                          30), ctx=ctx),
                 lambda: tl.csr_operator(M.toarray(), tl.Grid.centred((5, 3, 2), (1, 1, 1)),
                                         ctx=ctx)):
        C = make()
        assert C.shape == (40, 30) and C.name == 'csr'
        np.testing.assert_allclose((C @ x).ravel(), want_f, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose((C.T @ y).ravel(), want_b, rtol=1e-5, atol=1e-6)
        assert_adjoint(C)
    with pytest.raises(ValueError, match='indices'):
        tl.csr_operator((np.array([0, 1]), np.array([30]), np.array([1.0])),
                        tl.Grid.centred((30, 1, 1), (1, 1, 1)))
    with pytest.raises(ValueError, match='40 columns'):
        tl.csr_operator(np.ones((2, 40)), tl.Grid.centred((30, 1, 1), (1, 1, 1)))


@pytest.mark.parametrize('beam', ['parallel', 'cone'])
def test_ct_from_angles(ctx, beam):
    """Angles equally spaced over the orbit give the orbit constructor's matrices; any angles
    give an adjoint operator whose views are the orbit's views at those angles."""
    n, du, dv = 12, 20, 4
    if beam == 'parallel':
        ref = tl.CtGeometry.parallel(n, du, dv, 1.5, 2.0, offset_u_mm=0.5, offset_v_mm=-1.0)
        angles = np.arange(n) * 180.0 / n
        kw = {}
    else:
        ref = tl.CtGeometry.cone(n, 300.0, 500.0, du, dv, 1.5, 2.0, offset_u_mm=0.5,
                                 offset_v_mm=-1.0)
        angles = np.arange(n) * 360.0 / n
        kw = dict(sid_mm=300.0, sdd_mm=500.0)
    g = tl.ct_geometry(angles, du, dv, 1.5, 2.0, beam=beam, offset_u_mm=0.5, offset_v_mm=-1.0,
                       **kw)
    assert g.beam == ref.beam and g.n_views == n and g.detector == ref.detector
    np.testing.assert_allclose(np.asarray(g.matrices), np.asarray(ref.matrices), rtol=1e-9,
                               atol=1e-9)
    grid = tl.Grid.centred((8, 8, 3), (1.0, 1.0, 1.0))
    A = tl.ct_projector([3.0, 47.5, 91.0, 170.0], du, dv, 1.5, grid, 2.0, beam=beam,
                        subsets=2, ctx=ctx, **kw)
    assert A.data_shape == (4, dv, du)
    assert_adjoint(A)
    x = rng(71).random(grid.shape, dtype=np.float32)
    # view k of the operator equals a one-view scan at that angle
    B = tl.ct_projector([91.0], du, dv, 1.5, grid, 2.0, beam=beam, ctx=ctx, **kw)
    np.testing.assert_allclose((A @ x)[2], (B @ x)[0], rtol=1e-6, atol=1e-6)


def test_records_are_the_events(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, subsets=3, ctx=ctx)
    rec = A.records()
    ev = listmode.events
    # each pair in the operator's one orientation (a pair's two directions may project
    # differently on a voxel plane), its TOF bin mirrored when swapped
    lo = lambda e: np.minimum(e['a'], e['b']).astype(np.int64)  # noqa: E731
    hi = lambda e: np.maximum(e['a'], e['b']).astype(np.int64)  # noqa: E731
    key = lambda e: np.sort(lo(e) << 32 | hi(e))  # noqa: E731
    np.testing.assert_array_equal(key(rec), key(ev))
    tof = lambda e: np.sort((lo(e) << 32 | hi(e)) * 1024 +  # noqa: E731
                            np.where(e['a'] < e['b'], 1, -1) * e['tof_bin'].astype(np.int64) + 512)
    np.testing.assert_array_equal(tof(rec), tof(ev))
    B = tl.pet_operator(listmode, grid, binned=True, ctx=ctx)
    bins = B.records()
    # a sinogram's lines: the binned operator equals the end-point operator of its pairs
    # with the counts as data (forward exact; back projections up to the atomics' rounding)
    L = tl.line_operator(*tl.lor_end_points(listmode.scanner, bins), grid, projector='siddon',
                         ctx=ctx)
    x = rng(91).random(grid.shape, dtype=np.float32)
    np.testing.assert_array_equal(L @ x, B @ x)
    assert rel(L.T @ bins['count'], B.T @ bins['count']) <= 1e-6
    with pytest.raises(ValueError, match='crystals 0 .. 255'):
        tl.lor_end_points(listmode.scanner, [[0, 256]])
    assert bins.dtype == tl.BIN_DTYPE and len(bins) == B.shape[0]
    assert A.data_shape == (A.shape[0],) and B.data_shape == (B.shape[0],)
    assert float(bins['count'].sum()) == listmode.n_events
    C = tl.ct_operator(tl.CtGeometry.parallel(4, 8, 1, 1.0, 1.0), grid, ctx=ctx)
    with pytest.raises(TypeError, match='not a PET'):
        C.records()


def test_array_api_inputs(ctx, ct_pair):
    A, _ = ct_pair
    x = rng(81).random(A.grid.shape, dtype=np.float32)
    want = A @ x

    class OnlyDlpack:  # an array of another library, reachable only through DLPack
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, stream=None):
            return self._a.__dlpack__()

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    np.testing.assert_array_equal(A @ OnlyDlpack(x), want)
    np.testing.assert_array_equal(A @ x.astype(np.float64), want)
    np.testing.assert_array_equal(A @ x.tolist(), want)
    with warnings.catch_warnings():  # numpy 1.x: "The numpy.array_api submodule is still
        warnings.simplefilter('ignore')  # experimental"
        try:
            import numpy.array_api as xp
        except ImportError:
            xp = None
    if xp is not None:  # the array API's reference namespace (numpy 1.22 .. 1.26)
        np.testing.assert_array_equal(A @ xp.asarray(x), want)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        np.testing.assert_array_equal(A @ torch.from_numpy(x), want)


def test_operators_of_two_contexts(ctx):
    """An expression over two contexts is evaluated through the host, and still right."""
    grid = tl.Grid.centred((8, 8, 2), (1.0, 1.0, 1.0))
    geom = tl.CtGeometry.parallel(6, 12, 2, 1.0, 1.0)
    other = tl.Context()
    A = tl.ct_operator(geom, grid, ctx=ctx)
    B = tl.ct_operator(geom, grid, ctx=other)
    assert (A + B).ctx is None and (A + A).ctx is ctx
    x = rng(95).random(grid.shape, dtype=np.float32)
    np.testing.assert_allclose((A - 3 * B) @ x, -2 * (A @ x), rtol=1e-5, atol=1e-6)
    assert other.validation_messages == 0
