# SPDX-License-Identifier: GPL-3.0-or-later
"""tomolab.race (python/src/tlpy-race.c: a race description run/tl-run-race-spec.h run by
run/tl-run-race-session.h, as the CLI and the window run it): the table's shape and update
counts, monotone times, epochs from the subsets, the metrics against the reference computed
here in numpy with PETRIC's formulas, the CSV, the CLI's numbers on the same race file (every
column but the seconds equal), keywords over a race file, progress and its stop, bad input."""
import csv
import io
import math
import subprocess

import numpy as np
import pytest

import tomolab as tl


@pytest.fixture(scope='module')
def scan(listmode, tmp_path_factory):
    path = tmp_path_factory.mktemp('race') / 'scan.tlm'
    listmode.save(str(path))
    return path


def petric(x, ref, obj, bg, voi):
    """PETRIC's metrics (SyneRBI PETRIC 2024, 'Metrics and thresholds') in numpy."""
    x, ref = x.astype(np.float64), ref.astype(np.float64)
    norm = ref[bg].mean()
    return (np.sqrt(np.mean((x[obj] - ref[obj]) ** 2)) / norm,
            np.sqrt(np.mean((x[bg] - ref[bg]) ** 2)) / norm,
            abs(x[voi].mean() - ref[voi].mean()) / norm)


def test_race_table(scan, grid, ctx):
    r = tl.race(scan, ['mlem', 'osem:subsets=4'], reference_algo='osem:subsets=4',
                reference_updates=40, grid=grid, updates=8, objective=True, context=ctx)
    ref = r['reference']
    assert ref.grid == grid and r['reference_updates'] == 40
    assert math.isfinite(r['reference_objective'])
    e = r['entrants']
    assert list(e) == ['mlem', 'osem:subsets=4']
    for label, subsets in (('mlem', 1), ('osem:subsets=4', 4)):
        t = e[label]
        np.testing.assert_array_equal(t['update'], np.arange(1, 9))
        np.testing.assert_array_equal(t['epoch'], np.arange(1, 9) / subsets)
        assert np.all(np.diff(t['seconds']) >= 0) and t['seconds'][0] > 0
        assert np.all(np.isfinite(t['objective'])) and np.all(np.isfinite(t['rmse']))
        assert np.all(np.isnan(t['background_rmse'])) and t['voi'] == {}
    # MLEM raises the log-likelihood; no entrant passes the reference (OSEM's own 40 updates)
    assert np.all(np.diff(e['mlem']['objective']) >= -1e-6 * abs(e['mlem']['objective'][-1]))
    rows = list(csv.reader(io.StringIO(r['csv'])))
    assert rows[0][:5] == ['label', 'update', 'seconds', 'epoch', 'objective']
    assert len(rows) == 1 + 16 and rows[2][0] == 'osem:subsets=4'


def test_race_metrics_against_numpy(scan, grid, ctx):
    # the reference: a 4-iteration OSEM run of the Solver (any image will do for the metrics)
    first = tl.race(scan, ['osem:subsets=4'], reference_algo='osem:subsets=4', reference_updates=16,
                    grid=grid, updates=1, context=ctx)
    ref = first['reference'].data
    z, y, x = np.indices(ref.shape)
    obj = ref > 0.05 * ref.max()
    bg = obj & (z == 1)
    voi = obj & (x < ref.shape[2] // 2)
    r = tl.race(scan, ['osem:subsets=4', 'mlem'], reference=first['reference'], object=obj,
                background=bg, vois={'left': voi}, updates=3, context=ctx)
    assert r['norm'] == pytest.approx(ref[bg].astype(np.float64).mean(), rel=1e-12)
    for label, t in r['entrants'].items():
        want = petric(t['image'].data, ref, obj, bg, voi)
        got = (t['rmse'][-1], t['background_rmse'][-1], t['voi']['left'][-1])
        np.testing.assert_allclose(got, want, rtol=1e-9)
        assert want[0] > 0 and not t['met'][-1]  # 3 updates from a flat start: far off
    assert petric(ref, ref, obj, bg, voi) == (0.0, 0.0, 0.0)


def test_race_bad_input(scan, grid, ctx):
    with pytest.raises(ValueError, match='reference'):
        tl.race(scan, ['mlem'], grid=grid, context=ctx)
    with pytest.raises(ValueError, match='a race entrant takes only'):
        tl.race(scan, ['osem:attenuation=mu.nii'], reference_algo='mlem', reference_updates=1,
                grid=grid, context=ctx)
    with pytest.raises(ValueError, match='1 to 8'):
        tl.race(scan, [], reference_algo='mlem', grid=grid, context=ctx)
    with pytest.raises(ValueError, match='no voxel'):
        tl.race(scan, ['mlem'], reference=np.ones(grid.shape, np.float32), grid=grid,
                object=np.zeros(grid.shape, np.float32), context=ctx)
    # the keys' own checks: the key, the value and what is expected (run/tl-run-race-spec.c)
    with pytest.raises(tl.InvalidArgument, match="race key 'updates' = '0': expected 1 to"):
        tl.race(scan, ['mlem'], reference_algo='mlem', grid=grid, updates=0, context=ctx)
    with pytest.raises(tl.InvalidArgument, match="race key 'until-target' = 'maybe'"):
        tl.race(scan, ['mlem'], reference_algo='mlem', grid=grid, until_target='maybe',
                context=ctx)
    with pytest.raises(ValueError, match='grid= .a Grid. or a reference image'):
        tl.race(scan, ['mlem'], reference_algo='mlem', object=np.ones(grid.shape), context=ctx)
    # randoms reaches the entrants (these data have no delayed events)
    with pytest.raises(ValueError, match='randoms = delayeds, but .* has no delayed events'):
        tl.race(scan, ['mlem'], reference_algo='mlem', grid=grid, randoms='delayeds',
                context=ctx)
    with pytest.raises(tl.InvalidArgument, match="randoms"):
        tl.race(scan, ['mlem'], reference_algo='mlem', grid=grid, randoms='prompts', context=ctx)
    off = tl.Grid(grid.dims, grid.voxel_mm, (0.0, 0.0, 0.0))
    with pytest.raises(tl.InvalidArgument, match='centred on the scanner'):
        tl.race(scan, ['mlem'], reference_algo='mlem', grid=off, context=ctx)


def test_cli_race(scan, grid, cli, tmp_path):
    out = tmp_path / 'race.csv'
    ref = tmp_path / 'ref.nii'
    grid_arg = '%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm)
    p = subprocess.run([cli, 'race', str(scan), '--grid', grid_arg, '--reference', str(ref),
                        '--reference-algo', 'osem:subsets=4', '--reference-updates', '8',
                        '--algo', 'mlem', '--algo', 'osem:subsets=4', '-n', '5', '--csv', str(out)],
                       check=True, timeout=300, capture_output=True, text=True)
    assert 'reference: osem:subsets=4, 8 updates' in p.stdout
    assert 'osem:subsets=4' in p.stdout.splitlines()[-1]
    rows = list(csv.reader(open(out)))
    assert len(rows) == 1 + 10
    assert tl.load_image(str(ref)).grid == grid
    bad = subprocess.run([cli, 'race', str(scan), '--algo', 'mlem'], capture_output=True, text=True)
    assert bad.returncode == 2 and '--reference IMAGE is required' in bad.stderr


def race_rows(text):
    """The CSV's rows without the wall-clock seconds (column 2)."""
    return [r[:2] + r[3:] for r in csv.reader(io.StringIO(text))]


def test_race_file_cli_and_python(scan, grid, cli, ctx, tmp_path):
    # one race file through the CLI and through Python: the same updates with the same
    # objectives, epochs and metrics (the same session code; as tests/check-race-doors.py
    # holds for the CLI and the window)
    race = tmp_path / 'small.race'
    race.write_text('data = %s\nalgos = mlem; osem:subsets=4; bsrem:subsets=4,prior=rdp,beta=0.1\n'
                    'reference-algo = osem:subsets=4\nreference-updates = 8\n'
                    'reference = %s\nupdates = 4\nobjective = true\ngrid = %dx%dx%d@%g,%g,%g\n'
                    % ((scan, tmp_path / 'ref-cli.nii') + grid.dims + grid.voxel_mm))
    subprocess.run([cli, 'race', '--race', str(race), '--csv', str(tmp_path / 'cli.csv')],
                   check=True, timeout=300, capture_output=True, text=True)
    r = tl.race(race_file=race, reference=tmp_path / 'ref-py.nii', csv=tmp_path / 'py.csv',
                context=ctx)
    cli_rows = race_rows((tmp_path / 'cli.csv').read_text())
    assert len(cli_rows) == 1 + 3 * 4 and cli_rows[0][:5] == ['label', 'update', 'epoch',
                                                              'objective', 'rmse']
    assert race_rows(r['csv']) == cli_rows
    assert (tmp_path / 'py.csv').read_text() == r['csv']
    assert r['reference_updates'] == 8 and r['rounds'] == 4
    np.testing.assert_array_equal(tl.load_image(str(tmp_path / 'ref-py.nii')).data,
                                  tl.load_image(str(tmp_path / 'ref-cli.nii')).data)
    np.testing.assert_array_equal(r['reference'].data,
                                  tl.load_image(str(tmp_path / 'ref-cli.nii')).data)
    # the keywords go over the file's keys, as the CLI's options do (check-race-doors 'keys')
    two = tl.race(race_file=race, updates=2, reference=tmp_path / 'ref-cli.nii',
                  reference_algo='none', context=ctx)
    assert race_rows(two['csv']) == [row for row in cli_rows
                                     if row[0] == 'label' or int(row[1]) <= 2]
    assert two['reference_updates'] == 0
    # a bad key in the file: its name, line, key and value
    bad = tmp_path / 'bad.race'
    bad.write_text('data = %s\nupdates = many\n' % scan)
    with pytest.raises(ValueError, match=r"bad\.race:2: race key 'updates' = 'many'"):
        tl.race(race_file=bad, context=ctx)


def test_race_progress(scan, grid, ctx):
    calls = []

    def progress(fraction, message):
        calls.append((fraction, message))
        return not message.startswith('race: round 2 ')  # stop after round 2

    r = tl.race(scan, ['mlem', 'osem:subsets=4'], reference_algo='osem:subsets=4',
                reference_updates=4, grid=grid, updates=5, context=ctx, progress=progress)
    rounds = [c for c in calls if c[1].startswith('race: round')]
    assert rounds == [(0.2, 'race: round 1 of 5'), (0.4, 'race: round 2 of 5')]
    assert r['rounds'] == 2
    for t in r['entrants'].values():
        np.testing.assert_array_equal(t['update'], [1, 2])


def test_race_kappa_and_seed(scan, grid, ctx, tmp_path):
    # kappa = 2 in every voxel weighs every RDP pair term by kappa_j kappa_k = 4: the race's
    # kappa= gives the images of beta x 4 without it (list mode sums atomically: to rounding)
    k = tmp_path / 'kappa.nii'
    tl.Image(np.full(grid.shape, 2, np.float32), grid).save(str(k))
    spec = 'bsrem:subsets=4,prior=rdp,epsilon=0.01,beta=%g'
    kw = dict(reference_algo='osem:subsets=4', reference_updates=1, grid=grid, updates=8,
              context=ctx)
    with_kappa = tl.race(scan, [spec % 5], kappa=k, **kw)['entrants'][spec % 5]['image'].data
    times_4 = tl.race(scan, [spec % 20], **kw)['entrants'][spec % 20]['image'].data
    plain = tl.race(scan, [spec % 5], **kw)['entrants'][spec % 5]['image'].data
    scale = np.abs(times_4).max()
    assert np.abs(with_kappa - times_4).max() <= 1e-4 * scale
    assert np.abs(plain - times_4).max() >= 1e-2 * scale  # the weights changed the images
    # the race's seed= is every entrant's; an entrant's own seed= wins
    # (svrg's first two steps are full-gradient ones, the same for every seed: of 8 updates,
    # 6 follow the seed; seeds 1 and 7 measured 8.2e-4 apart, relative, the same seed 0)
    svrg = 'svrg:subsets=4,prior=rdp,epsilon=0.01,beta=5'
    a = tl.race(scan, [svrg], seed=7, **kw)['entrants'][svrg]['image'].data
    b = tl.race(scan, [svrg + ',seed=7'], **kw)['entrants'][svrg + ',seed=7']['image'].data
    c = tl.race(scan, [svrg + ',seed=1'], seed=7, **kw)['entrants'][svrg + ',seed=1']['image'].data
    scale = np.abs(a).max()
    assert np.abs(a - b).max() <= 1e-4 * scale
    assert np.abs(a - c).max() >= 3e-4 * scale
    with pytest.raises((OSError, ValueError), match='kappa'):
        tl.race(scan, [spec % 5], kappa=str(tmp_path / 'none.nii'), **kw)
