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


def pet_doors(cli, gui, ctx, tmp_path, name, run, grid=None, operator_grid=None,
              sinogram=False):
    """One PET run through the three doors: the CLI, the window, and Python's dataset with the
    run's operator (on operator_grid when given, else the run's grid key, else the dataset's)
    and Solver. Asserts the three images are the same bits, not all zero, on `grid` (None:
    the dataset's grid). sinogram: Python's operator of the Dataset's Sinogram (a crystal-pair
    sinogram's rays). Returns the dataset for the case's own checks."""
    cli_im, r = cli_image(cli, run, tmp_path, name)
    win_im, _ = window_image(gui, tmp_path, name)
    ds = tl.open(r.data, context=ctx)
    sv = r.solver(r.pet_operator(ds.sinogram if sinogram else ds.data, grid=operator_grid,
                                 ctx=ctx))
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


def utah_arc(views=48, tang=64):
    """Arc-corrected projection data in STIR's Utah (PRT-1) geometry (16 rings of 384
    detectors, radius 373 mm + 7 mm depth of interaction, rings 6.75 mm apart, bins of
    3.1088 mm; segments of ring difference 0, -1, +1), views mashed to `views`: each bin the
    chord length of its line through a centred cylinder of radius 90 mm, so the counts are
    those of a uniform cylinder seen along STIR's arc-corrected lines."""
    segs = ((0, 0, 16), (-1, -1, 15), (1, 1, 15))
    R, b = 380.0, 3.1088
    t = (np.arange(tang) - tang // 2) * b
    chord = 2 * np.sqrt(np.clip(90.0 ** 2 - t ** 2, 0, None))
    n = sum(a for _, _, a in segs) * views * tang
    data = np.broadcast_to(chord, (n // tang, tang)).reshape(-1).astype(np.float32)
    assert np.all(np.abs(t) < R)
    return tl.Sinogram(data, segments=segs, n_views=views, n_tangential=tang, n_rings=16,
                       n_detectors=384, inner_radius_mm=373.0, doi_mm=7.0, ring_spacing_mm=6.75,
                       bin_size_mm=b, arc_corrected=True, name='PRT-1')


def test_pet_arc_corrected(cli, gui, ctx, tmp_path):
    # arc-corrected STIR projection data (issue 26): each bin a line with 2 x 2 rays, OSEM by
    # interleaved views, the same bits through the CLI, the window's job and Python
    hs = tmp_path / 'utah_arc.hs'
    utah_arc().save(str(hs))
    g = tl.Grid.centred((32, 32, 16), (8.0, 8.0, 6.75))
    run = tl.Run(data=str(hs), algorithm='osem', subsets=2, iterations=2, rays_tangential=2,
                 rays_axial=2, grid='32x32x16@8,8,6.75', output=str(tmp_path / 'arc.nii'))
    ds = pet_doors(cli, gui, ctx, tmp_path, 'arc', run, grid=g)
    assert ds.kind == 'pet-bins' and ds.format == 'stir'
    assert ds.sinogram is not None and ds.sinogram.arc_corrected
    # the image is the cylinder: inside (r < 60 mm) against outside (r > 110 mm; after 4
    # sub-iterations from a uniform start: 0.87 against 0.30)
    im = tl.load_image(run.output).data
    y, x = np.mgrid[0:32, 0:32]
    r = np.hypot((x - 15.5) * 8, (y - 15.5) * 8)
    mid = im[4:12]
    assert mid[:, r < 60].mean() > 2.5 * mid[:, r > 110].mean()
    # `tomolab-cli info` names the arc-corrected geometry
    out = subprocess.run([cli, 'info', str(hs)], check=True, capture_output=True, text=True).stdout
    assert 'arc-corrected bin size: 3.1088 mm' in out and 'bin size: 3.1088 mm' in out
    assert 'number of views: 48 (view mashing 4)' in out


def test_pet_arc_rays_refused(cli, tmp_path, listmode):
    # rays per line are for arc-corrected data: list mode refuses them, naming the keys
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    p = subprocess.run([cli, 'recon', str(tlm), '--rays-tangential', '3', '-o',
                        str(tmp_path / 'x.nii'), '-q'], capture_output=True, text=True)
    assert p.returncode != 0 and '3 x 1 rays per line' in p.stderr and 'arc-corrected' in p.stderr


@pytest.mark.parametrize('case', ['listmode', 'arc'])
def test_pet_sensitivity_file(cli, gui, ctx, listmode, grid, tmp_path, case):
    # the sensitivity from a file (the run key `sensitivity`, STIR's sensitivity filename): a
    # run given the image another run wrote (sensitivity-out) is that run, bit for bit, in
    # every door; an image on another grid is refused naming the file and both grids
    if case == 'listmode':
        data = tmp_path / 'scan.tlm'
        listmode.save(str(data))
        g, extra = grid, {}
    else:
        data = tmp_path / 'utah_arc.hs'
        utah_arc(views=24, tang=48).save(str(data))
        g, extra = tl.Grid.centred((24, 24, 16), (8.0, 8.0, 6.75)), {'rays_tangential': 3}
    gtext = '%dx%dx%d@%g,%g,%g' % (g.dims + g.voxel_mm)
    sens = tmp_path / 'sens.nii'
    first = tl.Run(data=str(data), algorithm='mlem', iterations=2, grid=gtext, cache=False,
                   sensitivity_out=str(sens), output=str(tmp_path / 'computed.nii'), **extra)
    computed, _ = cli_image(cli, first, tmp_path, 'computed')
    s = tl.load_image(str(sens))
    assert s.grid == g and s.data.max() > 0
    run = tl.Run(data=str(data), algorithm='mlem', iterations=2, grid=gtext,
                 sensitivity=str(sens), output=str(tmp_path / 'given.nii'), **extra)
    pet_doors(cli, gui, ctx, tmp_path, 'given', run, grid=g)
    assert np.array_equal(tl.load_image(run.output).data, computed.data)
    # the Python Solver of the run holds the file's image as its sensitivity
    ds = tl.open(str(data), context=ctx)
    sv = run.solver(run.pet_operator(ds.data, ctx=ctx))
    assert np.array_equal(sv.sensitivity, s.data)
    # another grid: refused before any work, naming the file, the grid found and the one expected
    other = tl.Image(s.data.copy(), tl.Grid.centred(g.dims, (7.0, 7.0, 7.0)))
    bad = tmp_path / 'bad-sens.nii'
    other.save(str(bad))
    p = subprocess.run([cli, 'recon', str(data), '--algo', 'mlem', '--grid', gtext,
                        '--sensitivity', str(bad), '-o', str(tmp_path / 'no.nii'), '-q']
                       + [f'--{k.replace("_", "-")}={v}' for k, v in extra.items()],
                       capture_output=True, text=True)
    assert p.returncode != 0, p.stderr
    assert f'sensitivity = {bad}' in p.stderr and 'expected the run' in p.stderr, p.stderr
    assert '7' in p.stderr.split('grid is')[1]


def test_pet_arc_attenuation(cli, gui, ctx, tmp_path):
    # arc-corrected data with attenuation correction (D = exp(-A mu) over each bin's rays): the
    # run's mu-map read by each door, the same bits
    hs = tmp_path / 'utah_arc.hs'
    utah_arc(views=24, tang=48).save(str(hs))
    g = tl.Grid.centred((24, 24, 16), (8.0, 8.0, 6.75))
    z, y, x = np.mgrid[0:16, 0:24, 0:24]
    mu = np.where(np.hypot((x - 11.5) * 8, (y - 11.5) * 8) <= 90, 0.0096, 0).astype(np.float32)
    mu_path = tmp_path / 'mu.nii'
    tl.Image(mu, g).save(str(mu_path))
    run = tl.Run(data=str(hs), algorithm='osem', subsets=2, iterations=1, rays_axial=3,
                 attenuation=str(mu_path), grid='24x24x16@8,8,6.75',
                 output=str(tmp_path / 'arc-ac.nii'))
    cli_im, r = cli_image(cli, run, tmp_path, 'arc-ac')
    win_im, _ = window_image(gui, tmp_path, 'arc-ac')
    ds = tl.open(r.data, context=ctx)
    assert 'attenuation' in ds.allows and 'normalisation' not in ds.allows
    sv = r.solver(r.pet_operator(ds.data, attenuation=tl.load_image(str(mu_path)), ctx=ctx))
    sv.run()
    assert cli_im.grid == g and win_im.grid == g and cli_im.data.max() > 0
    assert np.array_equal(sv.image, cli_im.data)
    assert np.array_equal(win_im.data, cli_im.data)
    # without the map the image differs (the factors are applied)
    plain = tl.Run(data=str(hs), algorithm='osem', subsets=2, iterations=1, rays_axial=3,
                   grid='24x24x16@8,8,6.75', output=str(tmp_path / 'arc-noac.nii'))
    no_ac, _ = cli_image(cli, plain, tmp_path, 'arc-noac')
    assert not np.array_equal(no_ac.data, cli_im.data)


def ring_pairs(dets=128, rings=8, tang=32, radius=40.0):
    """A crystal-pair sinogram (not arc-corrected, span 1: segments of ring difference 0, -1,
    +1, dets / 2 views) of a ring of radius 150 mm: each bin the chord of its line through a
    centred cylinder of `radius` mm. The line of bin t is at s = R sin(pi t / dets) from the
    axis (its detectors d1 - d2 = t - dets / 2, tl-sinogram.h)."""
    segs = ((0, 0, rings), (-1, -1, rings - 1), (1, 1, rings - 1))
    R = 150.0
    t = np.arange(tang) - tang // 2
    s = R * np.sin(np.pi * t / dets)
    chord = 2 * np.sqrt(np.clip(radius ** 2 - s ** 2, 0, None))
    n = sum(a for _, _, a in segs) * (dets // 2) * tang
    data = np.broadcast_to(chord, (n // tang, tang)).reshape(-1).astype(np.float32)
    return tl.Sinogram(data, segments=segs, n_views=dets // 2, n_tangential=tang, n_rings=rings,
                       n_detectors=dets, inner_radius_mm=150.0, doi_mm=0.0, ring_spacing_mm=6.75,
                       bin_size_mm=3.0, arc_corrected=False, name='ring')


def test_pet_pair_rays(cli, gui, ctx, tmp_path):
    # crystal-pair bins with 3 x 2 rays each (issue 26 item 4 as a run path): the dataset
    # layer's sinogram as lines (tl_dataset_lines, tl_recon_new_lines), the same bits through
    # the CLI, the window's job and Python's Run.pet_operator(ds.sinogram)
    hs = tmp_path / 'ring_pairs.hs'
    ring_pairs().save(str(hs))
    g = tl.Grid.centred((24, 24, 8), (5.0, 5.0, 6.75))
    run = tl.Run(data=str(hs), algorithm='osem', subsets=2, iterations=2, rays_tangential=3,
                 rays_axial=2, grid='24x24x8@5,5,6.75', output=str(tmp_path / 'pairs.nii'))
    ds = pet_doors(cli, gui, ctx, tmp_path, 'pairs', run, grid=g, sinogram=True)
    assert ds.kind == 'pet-bins' and not ds.sinogram.arc_corrected
    assert ds.bin_pairs is not None  # the data stay its crystal pairs
    im = tl.load_image(run.output).data
    y, x = np.mgrid[0:24, 0:24]
    r = np.hypot((x - 11.5) * 5, (y - 11.5) * 5)
    assert im[2:6][:, r < 25].mean() > 2.5 * im[2:6][:, r > 50].mean()
    # the rays are used: one ray per pair (the crystal-pair operator) is another image
    one = tl.Run(data=str(hs), algorithm='osem', subsets=2, iterations=2,
                 grid='24x24x8@5,5,6.75', output=str(tmp_path / 'pairs-1.nii'))
    one_im, _ = cli_image(cli, one, tmp_path, 'pairs-1')
    assert one_im.data.max() > 0 and not np.array_equal(one_im.data, im)
    # Python: a crystal-pair Sinogram with one ray is no line operator (named)
    with pytest.raises(tl.InvalidArgument, match='crystal-pair Sinogram with one ray'):
        one.pet_operator(ds.sinogram, ctx=ctx)
    # block gaps (positions per block, the first a gap: the mMR's 9) travel in Python's
    # Sinogram too: a bin with a gap at either end has no line (decoded here from
    # tl-sinogram.h's d1 = v + floor(t / 2), d2 = v - floor((t + 1) / 2) + N / 2, mod N)
    gapped = ring_pairs(dets=64, rings=2, tang=16)
    gapped.block_positions = 4
    gg = tl.Grid.centred((24, 24, 4), (10.0, 10.0, 3.375))
    A = tl.Run(rays_tangential=2).pet_operator(gapped, grid=gg, ctx=ctx)
    y = np.asarray(A.forward(np.ones(gg.shape, np.float32)))
    gap = []
    for _, _, n_ax in gapped.segments:
        for v in range(32):
            for _ in range(n_ax):
                for t in range(-8, 8):
                    d1, d2 = (v + t // 2) % 64, (v - (t + 1) // 2 + 32) % 64
                    gap.append(d1 % 4 == 0 or d2 % 4 == 0)
    gap = np.array(gap)
    assert y.size == gap.size and 0 < gap.sum() < gap.size
    assert np.all(y[gap] == 0) and np.all(y[~gap] > 0)


def test_pet_pair_rays_refused(cli, tmp_path):
    # a sinogram of span 3 (a segment of ring differences -1..1): its bins are several pairs,
    # no one line; rays are refused naming why, never ignored
    hs = tmp_path / 'span3.hs'
    n = 7 * 32 * 16  # 2 rings - 1 positions half a ring apart
    tl.Sinogram(np.ones(n, np.float32), segments=((-1, 1, 7),), n_views=32, n_tangential=16,
                n_rings=4, n_detectors=64, inner_radius_mm=150.0, doi_mm=0.0,
                ring_spacing_mm=6.75, bin_size_mm=3.0, arc_corrected=False,
                name='ring').save(str(hs))
    p = subprocess.run([cli, 'recon', str(hs), '--rays-axial', '2', '-o',
                        str(tmp_path / 'x.nii'), '-q'], capture_output=True, text=True)
    assert p.returncode != 0 and 'several ring differences' in p.stderr, p.stderr


@pytest.mark.parametrize('restart', [False, True])
def test_pet_scatter_sss(cli, gui, tmp_path, restart):
    # scatter = sss with its rounds (issue 26): the run's one schedule, N iterations, then
    # rounds x (an estimate + N) (tl_run_spec_total_iterations), the last round restarted from
    # the uniform image with scatter-restart: the CLI and the window's job give the same bits.
    # (Python's Run gives the operator and the Solver; a scatter estimate is its caller's
    # additive term, so Python has no rounds of its own to compare.)
    ring = tmp_path / 'ring.scanner'
    ring.write_text('name = sss-ring\nkind = ring\nrings = 10\nsides = 24\ncrystals_per_side = 6\n'
                    'crystal_pitch_mm = 4.8\nradius_mm = 150\nring_pitch_mm = 4.8\n'
                    'crystal_size_mm = 4.8 4.8 20\n')
    scan, mu = tmp_path / 'scan.tlm', tmp_path / 'mu.nii'
    subprocess.run([cli, 'simulate', '--phantom', 'cylinder', '--scanner', str(ring), '-g',
                    '50x50x10@4.8', '--scatter', '--activity', '1e7', '--duration', '1', '--seed',
                    '3', '--mu', str(mu), '-o', str(scan)], check=True, timeout=600,
                   capture_output=True)
    run = tl.Run(data=str(scan), algorithm='osem', subsets=2, iterations=2, attenuation=str(mu),
                 randoms='delayeds', scatter='sss', scatter_rounds=2, scatter_restart=restart,
                 output=str(tmp_path / 'sss.nii'))
    path = tmp_path / 'sss.run'
    run.save(path)
    p = subprocess.run([cli, 'recon', '--run', str(path)], check=True, timeout=600,
                       capture_output=True, text=True)
    assert 'iteration 6/6' in p.stderr and 'scatter round 2/2' in p.stderr, p.stderr
    assert ('the last round starts again from the uniform image' in p.stderr) == restart
    cli_im = tl.load_image(run.output)
    win_im, _ = window_image(gui, tmp_path, 'sss')
    assert cli_im.data.max() > 0
    assert np.array_equal(win_im.data, cli_im.data)
    # the restart is another image than the continued rounds
    other = tl.Run.load(path)
    other.scatter_restart = not restart
    other.output = str(tmp_path / 'sss-other.nii')
    other_im, _ = cli_image(cli, other, tmp_path, 'sss-other')
    assert not np.array_equal(other_im.data, cli_im.data)
