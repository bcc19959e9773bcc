# SPDX-License-Identifier: GPL-3.0-or-later
"""One door (issue 32): the same file and the same run file give the same image through
`tomolab-cli recon --run FILE` and through Python (tomolab.open for the data, tomolab.Run for
the run's operator and Solver). Each door opens the file through the library's dataset layer
and builds its run from the run description; this checks that nothing in between differs.

The CLI writes NIfTI; its image is read back with tomolab.load_image. The back projections sum
in fixed point (compute/core/tl-fixed.h), so the two doors give the same bits."""
import os
import subprocess

import numpy as np

import tomolab as tl

ROOT = os.environ.get('TL_TEST_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')


def shared(rel):
    return os.path.join(ROOT, '..', 'shared', 'data', rel)


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64)))


def cli_image(cli, run, tmp_path, name):
    path = tmp_path / f'{name}.run'
    run.save(path)
    subprocess.run([cli, 'recon', '--run', str(path), '-q'], check=True, timeout=600)
    return tl.load_image(run.output), tl.Run.load(path)


def test_pet_listmode(cli, ctx, listmode, grid, tmp_path):
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    run = tl.Run(data=str(tlm), algorithm='osem', subsets=2, iterations=2, projector='joseph',
                 grid='%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm),
                 output=str(tmp_path / 'cli.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'pet')
    ds = tl.open(r.data, context=ctx)
    assert ds.kind == 'pet-listmode'
    sv = r.solver(r.pet_operator(ds.data, ctx=ctx))
    sv.run()
    assert cli_im.grid == grid
    assert cli_im.data.max() > 0
    assert np.array_equal(sv.image, cli_im.data)


def test_pet_listmode_dataset_grid(cli, ctx, listmode, tmp_path):
    # no grid in the run: both doors take the dataset's
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    run = tl.Run(data=str(tlm), algorithm='mlem', iterations=2, output=str(tmp_path / 'cli.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'pet-auto')
    ds = tl.open(r.data, context=ctx)
    sv = r.solver(r.pet_operator(ds.data, ctx=ctx))
    sv.run()
    assert cli_im.grid == ds.grid
    assert np.array_equal(sv.image, cli_im.data)


def test_ct_tooth_fdk(cli, ctx, tmp_path):
    # the real tooth (Data Exchange): the centre searched by both doors, FDK
    run = tl.Run(modality='ct', data=shared('tooth/tooth.h5'), algorithm='fdk',
                 fdk_filter='shepp-logan', centre='auto', output=str(tmp_path / 'tooth.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'tooth')
    ds = tl.open(r.data, context=ctx)
    assert ds.kind == 'ct' and ds.centre_found and abs(ds.centre - 295.5) <= 0.5
    d = ds.data
    im = tl.fdk(d.geometry, ds.grid, d.projections, filter=r.fdk_filter, ctx=ctx)
    assert cli_im.grid == ds.grid
    assert np.array_equal(im, cli_im.data)


def test_pet_mmr(cli, ctx, tmp_path):
    # the real mMR list mode (prompts; its header names the data file): the dataset's grid,
    # 133 x 133 x 66 of 4 mm, in both doors; the sensitivity image is cached by the first
    # door and read by the second (the same cache key: the same model)
    run = tl.Run(data=shared('mmr/PET_ACQ_small.l.hdr.STIR'), algorithm='mlem', iterations=1,
                 output=str(tmp_path / 'mmr.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'mmr')
    ds = tl.open(r.data, context=ctx)
    assert ds.kind == 'pet-listmode' and ds.format == 'mmr'
    sv = r.solver(r.pet_operator(ds.data, ctx=ctx))
    sv.run()
    assert cli_im.grid == ds.grid and ds.grid.dims == (133, 133, 66)
    assert cli_im.data.max() > 0
    assert np.array_equal(sv.image, cli_im.data)
