# SPDX-License-Identifier: GPL-3.0-or-later
"""CT preprocessing (tomolab.normalize, minus_log, find_centre, remove_stripes) against
independent references: numpy's float64 Beer-Lambert, the CLI's own reading of the real tooth
scan (tomolab-cli convert, ct-recon --centre auto), a numpy transcription of the sorting-based
stripe removal, and the stripe power of a sinogram with added stripes."""
import os
import re
import subprocess

import numpy as np
import pytest

import tomolab as tl

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
TOOTH = os.path.join(ROOT, '..', 'shared', 'data', 'tooth', 'tooth.h5')


def tooth_raw():
    h5py = pytest.importorskip('h5py')  # Debian python3-h5py (scripts/install-deps.sh)
    if not os.path.exists(TOOTH):
        pytest.skip(f'{TOOTH}: the shared data are not here')
    with h5py.File(TOOTH, 'r') as f:
        return (f['/exchange/data'][:], f['/exchange/data_white'][:],
                f['/exchange/data_dark'][:], f['/exchange/theta'][:])


def test_normalize_reference():
    rng = np.random.default_rng(4)
    flats = rng.uniform(900, 1000, (5, 3, 4)).astype(np.float32)
    darks = rng.uniform(90, 110, (3, 3, 4)).astype(np.float32)
    data = rng.uniform(80, 1000, (7, 3, 4)).astype(np.float32)
    darks[:, 0, 0] = flats[:, 0, 0] = 100.0      # a dead pixel: W - D = 0, clamped
    data[2, 1, 1] = np.nan                       # NaN: clamped
    w = flats.astype(np.float64).mean(0)
    d = darks.astype(np.float64).mean(0)
    t = (data - d) / (w - d)
    bad = ~(t >= 1e-3)
    bad |= ~(w - d > 0)[None]
    t_ref = np.where(bad, 1e-3, t)
    t_got = tl.normalize(data, flats, darks, floor=1e-3)
    assert t_got.shape == data.shape and t_got.dtype == np.float32
    np.testing.assert_allclose(t_got, t_ref.astype(np.float32), rtol=0, atol=0)
    p_got = tl.normalize(data, flats, darks, floor=1e-3, log=True)
    np.testing.assert_allclose(p_got, (-np.log(t_ref)).astype(np.float32), rtol=0, atol=0)
    np.testing.assert_allclose(tl.minus_log(t_got, floor=1e-3),
                               -np.log(np.maximum(t_got.astype(np.float64), 1e-3)), atol=1e-6)
    # without darks: zero; a single flat image as a 2-D array
    np.testing.assert_allclose(tl.normalize(data[0], flats[0]), np.maximum(
        data[0] / flats[0].astype(np.float64), 1e-6).astype(np.float32), atol=0, rtol=0)


def test_normalize_refused():
    with pytest.raises(ValueError, match='flats'):
        tl.normalize(np.ones((2, 3, 4)), np.ones((1, 3, 5)))
    with pytest.raises(tl.InvalidArgument, match='floor 0'):
        tl.normalize(np.ones((2, 3, 4)), np.ones((1, 3, 4)), floor=0)
    with pytest.raises(tl.InvalidArgument, match='floor 2'):
        tl.minus_log(np.ones(3), floor=2)


def test_tooth_equals_cli(cli, ctx, tmp_path):
    data, white, dark, theta = tooth_raw()
    p = tl.normalize(data, white, dark, log=True)          # the CLI's floor, 1e-6
    # the CLI's reading of the same file: Data Exchange -> .tlct
    out = tmp_path / 'tooth.tlct'
    subprocess.run([cli, 'convert', TOOTH, str(out)], check=True, timeout=300,
                   stdout=subprocess.DEVNULL)
    ref = tl.CtData.load(str(out)).projections
    assert p.shape == ref.shape == (181, 2, 640)
    assert float(np.abs(p - ref).max()) <= 1e-6
    # the centre: the CLI's --centre auto (printed to 3 decimals) and the dataset layer's
    # search that it runs (tomolab.open: the same call), which must agree to 1e-6
    c = tl.find_centre(p, np.deg2rad(theta))
    assert c['row'] == 1 and c['evaluations'] > 0
    assert abs(c['centre'] - tl.open(TOOTH).centre) <= 1e-6
    r = subprocess.run([cli, 'ct-recon', TOOTH, '--centre', 'auto', '--algo', 'fbp', '--grid',
                        '8x8x1@1', '-o', str(tmp_path / 'tooth.nii')], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r'centre of rotation ([0-9.]+) px', r.stderr)
    assert m, r.stderr
    assert abs(c['centre'] - float(m.group(1))) <= 5e-4


def test_centre_of_simulated_scan(ctx):
    # a centred phantom's exact line integrals: the axis projects onto the middle column;
    # a CtData and its projections with the angles give the same search
    geom = tl.CtGeometry.parallel(90, 48, 2, 1.0, 1.0)
    scan = tl.CtData.simulate(geom, 'shepp-logan', tl.Grid.centred((48, 48, 2), (1.0, 1.0, 1.0)),
                              scale=0.02)
    c = tl.find_centre(scan)
    assert abs(c['centre'] - 23.5) <= 0.25, c
    theta = np.arange(90) * np.pi / 90
    assert abs(tl.find_centre(scan.projections, theta)['centre'] - c['centre']) <= 1e-6


def sorting_reference(sino, size):
    """Vo et al. (2018), sorting-based, written with numpy: sort each column over the views,
    median across `size` columns (edges repeated), values back to their views."""
    from numpy.lib.stride_tricks import sliding_window_view
    order = np.argsort(sino, axis=0, kind='stable')
    srt = np.take_along_axis(sino, order, axis=0)
    h = size // 2
    pad = np.pad(srt, ((0, 0), (h, h)), mode='edge')
    med = np.median(sliding_window_view(pad, size, axis=1), axis=-1).astype(np.float32)
    out = np.empty_like(sino)
    np.put_along_axis(out, order, med, axis=0)
    return out


@pytest.mark.parametrize('size', [3, 9, 21, 75])
def test_stripes_reference(size):
    rng = np.random.default_rng(size)
    p = rng.normal(size=(40, 3, 37)).astype(np.float32)
    p[:, 1, 5] = p[7, 1, 5]                      # a constant column: ties in the sort
    got = tl.remove_stripes(p, size=size)
    for r in range(3):
        assert np.array_equal(got[:, r, :], sorting_reference(p[:, r, :], size))
    assert np.array_equal(tl.remove_stripes(p[:, 0, :], size=size), got[:, 0, :])


def stripe_power(residual):
    """What a residual has in common over all views (a stripe's signature: the column's
    median over the views), minus its local mean over 9 columns: the power of what a
    reconstruction would turn into rings."""
    m = np.median(residual.astype(np.float64), axis=0)
    k = 9
    smooth = np.convolve(np.pad(m, (k // 2, k // 2), mode='edge'), np.ones(k) / k, mode='valid')
    return float(((m - smooth) ** 2).sum())


def test_stripes_removed_from_tooth():
    # the tooth's line integrals (both rows) plus 40 stripes of 0.05 .. 0.15 at random columns
    data, white, dark, _ = tooth_raw()
    clean = tl.normalize(data, white, dark, log=True)
    rng = np.random.default_rng(7)
    stripes = np.zeros(clean.shape[1:], np.float32)
    for r in range(clean.shape[1]):
        cols = rng.choice(clean.shape[2], 40, replace=False)
        stripes[r, cols] = rng.uniform(0.05, 0.15, 40) * rng.choice([-1, 1], 40)
    noisy = clean + stripes[None]
    out = tl.remove_stripes(noisy)
    assert not np.array_equal(noisy, tl.remove_stripes(noisy, size=3)) and noisy is not out
    for r in range(clean.shape[1]):
        before = stripe_power(noisy[:, r] - clean[:, r])
        after = stripe_power(out[:, r] - clean[:, r])
        print(f'row {r}: stripe power {before:.4g} -> {after:.4g} ({before / after:.1f}x)')
        assert after * 10 <= before


def added_stripes(shape, seed, n=40):
    """n stripes of 0.05 .. 0.15 (either sign) at random columns of each row, as the tooth's."""
    rng = np.random.default_rng(seed)
    stripes = np.zeros(shape, np.float32)
    for r in range(shape[0]):
        cols = rng.choice(shape[1], n, replace=False)
        stripes[r, cols] = rng.uniform(0.05, 0.15, n) * rng.choice([-1, 1], n)
    return stripes


@pytest.mark.parametrize('seed', [7, 8, 9])
def test_stripes_removed_from_synthetic(ctx, seed):
    # issue 30: a synthetic sinogram with added stripes, residual stripe power >= 10x lower.
    # The Shepp-Logan phantom's exact line integrals (tomolab's own parallel-beam projector,
    # 180 views over 180 degrees, 256 columns, 2 rows), peak ~2.5 like the tooth's -log data
    geom = tl.CtGeometry.parallel(180, 256, 2, 1.0, 1.0)
    scan = tl.CtData.simulate(geom, 'shepp-logan', tl.Grid.centred((256, 256, 2), (1.0, 1.0, 1.0)),
                              scale=0.01)
    clean = scan.projections
    assert clean.shape == (180, 2, 256) and 1.0 < float(clean.max()) < 5.0
    noisy = clean + added_stripes(clean.shape[1:], seed)[None]
    out = tl.remove_stripes(noisy)
    for r in range(clean.shape[1]):
        before = stripe_power(noisy[:, r] - clean[:, r])
        after = stripe_power(out[:, r] - clean[:, r])
        print(f'seed {seed} row {r}: stripe power {before:.4g} -> {after:.4g} '
              f'({before / after:.1f}x)')
        assert after * 10 <= before


def dead_reference(sino, size=51, ratio=0.1):
    """Dead columns (tl-ct-stripe.h) written with numpy: angular variation below ratio x the
    median over size columns (edges repeated), replaced by the line between the nearest live
    columns. Returns (result, dead mask)."""
    from numpy.lib.stride_tricks import sliding_window_view
    v = np.abs(np.diff(sino.astype(np.float64), axis=0)).mean(0)
    h = size // 2
    m = np.median(sliding_window_view(np.pad(v, (h, h), mode='edge'), size), axis=-1)
    dead = (m > 0) & (v < ratio * m)
    out = sino.copy()
    if dead.any() and not dead.all():
        live = np.flatnonzero(~dead)
        for r in range(sino.shape[0]):
            out[r, dead] = np.interp(np.flatnonzero(dead), live, sino[r, live].astype(np.float64))
    return out, dead


def with_dead_columns(clean, seed, n=3):
    rng = np.random.default_rng(200 + seed)
    noisy, cols = clean.copy(), []
    for r in range(clean.shape[1]):
        c = np.sort(rng.choice(np.arange(30, clean.shape[2] - 30), n, replace=False))
        noisy[:, r, c] = rng.uniform(0, 1, n).astype(np.float32)
        cols.append(c)
    return noisy, cols


def test_dead_columns_reference():
    data, white, dark, _ = tooth_raw()
    clean = tl.normalize(data, white, dark, log=True)
    noisy, cols = with_dead_columns(clean, 1)
    got = tl.remove_stripes(noisy, size=3, dead=True)
    for r in range(clean.shape[1]):
        ref, dead = dead_reference(noisy[:, r])
        assert np.array_equal(np.flatnonzero(dead), cols[r])     # found, and nothing else
        np.testing.assert_allclose(got[:, r], tl.remove_stripes(ref, size=3), atol=1e-6, rtol=0)
    # nothing taken where no column is dead: the clean tooth, a synthetic Shepp-Logan
    geom = tl.CtGeometry.parallel(180, 256, 2, 1.0, 1.0)
    sl = tl.CtData.simulate(geom, 'shepp-logan', tl.Grid.centred((256, 256, 2), (1.0, 1.0, 1.0)),
                            scale=0.01).projections
    for p in (clean, sl):
        assert np.array_equal(tl.remove_stripes(p, dead=True), tl.remove_stripes(p))


def test_dead_columns_repaired():
    # 3 dead columns of constant value per row of the real tooth: the error in those columns
    # after dead-column removal + sorting at least 10x below the sorting's alone
    data, white, dark, _ = tooth_raw()
    clean = tl.normalize(data, white, dark, log=True).astype(np.float64)
    for seed in range(3):
        noisy, cols = with_dead_columns(clean.astype(np.float32), seed)
        plain, both = tl.remove_stripes(noisy), tl.remove_stripes(noisy, dead=True)
        for r in range(clean.shape[1]):
            def err(p):
                return float(((p[:, r, cols[r]] - clean[:, r, cols[r]]) ** 2).sum())
            print(f'seed {seed} row {r}: dead columns squared error {err(noisy):.4g} -> '
                  f'sorting {err(plain):.4g}, dead + sorting {err(both):.4g} '
                  f'({err(plain) / err(both):.0f}x)')
            assert err(both) * 10 <= err(plain)


def test_stripes_refused():
    with pytest.raises(tl.InvalidArgument, match='ratio 1.5'):
        tl.remove_stripes(np.ones((5, 8)), dead=True, dead_ratio=1.5)
    with pytest.raises(tl.InvalidArgument, match='dead-column removal.*median window 4'):
        tl.remove_stripes(np.ones((5, 8)), dead=True, dead_size=4)
    with pytest.raises(tl.InvalidArgument, match='median window 4'):
        tl.remove_stripes(np.ones((5, 8)), size=4)
    bad = np.ones((5, 8), np.float32)
    bad[2, 3] = np.inf
    with pytest.raises(tl.InvalidArgument, match='view 2, row 0, column 3'):
        tl.remove_stripes(bad, size=3)
    with pytest.raises(ValueError, match='axes'):
        tl.remove_stripes(np.ones(5))
    with pytest.raises(TypeError, match='theta'):
        tl.find_centre(np.ones((4, 2, 8)))
    with pytest.raises(ValueError, match='theta has 3 angles'):
        tl.find_centre(np.ones((4, 2, 8)), np.zeros(3))
