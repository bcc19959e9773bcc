# SPDX-License-Identifier: GPL-3.0-or-later
"""Round trips through the library's readers and writers: images in every format
tl_image_load/tl_image_save know (by file name), scanners, list mode and CT scans."""
import numpy as np
import pytest

import tomolab as tl
from conftest import rng


@pytest.mark.parametrize('name', ['im.nii', 'im.nii.gz', 'im.raw'])
def test_image_round_trip(tmp_path, name):
    g = tl.Grid((7, 5, 3), (1.5, 2.0, 2.5), (-4.5, -4.0, 1.25))
    data = rng(9).random(g.shape, dtype=np.float32) * 100 - 20
    tl.save_image(str(tmp_path / name), data, g)
    back = tl.load_image(str(tmp_path / name))
    assert back.grid == g
    assert back.data.shape == (3, 5, 7) and back.data.dtype == np.float32
    np.testing.assert_array_equal(back.data, data)
    # x is the fastest axis: element [z, y, x]
    assert back.data[2, 4, 6] == data.ravel()[6 + 7 * (4 + 5 * 2)]
    tl.Image(data, g).save(str(tmp_path / ('2' + name)))
    np.testing.assert_array_equal(tl.load_image(str(tmp_path / ('2' + name))).data, data)


def test_scanner_round_trip(tmp_path, scanner):
    scanner.save(str(tmp_path / 's.txt'))
    back = tl.Scanner.load(str(tmp_path / 's.txt'))
    assert back.n_crystals == scanner.n_crystals == 256
    np.testing.assert_array_equal(back.crystals, scanner.crystals)
    assert tl.Scanner.from_text(scanner.to_text()).tof_bins == 5


def test_listmode_round_trip(tmp_path, listmode):
    listmode.save(str(tmp_path / 'a.tlm'))
    back = tl.Listmode.load(str(tmp_path / 'a.tlm'))
    assert back.n_events == listmode.n_events and back.has_tof
    np.testing.assert_array_equal(back.events, listmode.events)
    ev = back.events
    assert (ev['a'] < 256).all() and (ev['b'] < 256).all() and (np.abs(ev['tof_bin']) <= 2).all()
    h = back.histogram()
    assert h['count'].sum() == back.n_events


def test_ct_round_trip(ctx, tmp_path):
    geom = tl.CtGeometry.parallel(12, 16, 1, 1.0, 1.0)
    g = tl.Grid.centred((12, 12, 1), (1.0, 1.0, 1.0))
    d = tl.CtData.simulate(geom, 'shepp-logan', g, ctx=ctx)
    d.save(str(tmp_path / 'a.tlct'))
    back = tl.CtData.load(str(tmp_path / 'a.tlct'))
    np.testing.assert_array_equal(back.projections, d.projections)
    np.testing.assert_allclose(back.geometry.matrices, geom.matrices, rtol=1e-12)
    geom.save(str(tmp_path / 'g.txt'))
    assert tl.CtGeometry.load(str(tmp_path / 'g.txt')).n_views == 12
