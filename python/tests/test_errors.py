# SPDX-License-Identifier: GPL-3.0-or-later
"""Every error path raises a Python exception carrying the library's message (a GError
becomes tomolab.Error or the subclass of its code, which is also the matching built-in:
InvalidArgument is a ValueError, FileError an OSError ...); argument mistakes caught in the
binding raise TypeError / ValueError / IndexError naming what was wrong."""
import numpy as np
import pytest

import tomolab as tl


def raises(exc, fragment, fn, *a, **kw):
    with pytest.raises(exc) as e:
        fn(*a, **kw)
    msg = str(e.value)
    assert fragment in msg, msg
    assert '\n' not in msg.strip() or len(msg) < 2000
    return e.value


def test_library_errors(ctx, tmp_path, listmode, grid, scanner):
    missing = str(tmp_path / 'missing.nii')
    e = raises(tl.FileError, 'missing.nii', tl.load_image, missing)
    assert isinstance(e, OSError) and isinstance(e, tl.Error) and e.domain
    (tmp_path / 'bad.tlm').write_bytes(b'tomolab-listmode = 1\nnonsense\n')
    raises(tl.Error, 'bad.tlm', tl.Listmode.load, str(tmp_path / 'bad.tlm'))
    raises(tl.Error, 'nope', tl.Scanner.preset, 'nope')
    raises(tl.Error, 'nope', tl.pet_operator, listmode, grid, projector='nope')
    X = tl.Array(10, ctx=ctx)
    e = raises(tl.ParseError, 'column', tl.expr, 'x = x +* 2', x=X)
    assert isinstance(e, ValueError)
    raises(tl.InvalidArgument, 'zz', tl.expr, 'x = zz', x=X)
    raises(tl.InvalidArgument, 'length', tl.expr, 'x = y', x=X, y=tl.Array(11, ctx=ctx))
    A = tl.pet_operator(listmode, grid, ctx=ctx)
    raises(tl.Error, 'nope', tl.Solver, A, 'nope')
    # a least-squares algorithm on list mode: the library says why
    needs_data = [a['name'] for a in tl.algorithms() if 'needs-data' in a['flags']]
    assert needs_data
    raises(tl.Error, needs_data[0], tl.Solver, A, needs_data[0])
    raises(tl.Error, 'nope', tl.Solver, A, 'mlem', filter='nope')
    raises(tl.NoDeviceError, 'no-such-device', tl.Context, device='no-such-device')
    # mu-map in cm^-1 (10x too large)
    mu = tl.Image(np.full(grid.shape, 0.1, np.float32), grid)
    raises(tl.Error, '0.1', tl.pet_operator, listmode, grid, attenuation=mu)
    geom = tl.CtGeometry.parallel(8, 8, 1, 1.0, 1.0)
    raises(tl.Error, 'voxel', tl.ct_operator, geom, grid, method='voxel')
    raises(tl.Error, 'nope', tl.fdk, geom, grid, np.zeros(64, np.float32), filter='nope')
    cone = tl.CtGeometry.cone(8, 100.0, 200.0, 8, 8, 1.0, 1.0)
    raises(tl.Error, 'FDK', tl.fbp, cone, grid, np.zeros(512, np.float32))
    raises(tl.Error, 'views', tl.CtGeometry.cone, 0, 100.0, 200.0, 8, 8, 1.0, 1.0)


def test_binding_errors(ctx, listmode, grid):
    A = tl.pet_operator(listmode, grid, ctx=ctx)
    raises(ValueError, 'expected %d' % grid.n_voxels, A.forward, np.zeros(5, np.float32))
    raises(ValueError, 'expected %d' % A.shape[0], A.adjoint, np.zeros(5, np.float32))
    raises(IndexError, '1 subsets', A.forward, np.zeros(grid.shape, np.float32), subset=1)
    raises(TypeError, 'Array', A.forward, np.zeros(grid.shape, np.float32), out=np.zeros(3))
    raises(ValueError, 'elements', A.forward, tl.Array(3, ctx=ctx))
    raises(TypeError, 'Grid', tl.pet_operator, listmode, 'not a grid')
    raises(ValueError, 'dims', tl.pet_operator, listmode, tl.Grid((0, 4, 4), (1, 1, 1)))
    raises(tl.Error, 'voxel', tl.pet_operator, listmode, tl.Grid((4, 4, 4), (-1, 1, 1)))
    raises(ValueError, 'grid', tl.Solver, A, 'mlem', truth=tl.Image(np.zeros((1, 1, 1)), tl.Grid((1, 1, 1), (1, 1, 1))))
    raises(ValueError, 'objective', tl.Solver, A, 'mlem', objective='sometimes')
    raises(TypeError, 'callable', tl.Solver(A, 'mlem', iterations=1).run, callback=3)
    raises(NotImplementedError, 'counts', tl.ct_operator(tl.CtGeometry.parallel(8, 8, 1, 1.0, 1.0), grid, ctx=ctx).counts)
    raises(TypeError, 'CT', A.gather, np.zeros(3))
    raises(TypeError, 'number', tl.expr, 'x = y', x=tl.Array(3, ctx=ctx), y=np.zeros(3))
    raises(ValueError, 'Array argument', tl.expr, 'x = 1')
    raises(ValueError, 'expected 1', tl.Array, 0)
    raises(TypeError, 'Scanner.preset', tl.Scanner)
