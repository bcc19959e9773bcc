# SPDX-License-Identifier: GPL-3.0-or-later
"""One door (issue 32): the same file and the same run file give the same image through
`tomolab-cli recon --run FILE`, through the window's job (`tomolab --run FILE`: the window's
own document loader and job code, stepped to the run's end without a display) and through
Python (tomolab.open for the data, tomolab.Run for the run's operator and Solver). Each door
opens the file through the library's dataset layer and builds its run from the run
description; this checks that nothing in between differs.

Every file of ../shared/data that Tomolab reconstructs is here (the mMR list mode, tooth.h5 by
FDK and by CGLS, the STIR image as the truth that sets an mMR run's grid, PETSIRD's reference
file), with one simulated file of each kind (PET list mode, PET bins, CT).

The CLI and the window write NIfTI; their images are read back with tomolab.load_image. The back
projections sum in fixed point (compute/core/tl-fixed.h), so the doors give the same bits.
Runs are small (few iterations, small grids) to keep the suite fast."""
import json
import os
import subprocess

import numpy as np
import pytest

import tomolab as tl

ROOT = os.environ.get('TL_TEST_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')


def shared(rel):
    return os.path.join(ROOT, '..', 'shared', 'data', rel)


def cli_image(cli, run, tmp_path, name):
    path = tmp_path / f'{name}.run'
    run.save(path)
    subprocess.run([cli, 'recon', '--run', str(path), '-q'], check=True, timeout=600)
    return tl.load_image(run.output), tl.Run.load(path)


@pytest.fixture(scope='session')
def gui():
    path = os.environ.get('TOMOLAB_GUI')
    assert path and os.path.exists(path), 'TOMOLAB_GUI names the built tomolab (the window)'
    return path


def window_image(gui, tmp_path, name):
    """The window's door: the run file written by cli_image, its output elsewhere. No display:
    --run runs before GTK starts (DISPLAY and WAYLAND_DISPLAY removed to show it)."""
    out = tmp_path / f'{name}-window.nii'
    env = {k: v for k, v in os.environ.items() if k not in ('DISPLAY', 'WAYLAND_DISPLAY')}
    subprocess.run([gui, '--run', str(tmp_path / f'{name}.run'), '--output', str(out)],
                   check=True, timeout=600, env=env)
    return tl.load_image(str(out)), out


def pet_doors(cli, gui, ctx, tmp_path, name, run, grid=None, operator_grid=None):
    """One PET run through the three doors: the CLI, the window, and Python's dataset with the
    run's operator (on operator_grid when given, else the run's grid key, else the dataset's)
    and Solver. Asserts the three images are the same bits, not all zero, on `grid` (None:
    the dataset's grid). Returns the dataset for the case's own checks."""
    cli_im, r = cli_image(cli, run, tmp_path, name)
    win_im, _ = window_image(gui, tmp_path, name)
    ds = tl.open(r.data, context=ctx)
    sv = r.solver(r.pet_operator(ds.data, grid=operator_grid, ctx=ctx))
    sv.run()
    want = ds.grid if grid is None else grid
    assert cli_im.grid == want and win_im.grid == want
    assert cli_im.data.max() > 0
    assert np.array_equal(sv.image, cli_im.data)
    assert np.array_equal(win_im.data, cli_im.data)
    return ds


def test_pet_listmode(cli, gui, ctx, listmode, grid, tmp_path):
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    run = tl.Run(data=str(tlm), algorithm='osem', subsets=2, iterations=2, projector='joseph',
                 grid='%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm),
                 output=str(tmp_path / 'cli.nii'))
    ds = pet_doors(cli, gui, ctx, tmp_path, 'pet', run, grid=grid)
    assert ds.kind == 'pet-listmode'


def test_pet_listmode_dataset_grid(cli, gui, ctx, listmode, tmp_path):
    # no grid in the run: both doors take the dataset's
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    run = tl.Run(data=str(tlm), algorithm='mlem', iterations=2, output=str(tmp_path / 'cli.nii'))
    pet_doors(cli, gui, ctx, tmp_path, 'pet-auto', run)


def test_pet_binned(cli, gui, ctx, listmode, grid, tmp_path):
    # PET bins: the events as counts per crystal pair (binned = true) in all three doors
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    run = tl.Run(data=str(tlm), algorithm='osem', subsets=2, iterations=2, binned=True,
                 grid='%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm),
                 output=str(tmp_path / 'binned.nii'))
    pet_doors(cli, gui, ctx, tmp_path, 'binned', run, grid=grid)


def test_ct_simulated(cli, gui, ctx, tmp_path):
    # a simulated CT scan (.tlct, a cone beam): CGLS through the three doors
    geom = tl.CtGeometry.cone(24, 300.0, 600.0, 40, 40, 2.0, 2.0)
    g = tl.Grid.centred((16, 16, 16), (2.0, 2.0, 2.0))
    scan = tl.CtData.simulate(geom, 'shepp-logan', g, scale=0.02)
    tlct = tmp_path / 'scan.tlct'
    scan.save(str(tlct))
    run = tl.Run(modality='ct', data=str(tlct), algorithm='cgls', iterations=3,
                 grid='16x16x16@2', output=str(tmp_path / 'ct.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'ct')
    win_im, _ = window_image(gui, tmp_path, 'ct')
    ds = tl.open(r.data, context=ctx)
    A = tl.ct_operator(ds.data.geometry, g, method=r.validate()['projector'], ctx=ctx)
    sv = r.solver(A, data=A.gather(ds.data.projections))
    sv.run()
    assert cli_im.grid == g and win_im.grid == g
    assert np.abs(cli_im.data).max() > 0
    assert np.array_equal(sv.image, cli_im.data)
    assert np.array_equal(win_im.data, cli_im.data)


def sidecar(image_path):
    with open(os.path.splitext(str(image_path))[0] + '.json') as f:
        return json.load(f)


def test_ct_tooth_fdk(cli, gui, ctx, tmp_path):
    # the real tooth (Data Exchange): the CLI's --centre auto; the window's run names no centre
    # (its default: searched, as the window does on opening the file); Python's dataset
    run = tl.Run(modality='ct', data=shared('tooth/tooth.h5'), algorithm='fdk',
                 fdk_filter='shepp-logan', centre='auto', output=str(tmp_path / 'tooth.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'tooth')
    tl.Run(modality='ct', data=run.data, algorithm='fdk', fdk_filter='shepp-logan',
           output=run.output).save(tmp_path / 'tooth-window.run')
    win_im, win_out = window_image(gui, tmp_path, 'tooth-window')
    ds = tl.open(r.data, context=ctx)
    assert ds.kind == 'ct' and ds.centre_found and abs(ds.centre - 295.5) <= 0.5
    d = ds.data
    im = tl.fdk(d.geometry, ds.grid, d.projections, filter=r.fdk_filter, ctx=ctx)
    assert cli_im.grid == ds.grid and win_im.grid == ds.grid
    assert np.array_equal(im, cli_im.data)
    assert np.array_equal(win_im.data, cli_im.data)
    # both sidecars record the centre found, not 'auto', and say it was searched: a rerun from
    # the sidecar does not search
    jsonschema = pytest.importorskip('jsonschema')  # Debian: python3-jsonschema
    with open(os.path.join(ROOT, 'docs', 'schema', 'tomolab-recon-sidecar.schema.json')) as f:
        schema = json.load(f)
    for sc in (sidecar(run.output), sidecar(win_out)):
        jsonschema.Draft7Validator(schema).validate(sc)
        assert float(sc['TomolabRun']['centre']) == pytest.approx(ds.centre, abs=1e-9)
        assert any('searched' in n for n in sc['TomolabNotes'])
    again = tmp_path / 'again.nii'
    subprocess.run([cli, 'recon', '--run', os.path.splitext(run.output)[0] + '.json', '-o',
                    str(again), '-q'], check=True, timeout=600)
    assert 'TomolabNotes' not in sidecar(again)  # nothing searched this time
    assert np.array_equal(tl.load_image(str(again)).data, cli_im.data)


def test_ct_tooth_cgls(cli, gui, ctx, tmp_path):
    # the real tooth by an iterative method: CGLS, 2 iterations on a 160 x 160 x 2 grid of 2 mm
    # (the detector's pixel size is not stored: 1 mm); the centre searched once, by Python's
    # open, and given to the other doors as a column (the FDK test checks their searches)
    ds = tl.open(shared('tooth/tooth.h5'), context=ctx)
    run = tl.Run(modality='ct', data=shared('tooth/tooth.h5'), algorithm='cgls', iterations=2,
                 centre=repr(ds.centre), grid='160x160x2@2',
                 output=str(tmp_path / 'tooth-cgls.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'tooth-cgls')
    win_im, _ = window_image(gui, tmp_path, 'tooth-cgls')
    g = tl.Grid.centred((160, 160, 2), (2.0, 2.0, 2.0))
    A = tl.ct_operator(ds.data.geometry, g, method=r.validate()['projector'], ctx=ctx)
    sv = r.solver(A, data=A.gather(ds.data.projections))
    sv.run()
    assert cli_im.grid == g and win_im.grid == g
    assert np.abs(cli_im.data).max() > 0
    assert np.array_equal(sv.image, cli_im.data)
    assert np.array_equal(win_im.data, cli_im.data)


def test_pet_mmr(cli, gui, ctx, tmp_path):
    # the real mMR list mode (prompts; its header names the data file): the dataset's grid,
    # 133 x 133 x 66 of 4 mm, in both doors; the sensitivity image is cached by the first
    # door and read by the second (the same cache key: the same model)
    run = tl.Run(data=shared('mmr/PET_ACQ_small.l.hdr.STIR'), algorithm='mlem', iterations=1,
                 output=str(tmp_path / 'mmr.nii'))
    ds = pet_doors(cli, gui, ctx, tmp_path, 'mmr', run)
    assert ds.kind == 'pet-listmode' and ds.format == 'mmr'
    assert ds.grid.dims == (133, 133, 66)


def test_pet_mmr_stir_truth(cli, gui, ctx, tmp_path):
    # the STIR image where it fits: as the truth of an mMR run, whose grid it sets (97 x 97 x 31
    # of 3.11 x 3.11 x 3.375 mm, as the CLI's rule: truth, else mu-map, else the dataset's)
    stir = shared('stir-image/test_image_3.hv')
    run = tl.Run(data=shared('mmr/PET_ACQ_small.l.hdr.STIR'), algorithm='mlem', iterations=1,
                 truth=stir, output=str(tmp_path / 'mmr-stir.nii'))
    truth = tl.load_image(stir)
    pet_doors(cli, gui, ctx, tmp_path, 'mmr-stir', run, grid=truth.grid,
              operator_grid=truth.grid)
    assert truth.grid.dims == (97, 97, 31)


def test_petsird(cli, gui, ctx, tmp_path):
    # PETSIRD (written by PETSIRD's reference generator): its two module types as one crystal
    # table, its prompts as list mode, the dataset's grid, in all three doors
    run = tl.Run(data=shared('petsird/petsird-v0.10.0_small.bin'), algorithm='mlem', iterations=2,
                 output=str(tmp_path / 'petsird.nii'))
    ds = pet_doors(cli, gui, ctx, tmp_path, 'petsird', run)
    assert ds.kind == 'pet-listmode' and ds.format == 'petsird'
