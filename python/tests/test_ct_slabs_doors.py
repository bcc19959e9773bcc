# SPDX-License-Identifier: GPL-3.0-or-later
"""CT volumes in z-slabs through every door (issue 31, item 3): FDK / FBP go through the run
layer's one path (compute/run/tl-run-ct-direct.h), so a slab limit forced small
(TOMOLAB_CT_SLAB_BYTES, far below one volume) gives the same bits as the unsplit run, through
the CLI (which writes NIfTI plane by plane), the window's job (`tomolab --run`) and Python's
tomolab.fdk / fbp. The reference is the unsplit CLI run; the slab split itself is checked
against the one-array FDK in tests/test-run-ct-direct.c. Grids that cannot fit are refused,
naming the grid, its bytes and the limit, before anything is allocated."""
import os
import subprocess

import numpy as np
import pytest

import tomolab as tl

# a plane of the 24 x 20 grid below is 1920 bytes: 3 planes a slab, 6 slabs for 17 planes
SLAB = str(3 * 24 * 20 * 4)


@pytest.fixture
def scan(tmp_path):
    geom = tl.CtGeometry.cone(30, 300.0, 600.0, 40, 36, 2.0, 2.0)
    g = tl.Grid.centred((24, 20, 17), (1.5, 1.5, 1.5))
    data = tl.CtData.simulate(geom, 'shepp-logan', g, scale=0.02)
    path = tmp_path / 'scan.tlct'
    data.save(str(path))
    return path, g, data


def cli_fdk(cli, scan, out, slab=None, extra=()):
    env = dict(os.environ)
    env.pop('TOMOLAB_CT_SLAB_BYTES', None)
    if slab:
        env['TOMOLAB_CT_SLAB_BYTES'] = slab
    return subprocess.run([cli, 'ct-recon', str(scan), '--grid', '24x20x17@1.5', '-q',
                           '-o', str(out), *extra], env=env, capture_output=True, text=True,
                          timeout=300)


def test_slabs_equal_unsplit_every_door(cli, ctx, scan, tmp_path, monkeypatch):
    path, g, data = scan
    monkeypatch.delenv('TOMOLAB_CT_SLAB_BYTES', raising=False)
    r = cli_fdk(cli, path, tmp_path / 'one.nii')
    assert r.returncode == 0, r.stderr
    one = tl.load_image(str(tmp_path / 'one.nii'))
    assert one.grid == g and np.abs(one.data).max() > 0
    # the CLI in slabs, NIfTI and gzipped NIfTI written plane by plane
    for name in ('slabs.nii', 'slabs.nii.gz'):
        r = cli_fdk(cli, path, tmp_path / name, slab=SLAB)
        assert r.returncode == 0, r.stderr
        assert np.array_equal(tl.load_image(str(tmp_path / name)).data, one.data), name
    # Python, unsplit and in slabs
    py = tl.fdk(data.geometry, g, data.projections, ctx=ctx)
    assert np.array_equal(py, one.data)
    monkeypatch.setenv('TOMOLAB_CT_SLAB_BYTES', SLAB)
    assert np.array_equal(tl.fdk(data.geometry, g, data.projections, ctx=ctx), one.data)


def test_window_door_in_slabs(cli, ctx, scan, tmp_path):
    gui = os.environ.get('TOMOLAB_GUI')
    assert gui and os.path.exists(gui), 'TOMOLAB_GUI names the built tomolab (the window)'
    path, g, _ = scan
    ref = tmp_path / 'one.nii'
    assert cli_fdk(cli, path, ref).returncode == 0
    run = tl.Run(modality='ct', data=str(path), algorithm='fdk', grid='24x20x17@1.5',
                 output=str(tmp_path / 'w.nii'))
    run.save(tmp_path / 'w.run')
    env = {k: v for k, v in os.environ.items() if k not in ('DISPLAY', 'WAYLAND_DISPLAY')}
    env['TOMOLAB_CT_SLAB_BYTES'] = SLAB
    subprocess.run([gui, '--run', str(tmp_path / 'w.run'), '--output', str(tmp_path / 'w.nii')],
                   check=True, timeout=300, env=env)
    assert np.array_equal(tl.load_image(str(tmp_path / 'w.nii')).data,
                          tl.load_image(str(ref)).data)


def test_refusals(cli, ctx, scan, tmp_path, monkeypatch):
    path, g, data = scan
    # beyond what the CT kernels index (2^32 voxels): refused before any allocation
    r = cli_fdk(cli, path, tmp_path / 'big.nii', extra=('--grid', '2048x2048x1024@0.1'))
    assert r.returncode != 0
    assert '2048 x 2048 x 1024' in r.stderr and '17179869184 bytes' in r.stderr, r.stderr
    assert not (tmp_path / 'big.nii').exists()
    big = tl.Grid.centred((2048, 2048, 1024), (0.1, 0.1, 0.1))
    with pytest.raises(tl.Error, match='2048 x 2048 x 1024.*17179869184 bytes'):
        tl.fdk(data.geometry, big, data.projections, ctx=ctx)
    # a slab limit below one plane (1920 bytes): the grid, its bytes and the limit named
    r = cli_fdk(cli, path, tmp_path / 'p.nii', slab='1000')
    assert r.returncode != 0
    assert '24 x 20 x 17' in r.stderr and '32640 bytes' in r.stderr and '1000 bytes' in r.stderr
    monkeypatch.setenv('TOMOLAB_CT_SLAB_BYTES', '1000')
    with pytest.raises(tl.Error, match='TOMOLAB_CT_SLAB_BYTES.*1000 bytes'):
        tl.fdk(data.geometry, g, data.projections, ctx=ctx)
    monkeypatch.delenv('TOMOLAB_CT_SLAB_BYTES')
    # iterative solvers keep the volume in one TlImage: a grid beyond 2^28 voxels is refused
    r = cli_fdk(cli, path, tmp_path / 's.nii', extra=('--grid', '1024x1024x512@0.1',
                                                      '--algo', 'sirt'))
    assert r.returncode != 0 and '2^28' in r.stderr and 'fdk' in r.stderr, r.stderr
