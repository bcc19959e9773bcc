# SPDX-License-Identifier: GPL-3.0-or-later
"""Operator algebra and operators from plain arrays (docs/python.md, "Operator algebra").

Every tomolab.Operator (and every expression made from them) is a linear map that Python
users can write as they do elsewhere::

    y = A @ x            # = A(x): data shaped as A.data_shape (CT: (views, rows, columns))
    z = A.T @ y          # the adjoint, an image (nz, ny, nx); A.H is the same (real operators)
    B = A + 2 * C - D    # lazy: nothing runs until B is applied
    N = A.T @ A          # composition
    L = A.aslinearoperator()   # scipy.sparse.linalg.LinearOperator (lsqr, cg, eigsh...)

Evaluation is lazy and stays on the device: applied to a numpy array, an expression whose
operators share one Context uploads x once, runs every projection, sum and scaling on the
device (tomolab.Array intermediates, sums and scalings as fused tomolab.expr dispatches) and
downloads the result once; applied to a tomolab.Array it returns a tomolab.Array and never
touches the host. The C type hands its slots to the functions at the end of this file
(python/src/tlpy-algebra.c).

Data order: a 1-D vector of an operator's data size is in the operator's own data order
(subset after subset, recon/tl-operator.h: what A.forward returns); an array of the shape
A.data_shape is in geometry order and is reordered (CT with subsets: A.gather / A.scatter).
Results are always shaped. Inputs may be numpy arrays or anything numpy can take (__array__,
__dlpack__: other array libraries are converted through numpy)."""
import numbers

import numpy as np

from . import _tomolab


# ---- the two sides of an operator ----

class _Space:
    """One side of a leaf operator: its size, the numpy shape users see, and (CT data with
    subsets) the reordering between that shape and the operator's data order."""

    def __init__(self, size, shape, op=None, grid=None):
        self.size, self.shape, self._op = int(size), tuple(int(v) for v in shape), op
        self.grid = grid  # image sides: a tomolab.Image input must be on it

    def internal(self, x):
        """x (numpy, this side's shape or 1-D in data order) -> 1-D float32 in data order."""
        x = np.asarray(x, dtype=np.float32)
        if x.size != self.size:
            raise ValueError(f"input has {x.size} elements (shape {x.shape}); expected "
                             f"{self.size} (shape {self.shape})")
        if self._op is not None and x.ndim > 1:
            return self._op.gather(x)
        return np.ascontiguousarray(x).reshape(-1)

    def shaped(self, y):
        """1-D in data order -> this side's shape."""
        if self._op is not None:
            return self._op.scatter(y)
        return np.asarray(y).reshape(self.shape)


def _spaces(op):
    n_data, n_vox = op.shape
    image = _Space(n_vox, op.grid.shape, grid=op.grid)
    ds = op.data_shape
    data = _Space(n_data, ds, op if len(ds) > 1 and op.n_subsets > 1 else None)
    return image, data


# ---- lazy expressions ----

def _is_array(x):
    return isinstance(x, _tomolab.Array)


def _add(u, v, cv=1.0):
    """u + cv v; u is overwritten when it is a device array (it is always a temporary)."""
    if _is_array(u):
        _tomolab.expr("u = u + c * v", u=u, v=v, c=float(cv))
        return u
    return u + np.float32(cv) * v


def _scale(c, u):
    if _is_array(u):
        _tomolab.expr("u = c * u", u=u, c=float(c))
        return u
    return np.float32(c) * u


class LinearOperator:
    """A lazy linear map between an image and a data vector (or any two such spaces). Made by
    tomolab's operator constructors and the algebra (+, -, scalar *, /, @, .T); never
    evaluated before it is applied."""

    __array_ufunc__ = None  # numpy defers to us: np.float32(2) * A is our __rmul__

    # subclasses set domain, range (_Space) and implement _eval(x, adjoint), _leaves()

    @property
    def shape(self):
        """(output size, input size), flat."""
        return (self.range.size, self.domain.size)

    @property
    def data_shape(self):
        return self.range.shape

    @property
    def ctx(self):
        """The Context every operator of the expression lives on, or None when they differ."""
        ctxs = {id(op.ctx): op.ctx for op in self._leaves()}
        return next(iter(ctxs.values())) if len(ctxs) == 1 else None

    # -- algebra --
    @property
    def T(self):  # noqa: N802  (numpy's and scipy's name)
        return _Adjoint(self)

    H = T

    def __add__(self, other):
        return _binary('add', self, other)

    def __radd__(self, other):
        return _binary('add', other, self)

    def __sub__(self, other):
        return _binary('sub', self, other)

    def __rsub__(self, other):
        return _binary('sub', other, self)

    def __mul__(self, other):
        return _binary('mul', self, other)

    def __rmul__(self, other):
        return _binary('mul', other, self)

    def __truediv__(self, other):
        return _binary('div', self, other)

    def __neg__(self):
        return _Scaled(-1.0, self)

    def __matmul__(self, other):
        return _binary('matmul', self, other)

    def __rmatmul__(self, other):
        return _binary('matmul', other, self)

    def __call__(self, x):
        return _apply(self, x)

    def adjoint(self, y):
        """A^T y (shaped as the domain)."""
        return _apply(_Adjoint(self), y)

    def aslinearoperator(self):
        return _aslinearoperator(self)

    def __repr__(self):
        return f"<tomolab.LinearOperator {self._text()}: {self.shape[0]} x {self.shape[1]}>"


class _Leaf(LinearOperator):
    def __init__(self, op):
        self.op = op
        self.domain, self.range = _spaces(op)

    def _leaves(self):
        return [self.op]

    def _eval(self, x, adjoint):
        if adjoint:
            y = self.op.adjoint(x)
        else:
            y = self.op.forward(x)
        return y if _is_array(y) else y.reshape(-1)

    def _text(self):
        return self.op.label


class _Adjoint(LinearOperator):
    def __new__(cls, inner):
        if isinstance(inner, _Adjoint):  # (A^T)^T = A
            return inner.inner
        return super().__new__(cls)

    def __init__(self, inner):
        self.inner = _wrap(inner)
        self.domain, self.range = self.inner.range, self.inner.domain

    def _leaves(self):
        return self.inner._leaves()

    def _eval(self, x, adjoint):
        return self.inner._eval(x, not adjoint)

    def _text(self):
        return f"({self.inner._text()}).T"


class _Sum(LinearOperator):
    def __init__(self, a, b, cb):
        if a.shape != b.shape:
            raise ValueError(f"sum of operators of shapes {a.shape} and {b.shape}: expected "
                             "equal shapes")
        self.a, self.b, self.cb = a, b, cb
        self.domain, self.range = a.domain, a.range

    def _leaves(self):
        return self.a._leaves() + self.b._leaves()

    def _eval(self, x, adjoint):
        return _add(self.a._eval(x, adjoint), self.b._eval(x, adjoint), self.cb)

    def _text(self):
        return f"{self.a._text()} {'+' if self.cb > 0 else '-'} {self.b._text()}"


class _Scaled(LinearOperator):
    def __init__(self, c, inner):
        self.c, self.inner = float(c), inner
        self.domain, self.range = inner.domain, inner.range

    def _leaves(self):
        return self.inner._leaves()

    def _eval(self, x, adjoint):
        return _scale(self.c, self.inner._eval(x, adjoint))

    def _text(self):
        return f"{self.c:g} * ({self.inner._text()})"


class _Product(LinearOperator):
    """a @ b: b first."""

    def __init__(self, a, b):
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"product of operators of shapes {a.shape} @ {b.shape}: the left "
                             f"takes {a.shape[1]} values, the right gives {b.shape[0]}")
        self.a, self.b = a, b
        self.domain, self.range = b.domain, a.range

    def _leaves(self):
        return self.a._leaves() + self.b._leaves()

    def _eval(self, x, adjoint):
        if adjoint:
            return self.b._eval(self.a._eval(x, True), True)
        return self.a._eval(self.b._eval(x, False), False)

    def _text(self):
        return f"({self.a._text()}) @ ({self.b._text()})"


def _wrap(a):
    if isinstance(a, LinearOperator):
        return a
    if isinstance(a, _tomolab.Operator):
        return _Leaf(a)
    return None


def _is_operand(x):
    return isinstance(x, (LinearOperator, _tomolab.Operator))


def _binary(what, a, b):
    """The number protocol of Operator and LinearOperator: NotImplemented where it does not
    apply, so Python tries the other operand or raises TypeError."""
    if what in ('add', 'sub'):
        wa, wb = _wrap(a), _wrap(b)
        if wa is None or wb is None:
            return NotImplemented
        return _Sum(wa, wb, 1.0 if what == 'add' else -1.0)
    if what in ('mul', 'div'):
        if _is_operand(a) and isinstance(b, numbers.Real) and not isinstance(b, bool):
            return _Scaled(float(b) if what == 'mul' else 1.0 / float(b), _wrap(a))
        if what == 'mul' and _is_operand(b) and isinstance(a, numbers.Real) \
                and not isinstance(a, bool):
            return _Scaled(float(a), _wrap(b))
        if what == 'mul' and _is_operand(a) and _is_operand(b):  # scipy's A * B
            return _Product(_wrap(a), _wrap(b))
        return NotImplemented
    if what == 'matmul':
        if _is_operand(a) and _is_operand(b):
            return _Product(_wrap(a), _wrap(b))
        if _is_operand(a):
            return _apply(_wrap(a), b)
        return NotImplemented
    return NotImplemented


# ---- application ----

def _to_numpy(x):
    """numpy for anything array-like: numpy itself, __array__, else __dlpack__ (the array API
    exchange), else whatever np.asarray makes of it."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, '__array__'):
        return np.asarray(x)
    if hasattr(x, '__dlpack__'):
        return np.from_dlpack(x)
    return np.asarray(x)


def _apply(op, x):
    """op applied to x: a tomolab.Array gives a tomolab.Array in data order (no host copy);
    anything else gives a numpy array shaped as op's output side."""
    op = _wrap(op)
    if _is_array(x):
        if len(x) != op.domain.size:
            raise ValueError(f"input Array has {len(x)} elements; expected {op.domain.size}")
        return op._eval(x, False)
    if hasattr(x, 'grid') and hasattr(x, 'data'):  # a tomolab.Image: its grid must fit
        g = op.domain.grid
        if g is not None and (tuple(x.grid.dims) != tuple(g.dims) or not np.allclose(
                x.grid.voxel_mm, g.voxel_mm) or not np.allclose(x.grid.origin_mm, g.origin_mm)):
            raise ValueError(f"image on grid {x.grid}; the operator's grid is {g}")
        x = x.data
    xn = _to_numpy(x)
    flat = op.domain.internal(xn)
    return op.range.shaped(_flat_apply(op, flat))


def _call(op, x):
    return _apply(op, x)


def _adjoint(op):
    return _Adjoint(op)


def _aslinearoperator(op):
    """scipy.sparse.linalg.LinearOperator of op: float64 vectors in the operator's data order
    (scipy's solvers keep their own arithmetic in double), each product computed in float32
    on the device."""
    from scipy.sparse.linalg import LinearOperator as ScipyOperator
    op = _wrap(op)
    adj = _Adjoint(op)

    def matvec(v):
        return np.asarray(_flat_apply(op, v), dtype=np.float64)

    def rmatvec(v):
        return np.asarray(_flat_apply(adj, v), dtype=np.float64)

    return ScipyOperator(shape=op.shape, matvec=matvec, rmatvec=rmatvec, dtype=np.float64)


def _flat_apply(op, v):
    """op applied to a flat vector in data order; the result flat in data order."""
    flat = np.ascontiguousarray(np.asarray(v, dtype=np.float32).reshape(-1))
    if flat.size != op.domain.size:
        raise ValueError(f"vector has {flat.size} elements; expected {op.domain.size}")
    ctx = op.ctx
    single = isinstance(op, _Leaf) or (isinstance(op, _Adjoint) and isinstance(op.inner, _Leaf))
    if single or ctx is None:  # one operator: its own staging arrays; mixed contexts: host
        y = op._eval(flat, False)
        return y.numpy() if _is_array(y) else y
    # the whole expression on the device: one upload, one download
    return op._eval(_tomolab.Array(flat, ctx), False).numpy()


# ---- PET records ----

EVENT_DTYPE = np.dtype([('a', '<u4'), ('b', '<u4'), ('tof_bin', '<i4')])
BIN_DTYPE = np.dtype([('a', '<u4'), ('b', '<u4'), ('count', '<f4')])


def _records(op):
    kind, words = _tomolab._operator_records(op)
    return words.view(EVENT_DTYPE if kind == 'events' else BIN_DTYPE).reshape(-1)


def lor_end_points(scanner, pairs):
    """(start, end), float32 (n, 3) each: the centres of the crystals a and b of every
    crystal pair -- a structured array with fields a and b (A.records(), Listmode.events) or
    an (n, 2) array (Dataset.bin_pairs) -- in the scanner's coordinates (mm): the lines that
    line_operator takes."""
    if getattr(pairs, 'dtype', None) is not None and pairs.dtype.names:
        a, b = pairs['a'], pairs['b']
    else:
        p = np.asarray(pairs)
        if p.ndim != 2 or p.shape[1] != 2:
            raise ValueError(f"pairs: shape {p.shape}; expected (n, 2) or a structured array "
                             "with fields a and b")
        a, b = p[:, 0], p[:, 1]
    c = np.asarray(scanner.crystals, np.float32)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    bad = (a < 0) | (a >= len(c)) | (b < 0) | (b >= len(c))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"pair {i} ({a[i]}, {b[i]}): the scanner has crystals 0 .. "
                         f"{len(c) - 1}")
    return np.ascontiguousarray(c[a, :3]), np.ascontiguousarray(c[b, :3])


# ---- operators from plain arrays ----

def csr_operator(matrix, grid=None, *, subsets=1, ctx=None):
    """An explicit sparse matrix as an Operator (the library's class 'csr'): a
    scipy.sparse matrix (any format, converted to CSR), a dense 2-D array, or a tuple
    (indptr, indices, data[, n_columns]) of CSR arrays. grid: the image side (its voxel count
    must be the number of columns); None: a grid of n_columns x 1 x 1 voxels of 1 mm.
    subsets: S contiguous row blocks."""
    if isinstance(matrix, tuple):
        if len(matrix) not in (3, 4):
            raise ValueError(f"matrix: a tuple of {len(matrix)} arrays; expected (indptr, "
                             "indices, data) or (indptr, indices, data, n_columns)")
        indptr, indices, data = (np.asarray(v) for v in matrix[:3])
        n_cols = int(matrix[3]) if len(matrix) == 4 else None
    elif hasattr(matrix, 'tocsr'):
        m = matrix.tocsr()
        m.sum_duplicates()
        indptr, indices, data, n_cols = m.indptr, m.indices, m.data, m.shape[1]
    else:
        dense = _to_numpy(matrix)
        if dense.ndim != 2:
            raise ValueError(f"matrix: {dense.ndim} dimensions; expected a 2-D matrix, a "
                             "scipy.sparse matrix or (indptr, indices, data)")
        rows, cols = np.nonzero(dense)
        indptr = np.searchsorted(rows, np.arange(dense.shape[0] + 1))
        indices, data, n_cols = cols, dense[rows, cols], dense.shape[1]
    if grid is None:
        if n_cols is None:
            raise ValueError("grid: None needs the number of columns (a 4th tuple element "
                             "or a matrix with a shape)")
        grid = _tomolab._grid_centred((n_cols, 1, 1), (1.0, 1.0, 1.0))
    elif n_cols is not None and n_cols != grid.n_voxels:
        raise ValueError(f"matrix has {n_cols} columns; the grid {grid.dims} has "
                         f"{grid.n_voxels} voxels")
    return _tomolab._csr_operator(indptr, indices, data, grid, subsets, ctx)


def _ct_matrices(angles_deg, beam, det_u, det_v, pixel_u_mm, pixel_v_mm, sid_mm, sdd_mm,
                 offset_u_mm, offset_v_mm):
    """The 3 x 4 projection matrices (row-major, 12 per view) of views at the given angles
    on the circular orbit of ct/tl-ct-geometry.h (source direction (cos b, sin b, 0), detector
    axes e_u = (-sin b, cos b, 0), e_v = z; pixel centres at integers)."""
    b = np.radians(np.asarray(angles_deg, dtype=np.float64).reshape(-1))
    cu, cv = (det_u - 1) / 2.0, (det_v - 1) / 2.0
    m = np.zeros((b.size, 3, 4))
    e_u = np.stack([-np.sin(b), np.cos(b), np.zeros_like(b)], 1)
    e_v = np.tile([0.0, 0.0, 1.0], (b.size, 1))
    d = -np.stack([np.cos(b), np.sin(b), np.zeros_like(b)], 1)  # ray direction
    if beam == 'parallel':
        m[:, 0, :3] = e_u / pixel_u_mm
        m[:, 0, 3] = cu - offset_u_mm / pixel_u_mm
        m[:, 1, :3] = e_v / pixel_v_mm
        m[:, 1, 3] = cv - offset_v_mm / pixel_v_mm
        m[:, 2, 3] = 1.0
    else:
        s = -sid_mm * d  # source
        # w = (X - s).d, the depth; u w = sdd/pu (X - s).e_u + (cu - off_u/pu) w, same for v
        w = np.concatenate([d, -np.sum(s * d, 1, keepdims=True)], 1)
        ru = np.concatenate([e_u, -np.sum(s * e_u, 1, keepdims=True)], 1)
        rv = np.concatenate([e_v, -np.sum(s * e_v, 1, keepdims=True)], 1)
        m[:, 0] = sdd_mm / pixel_u_mm * ru + (cu - offset_u_mm / pixel_u_mm) * w
        m[:, 1] = sdd_mm / pixel_v_mm * rv + (cv - offset_v_mm / pixel_v_mm) * w
        m[:, 2] = w
    return m.reshape(b.size, 12)


def ct_geometry(angles_deg, det_u, det_v, pixel_u_mm, pixel_v_mm=None, *, beam='parallel',
                sid_mm=None, sdd_mm=None, offset_u_mm=0.0, offset_v_mm=0.0):
    """A CtGeometry from any list of view angles (degrees; ASTRA's radians: np.degrees) and
    the detector: det_u columns by det_v rows of pixel_u_mm x pixel_v_mm (default square).
    beam 'parallel' or 'cone' (then sid_mm: source to isocentre, sdd_mm: source to detector)."""
    if beam not in ('parallel', 'cone'):
        raise ValueError(f"beam '{beam}': expected 'parallel' or 'cone'")
    if beam == 'cone' and (sid_mm is None or sdd_mm is None):
        raise ValueError("beam 'cone' needs sid_mm and sdd_mm")
    pixel_v_mm = pixel_u_mm if pixel_v_mm is None else pixel_v_mm
    m = _ct_matrices(angles_deg, beam, int(det_u), int(det_v), float(pixel_u_mm),
                     float(pixel_v_mm), sid_mm, sdd_mm, float(offset_u_mm), float(offset_v_mm))
    return _tomolab.CtGeometry.from_matrices(m, int(det_u), int(det_v), beam)


def ct_projector(angles_deg, det_u, det_v, pixel_u_mm, grid, pixel_v_mm=None, *,
                 beam='parallel', sid_mm=None, sdd_mm=None, offset_u_mm=0.0, offset_v_mm=0.0,
                 method='joseph', subsets=1, ctx=None):
    """ct_operator(ct_geometry(angles_deg, ...), grid): the CT operator of a scan described by
    its angles and detector, as ASTRA's create_proj_geom + OpTomo (data (views, rows,
    columns) both ways through A @ x and A.T @ y)."""
    g = ct_geometry(angles_deg, det_u, det_v, pixel_u_mm, pixel_v_mm, beam=beam, sid_mm=sid_mm,
                    sdd_mm=sdd_mm, offset_u_mm=offset_u_mm, offset_v_mm=offset_v_mm)
    return _tomolab.ct_operator(g, grid, method=method, subsets=subsets, ctx=ctx)
