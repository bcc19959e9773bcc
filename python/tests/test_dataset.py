# SPDX-License-Identifier: GPL-3.0-or-later
"""tomolab.open / load_image / __version__ on the real files of ../shared/data (next to the
source root), through the library's dataset layer: the same kinds and defaults as the CLI."""
import os
import re

import numpy as np
import pytest

import tomolab as tl

DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared',
                                     'data'))


def data(rel):
    p = os.path.join(DATA, rel)
    if not os.path.exists(p):
        pytest.skip(f'{p}: the shared data are not here')
    return p


def test_version():
    # the meson project version (meson.build's project(..., version : 'X.Y.Z'))
    root = os.path.join(os.path.dirname(__file__), '..', '..', 'meson.build')
    with open(root) as f:
        want = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
    assert tl.__version__ == want


def test_stir_image():
    path = data('stir-image/test_image_3.hv')
    im = tl.load_image(path)
    assert im.grid.dims == (97, 97, 31)
    assert abs(im.grid.voxel_mm[0] - 3.1088) < 1e-4 and abs(im.grid.voxel_mm[2] - 3.375) < 1e-4
    # STIR's own float32 data read here: same values (orientation aside)
    raw = np.fromfile(data('stir-image/test_image_3.v'), dtype='<f4')
    assert np.isclose(raw.astype(np.float64).sum(), im.data.astype(np.float64).sum(), rtol=1e-9)
    assert np.isclose((raw.astype(np.float64) ** 2).sum(),
                      (im.data.astype(np.float64) ** 2).sum(), rtol=1e-9)
    ds = tl.open(path)
    assert ds.kind == 'image' and ds.format == 'interfile' and ds.grid == im.grid
    assert np.array_equal(ds.data.data, im.data)


def test_mmr():
    ds = tl.open(data('mmr/PET_ACQ_small.l.hdr.STIR'))
    assert ds.kind == 'pet-listmode' and ds.format == 'mmr'
    # the one grid of every door (the issue: the window's 133 x 133 x 66 of one crystal width,
    # 4 mm; the CLI had the 263 x 263 x 130 fine grid of 2 mm)
    assert ds.grid.dims == (133, 133, 66)
    assert abs(ds.grid.voxel_mm[0] - 4.0) < 1e-5
    assert ds.subsets == 1  # one subset per 5e5 prompts (tl-dataset.h): this cut file has fewer
    assert 'randoms-delayeds' in ds.allows
    assert 0.3 < ds.duration_s < 1.0
    assert ds.centre is None
    assert ds.data.n_events > 0
    # Listmode.load reads the mMR too (through the format table)
    lm = tl.Listmode.load(data('mmr/PET_ACQ_small.l.hdr.STIR'))
    assert lm.n_events == ds.data.n_events


def test_tooth_centre():
    ds = tl.open(data('tooth/tooth.h5'))
    assert ds.kind == 'ct' and ds.format == 'dxchange'
    assert ds.centre_found and 'centre' in ds.allows
    # the 295.5 of `tomolab-cli ct-recon --centre auto`, not the middle column 319.5
    assert abs(ds.centre - 295.5) <= 0.5
    # without the search: the file's middle column
    raw = tl.open(data('tooth/tooth.h5'), find_centre=False)
    assert not raw.centre_found and raw.centre == 319.5
    # CtData.load reads Data Exchange too
    d = tl.CtData.load(data('tooth/tooth.h5'))
    assert d.projections.shape == ds.data.projections.shape


def test_refused(tmp_path):
    p = tmp_path / 'x.bin'
    p.write_bytes(b'nothing Tomolab reads')
    with pytest.raises(tl.FormatError, match='x.bin'):
        tl.open(str(p))
    with pytest.raises(tl.Error, match='x.bin'):
        tl.load_image(str(p))


@pytest.mark.parametrize('ext', ['.nii', '.nii.gz', '.raw', '.hv', '.mha', '.mhd'])
def test_load_image_every_format(tmp_path, ext):
    g = tl.Grid((5, 4, 3), (1.5, 2.0, 2.5), (-3.0, -3.0, -2.5))
    im = tl.Image(np.arange(60, dtype=np.float32).reshape(3, 4, 5) * 0.25, g)
    p = str(tmp_path / f'im{ext}')
    tl.save_image(p, im)
    back = tl.load_image(p)
    assert back.grid == g
    assert np.array_equal(back.data, im.data)


def test_defaults_one_door(tmp_path, listmode, ctx):
    # a simulated file: tomolab.open's defaults, pet_operator's default grid and the CLI's
    # `info --defaults` are one and the same (the dataset layer's)
    p = str(tmp_path / 'sim.tlm')
    listmode.save(p)
    ds = tl.open(p)
    assert ds.kind == 'pet-listmode' and ds.format == 'tlm'
    assert 'tof' in ds.allows and ds.tof_bins == listmode.scanner.tof_bins
    fine = listmode.scanner.default_grid()
    assert all(abs(v - 2 * w) < 1e-5 for v, w in zip(ds.grid.voxel_mm, fine.voxel_mm))
    assert all(n % 2 == f % 2 for n, f in zip(ds.grid.dims, fine.dims))
    A = tl.pet_operator(listmode, use_cache=False, ctx=ctx)
    assert A.grid == ds.grid
    cli = os.environ.get('TOMOLAB_CLI')
    if cli:
        import subprocess
        out = subprocess.run([cli, 'info', '--defaults', p], capture_output=True, text=True,
                             check=True).stdout
        d = ds.grid
        want = (f'default grid: {d.dims[0]} x {d.dims[1]} x {d.dims[2]} voxels of '
                f'{d.voxel_mm[0]:g} x {d.voxel_mm[1]:g} x {d.voxel_mm[2]:g} mm')
        assert want in out
