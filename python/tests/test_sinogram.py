# SPDX-License-Identifier: GPL-3.0-or-later
"""PET sinograms with their geometry (tomolab.Sinogram, tomolab/sinogram.py) against
independent references: the STIR binning formulas written here in numpy (pet/data/tl-sinogram.h
states them), the bytes of a .hs/.s pair read with numpy by the header's own keys, the binned
list-mode operator of the same events, and the library's tl_sinogram_forward."""
import os
import re
import subprocess

import numpy as np
import pytest

import tomolab as tl
from conftest import rng


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def stir_reference(scanner, events, max_rd, positions=None, tangential=None, block=0):
    """Span 1, no mashing: for every view v and tangential index t STIR's detectors
    d1 = (v + floor(t/2)) mod N, d2 = (v - floor((t+1)/2) + N/2) mod N; an event (a, b) is in
    the bin whose (d1, d2) are its detectors, detector 1's ring r1, segment r2 - r1, axial
    position min(r1, r2); the lower crystal id is detector 1 when both orders match. Segments
    in STIR's file order, -max_rd .. max_rd. With block gaps (the mMR: N = 504 positions, blocks
    of 9 whose first is a gap, STIR's Scanner.cxx) a ring's crystal i sits at position
    (i // 8) * 9 + i % 8 + 1; `tangential` of the N positions are kept, centred."""
    per_ring = scanner.crystals_per_ring
    n = positions or per_ring
    nt = tangential or n

    def position(i):
        return (i // (block - 1)) * block + i % (block - 1) + 1 if block else i
    table = {}
    for v in range(n // 2):
        for t in range(-(nt // 2), nt - nt // 2):
            d1 = (v + t // 2) % n
            d2 = (v - (t + 1) // 2 + n // 2) % n
            table.setdefault((d1, d2), (v, t))
    segs = list(range(-max_rd, max_rd + 1))
    rings = scanner.n_rings
    ref = [np.zeros((n // 2, rings - abs(d), nt), np.float32) for d in segs]
    outside = 0
    for a, b in zip(events['a'].tolist(), events['b'].tolist()):
        a, b = min(a, b), max(a, b)
        ra, da, rb, db = a // per_ring, position(a % per_ring), b // per_ring, position(b % per_ring)
        if (da, db) in table:
            (v, t), r1, r2 = table[(da, db)], ra, rb
        elif (db, da) in table:
            (v, t), r1, r2 = table[(db, da)], rb, ra
        else:
            outside += 1
            continue
        if abs(r2 - r1) > max_rd:
            outside += 1
            continue
        ref[segs.index(r2 - r1)][v, min(r1, r2), t + nt // 2] += 1
    return segs, ref, outside


def test_from_listmode_equals_stir_formulas(listmode):
    sc = listmode.scanner
    s, outside = tl.Sinogram.from_listmode(listmode, return_outside=True)
    segs, ref, ref_out = stir_reference(sc, listmode.events, sc.max_ring_difference)
    assert s.n_segments == len(segs) and [lo for lo, _, _ in s.segments] == segs
    assert all(lo == hi for lo, hi, _ in s.segments) and s.span == 1 and s.view_mashing == 1
    assert (s.n_views, s.n_tangential) == (sc.crystals_per_ring // 2, sc.crystals_per_ring)
    assert (s.n_rings, s.n_detectors) == (sc.n_rings, sc.crystals_per_ring)
    for i in range(s.n_segments):
        assert s.segment(i).shape == ref[i].shape
        np.testing.assert_array_equal(s.segment(i), ref[i])
    assert outside == ref_out and float(s.data.sum()) + outside == listmode.n_events
    # SIRF's stacking: every segment's axial positions in turn, (sinograms, views, tangential)
    arr = s.as_array()
    assert arr.shape == s.shape == (sum(r.shape[1] for r in ref), s.n_views, s.n_tangential)
    np.testing.assert_array_equal(arr, np.concatenate([r.transpose(1, 0, 2) for r in ref]))
    np.testing.assert_array_equal(tl.Sinogram.from_array(s, arr).data, s.data)
    # a narrower acceptance: the rest counted outside
    s0, out0 = tl.Sinogram.from_listmode(listmode, max_ring_difference=0, return_outside=True)
    direct = ref[segs.index(0)]
    assert s0.n_segments == 1 and out0 == listmode.n_events - float(direct.sum())
    np.testing.assert_array_equal(s0.segment(0), direct)


def header_layout(hs):
    """The .hs keys as a numpy reader needs them: data file, per-segment (views, axial,
    tangential) sizes in the file's axis order, ring differences, scanner fields."""
    text = hs.read_text()

    def key(name):
        m = re.search(r'^\s*!?' + re.escape(name) + r'\s*:=\s*(.*)$', text, re.M | re.I)
        assert m, name
        return m.group(1).strip()

    def ints(v):
        return [int(x) for x in v.strip('{} ').split(',')]

    labels = {int(k): v.strip() for k, v in re.findall(r'matrix axis label\s*\[(\d)\]\s*:=\s*(.*)',
                                                          text, re.I)}
    assert [labels[k] for k in (4, 3, 2, 1)] == ['segment', 'view', 'axial coordinate',
                                                 'tangential coordinate']
    return dict(data=hs.parent / key('name of data file'), n_seg=int(key('matrix size [4]')),
                views=int(key('matrix size [3]')), axial=ints(key('matrix size [2]')),
                tang=int(key('matrix size [1]')),
                min_rd=ints(key('minimum ring difference per segment')),
                max_rd=ints(key('maximum ring difference per segment')),
                rings=int(key('Number of rings')),
                detectors=int(key('Number of detectors per ring')),
                radius_mm=float(key('Inner ring diameter (cm)')) * 5,
                ring_mm=float(key('Distance between rings (cm)')) * 10,
                order=key('imagedata byte order'), fmt=key('number format'),
                bytes=int(key('number of bytes per pixel')), offset=int(key('data offset in bytes[1]')))


def read_by_header(hs):
    h = header_layout(hs)
    assert (h['order'], h['fmt'], h['bytes']) == ('LITTLEENDIAN', 'float', 4)
    raw = np.fromfile(h['data'], dtype='<f4', offset=h['offset'])
    segs, k = [], 0
    for n_ax in h['axial']:
        size = h['views'] * n_ax * h['tang']
        segs.append(raw[k:k + size].reshape(h['views'], n_ax, h['tang']))
        k += size
    assert k == raw.size
    return h, segs


def test_load_equals_file_bytes(listmode, cli, tmp_path):
    # the CLI's conversion of the list mode into STIR projection data, read back two ways
    lm_path, hs = tmp_path / 'scan.tlm', tmp_path / 'scan.hs'
    listmode.save(str(lm_path))
    subprocess.run([cli, 'convert', str(lm_path), str(hs)], check=True, timeout=300,
                   capture_output=True)
    s = tl.Sinogram.load(hs)
    h, segs = read_by_header(hs)
    assert s.n_segments == h['n_seg'] == len(segs)
    assert [(lo, hi, n) for lo, hi, n in s.segments] == list(zip(h['min_rd'], h['max_rd'],
                                                                  h['axial']))
    assert (s.n_views, s.n_tangential, s.n_rings, s.n_detectors) == \
        (h['views'], h['tang'], h['rings'], h['detectors'])
    assert s.inner_radius_mm == pytest.approx(h['radius_mm'], rel=1e-6)
    assert s.ring_spacing_mm == pytest.approx(h['ring_mm'], rel=1e-6)
    for i, ref in enumerate(segs):
        np.testing.assert_array_equal(s.segment(i), ref)
    np.testing.assert_array_equal(s.data, tl.Sinogram.from_listmode(listmode).data)
    # written back by Python: the same bytes, the same geometry
    s2 = s.like(s.data * 2 + 0.5)
    s2.save(tmp_path / 'twice.hs')
    h2, segs2 = read_by_header(tmp_path / 'twice.hs')
    assert h2['axial'] == h['axial'] and h2['min_rd'] == h['min_rd']
    for i, ref in enumerate(segs2):
        np.testing.assert_array_equal(s2.segment(i), ref)
    back = tl.Sinogram.load(tmp_path / 'twice.hs')
    assert back.segments == s.segments and np.array_equal(back.data, s2.data)
    assert back.scanner.n_crystals == s.scanner.n_crystals == s.n_rings * s.n_detectors


def geometry_of(s, **change):
    """A Sinogram of s's geometry with some fields changed, zeros."""
    f = dict(segments=s.segments, n_views=s.n_views, n_tangential=s.n_tangential,
             n_rings=s.n_rings, n_detectors=s.n_detectors, inner_radius_mm=s.inner_radius_mm,
             doi_mm=s.doi_mm, ring_spacing_mm=s.ring_spacing_mm, bin_size_mm=s.bin_size_mm,
             view_offset_deg=s.view_offset_deg, name='changed')
    f.update(change)
    return tl.Sinogram(None, **f)


def test_operator_is_the_binned_operator(ctx, listmode, grid):
    s = tl.Sinogram.from_listmode(listmode)
    A = s.operator(grid, scanner=listmode.scanner, ctx=ctx)  # the octagon's crystals
    assert A.shape == (s.n_bins, grid.n_voxels)
    # span 1 without mashing: a bin is one crystal pair, so the back projection of the counts
    # is the binned list-mode operator's back projection of its histogram
    B = tl.pet_operator(listmode, grid, binned=True, projector='siddon', ctx=ctx)
    bins = B.records()
    pairs, per_bin = s.crystal_pairs()
    assert per_bin.max() == 1 and len(pairs) == int(per_bin.sum())
    # the t = -N/2 bins of segment 0 pair a crystal with itself: no line, left out
    same = pairs[:, 0] == pairs[:, 1]
    assert int(same.sum()) == s.n_views * s.n_rings
    assert len(bins) == int((s.data > 0).sum())
    assert rel(A.T @ s, B.T @ bins['count']) <= 1e-5
    # forward: each event's bin holds its pair's projection
    x = rng(3).random(grid.shape, dtype=np.float32)
    y = s.like(A @ x)
    bin_of_pair = np.repeat(np.arange(s.n_bins), per_bin)
    key = {(int(a), int(b)): k for (a, b), k in zip(pairs, bin_of_pair)}
    idx = np.array([key.get((int(a), int(b)), key.get((int(b), int(a)), -1))
                    for a, b in zip(bins['a'], bins['b'])])
    assert (idx >= 0).all()
    assert rel(y.data[idx], B @ x) <= 1e-6
    # adjoint and algebra: <A x, w> = <x, A^T w>, (A + 2A)^T w = 3 A^T w, a Sinogram as input
    w = s.like(rng(4).random(s.n_bins, dtype=np.float32))
    lhs = float(np.dot(y.data.astype(np.float64), w.data))
    rhs = float(np.dot(x.reshape(-1).astype(np.float64), (A.T @ w).reshape(-1)))
    assert abs(lhs - rhs) <= 1e-5 * abs(lhs)
    assert rel((A + 2 * A).T @ w, 3 * (A.T @ w.data)) <= 1e-6
    assert y.segment(1).shape == s.segment(1).shape and y.segments == s.segments


def test_operator_equals_library_forward(ctx, listmode, grid):
    # the library's own forward projection into a sinogram (Siddon, pet/tl-sinogram-model.h),
    # on a geometry without STIR's t = -N/2 column (whose rd-0 bins pair a crystal with itself,
    # which tl_sinogram_forward refuses)
    s = tl.Sinogram.from_listmode(listmode, max_ring_difference=1)
    g = geometry_of(s, n_tangential=s.n_tangential - 8)
    x = rng(6).random(grid.shape, dtype=np.float32)
    ref = tl._tomolab._sinogram_forward(g, tl.Image(x, grid), ctx)
    assert rel(g.operator(grid, ctx=ctx) @ x, ref) <= 1e-6


def test_view_mashing_sums_views(ctx, listmode, grid):
    # the same geometry with views mashed by 2: each bin holds the pairs of views 2v and 2v+1
    s = tl.Sinogram.from_listmode(listmode, max_ring_difference=1)
    m = geometry_of(s, n_views=s.n_views // 2)
    assert m.view_mashing == 2 and m.scanner.n_crystals == s.scanner.n_crystals
    x = rng(5).random(grid.shape, dtype=np.float32)
    y1 = s.like(s.operator(grid, ctx=ctx) @ x)
    ym = m.like(m.operator(grid, ctx=ctx) @ x)
    _, n1 = s.crystal_pairs()
    _, nm = m.crystal_pairs()
    for i in range(s.n_segments):
        np.testing.assert_array_equal(m.like(nm.astype(np.float32)).segment(i),
                                      s.like(n1.astype(np.float32)).segment(i)[0::2] +
                                      s.like(n1.astype(np.float32)).segment(i)[1::2])
        want = y1.segment(i)[0::2] + y1.segment(i)[1::2]
        assert rel(ym.segment(i), want) <= 1e-6


def test_refused(listmode, tmp_path):
    s = tl.Sinogram.from_listmode(listmode)
    with pytest.raises(ValueError, match='the geometry holds'):
        s.like(np.zeros(5))
    with pytest.raises(ValueError, match='shape'):
        tl.Sinogram.from_array(s, np.zeros((1, 2, 3)))
    with pytest.raises(IndexError, match='segment 99'):
        s.segment(99)
    with pytest.raises(ValueError, match='ring difference 9'):
        s.segment_index(9)
    bad = s.like()
    bad.segments = ((0, 0, 3),)
    with pytest.raises(tl.FormatError, match='axial positions'):
        bad.save(tmp_path / 'bad.hs')
    with pytest.raises(tl.FileError):
        tl.Sinogram.load(tmp_path / 'missing.hs')
    with pytest.raises(ValueError, match='max_ring_difference -3'):
        tl.Sinogram.from_listmode(listmode, max_ring_difference=-3)
    with pytest.raises(ValueError, match='crystals'):
        s.operator(tl.Grid.centred((4, 4, 1), (1.0, 1.0, 1.0)),
                   scanner=tl.Scanner.preset('dual-head'))
    dual = tl.Scanner.preset('dual-head')
    act, _ = tl.phantom('cylinder', tl.Grid.centred((8, 8, 2), (3.0, 3.0, 4.0)), radius_mm=9)
    lm = tl.Listmode.simulate(dual, act, None, events=50, seed=3, threads=1)
    with pytest.raises(tl.UnsupportedError, match='ring scanner'):
        tl.Sinogram.from_listmode(lm)


MMR = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data', 'mmr',
                   'PET_ACQ_small.l.hdr.STIR')


def test_real_mmr_listmode(cli, tmp_path):
    # the real Siemens mMR list mode (../shared/data/mmr): its prompts binned by Python equal
    # STIR's formulas in numpy, and the CLI's STIR file of the same data read by its header
    if not os.path.exists(MMR):
        pytest.skip(f'{MMR}: the shared data are not here')
    lm = tl.Listmode.load(MMR)
    sc = lm.scanner
    s, outside = tl.Sinogram.from_listmode(lm, max_ring_difference=2, return_outside=True)
    # STIR's mMR: 504 positions (56 blocks of 9, the first a gap), 252 views, 344 bins
    assert (s.n_rings, s.n_detectors, s.n_views, s.n_tangential) == (64, 504, 252, 344)
    segs, ref, ref_out = stir_reference(sc, lm.events, 2, positions=504, tangential=344, block=9)
    assert [lo for lo, _, _ in s.segments] == segs and outside == ref_out
    for i in range(s.n_segments):
        np.testing.assert_array_equal(s.segment(i), ref[i])
    hs = tmp_path / 'mmr.hs'
    subprocess.run([cli, 'convert', MMR, str(hs), '--max-ring-difference', '0'], check=True,
                   timeout=300, capture_output=True)
    h, file_segs = read_by_header(hs)
    assert h['axial'] == [64] and h['detectors'] == 504
    np.testing.assert_array_equal(file_segs[0], ref[segs.index(0)])
    np.testing.assert_array_equal(tl.Sinogram.load(hs).segment(0), ref[segs.index(0)])
