# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress of long Python calls (python/src/tlpy-progress.c, docs/python.md "Progress"; issue
28 item 3): real long-ish calls report callable(fraction, message) with the GIL held, the
fractions of a step rise to 1, and a callable that returns False (or raises) stops the work.

- the CT centre search on the real tooth (the library's step 'centre of rotation search'), and
  tomolab.open of it (the Data Exchange reader's step, then the search);
- a sensitivity image computed afresh (no cache) through the module's hook;
- Solver.run's sub-iterations; a False there stops the run with the last complete image."""
import os
import threading
import time

import numpy as np
import pytest

import tomolab as tl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOTH = os.path.join(ROOT, '..', 'shared', 'data', 'tooth', 'tooth.h5')


@pytest.fixture
def every_update():
    """Reports at every update (interval 0), the module's hook cleared around the test."""
    old = tl.set_progress(None, interval=0)
    yield
    tl.set_progress(old, interval=0.25)


class Recorder:
    def __init__(self, stop_after=None):
        self.calls, self.stop_after = [], stop_after
        self.threads = set()

    def __call__(self, fraction, message):
        self.threads.add(threading.get_ident())
        self.calls.append((fraction, message))
        return not (self.stop_after is not None and len(self.calls) >= self.stop_after)

    def fractions(self, step):
        return [f for f, m in self.calls if m.startswith(step + ':')]


def rising_to_one(fr, known=2):
    """None (total not known yet) only before the first fraction; then at least `known`
    fractions in 0..1, never falling, the last 1."""
    k = next((i for i, f in enumerate(fr) if f is not None), len(fr))
    f = fr[k:]
    assert len(f) >= known, fr
    assert all(x is not None and 0 <= x <= 1 for x in f), fr
    assert all(b >= a for a, b in zip(f, f[1:])), fr
    assert f[-1] == 1.0, fr


@pytest.fixture(scope='module')
def tooth():
    if not os.path.exists(TOOTH):
        pytest.fail('the shared real data are missing: ' + TOOTH)
    return tl.CtData.load(TOOTH)


def test_centre_search_reports_and_cancels(ctx, tooth, every_update):
    rec = Recorder()
    t0 = time.monotonic()
    full = tl.find_centre(tooth, progress=rec)
    t_full = time.monotonic() - t0
    fr = rec.fractions('centre of rotation search')
    print('centre search %.2f s, %d reports: %s' % (t_full, len(fr), fr))
    rising_to_one(fr)
    assert len(fr) == len(rec.calls) and len(fr) >= 4  # one step, several updates
    assert rec.threads == {threading.get_ident()}  # delivered on the caller's thread
    assert '%' in rec.calls[-1][1]
    # tomolab.open reports its reading, then the same search (the dataset layer's, the same
    # centre: reporting changes nothing)
    rec = Recorder()
    ds = tl.open(TOOTH, progress=rec)
    print('open: %d reports, steps %s' % (len(rec.calls), sorted({m.split(':')[0]
                                                                  for f, m in rec.calls})))
    rising_to_one(rec.fractions('reading Data Exchange file'), known=1)  # a total at the end
    rising_to_one(rec.fractions('centre of rotation search'))
    assert ds.kind == 'ct' and abs(ds.centre - full['centre']) <= 1e-6
    # False at the second report: the search stops there (far sooner than the whole search)
    stop = Recorder(stop_after=2)
    t0 = time.monotonic()
    with pytest.raises(tl.Cancelled):
        tl.find_centre(tooth, progress=stop)
    t_stop = time.monotonic() - t0
    print('cancelled after %.2f s of %.2f s' % (t_stop, t_full))
    assert len(stop.calls) == 2  # nothing reported after the False
    assert t_stop < 0.6 * t_full
    # an exception in the callable stops the call too, and propagates
    def boom(f, m):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        tl.find_centre(tooth, progress=boom)
    # the next call runs normally: nothing left cancelled (a small simulated scan: a centred
    # phantom's axis projects onto the middle column, as in test_ctprep.py)
    geom = tl.CtGeometry.parallel(90, 48, 2, 1.0, 1.0)
    scan = tl.CtData.simulate(geom, 'shepp-logan', tl.Grid.centred((48, 48, 2), (1.0, 1.0, 1.0)),
                              scale=0.02)
    assert abs(tl.find_centre(scan, progress=Recorder())['centre'] - 23.5) <= 0.25


def test_sensitivity_through_the_hook(ctx, listmode, grid, every_update):
    rec = Recorder()
    assert tl.set_progress(rec) is None
    try:
        A = tl.pet_operator(listmode, grid, use_cache=False, ctx=ctx)
        s = A.sensitivity()
    finally:
        assert tl.set_progress(None) is rec
    fr = rec.fractions('sensitivity image')
    print('sensitivity: %d reports, last %r' % (len(fr), rec.calls[-1]))
    rising_to_one(fr)
    assert float(s.sum()) > 0
    # progress= of the call wins over the hook (a new operator: A keeps its image)
    own, other = Recorder(), Recorder()
    tl.set_progress(other)
    try:
        B = tl.pet_operator(listmode, grid, projector='joseph', use_cache=False, ctx=ctx)
        np.testing.assert_array_equal(B.sensitivity(progress=own) > 0, s > 0)
    finally:
        tl.set_progress(None)
    rising_to_one(own.fractions('sensitivity image'))
    assert other.calls == []
    with pytest.raises(TypeError, match='progress'):
        A.sensitivity(progress=3)


def test_solver_run_progress(ctx, listmode, grid, every_update):
    A = tl.pet_operator(listmode, grid, subsets=2, ctx=ctx)
    rec = Recorder()
    sv = tl.Solver(A, 'osem', iterations=3, objective='never')
    assert sv.run(progress=rec) == 6
    fr = [f for f, m in rec.calls]
    assert fr == pytest.approx([1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0])
    assert all(m.startswith('reconstruction: sub-iteration') for f, m in rec.calls)
    # False after the second sub-iteration stops the run there, the image complete
    stop = Recorder(stop_after=2)
    sv2 = tl.Solver(A, 'osem', iterations=3, objective='never')
    assert sv2.run(progress=stop) == 2
    assert sv2.sub_iterations == 2 and np.isfinite(sv2.image).all()
    # the hook reports a run too
    hook = Recorder()
    tl.set_progress(hook)
    try:
        tl.Solver(A, 'osem', iterations=1, objective='never').run()
    finally:
        tl.set_progress(None)
    assert [f for f, m in hook.calls if m.startswith('reconstruction')] == [0.5, 1.0]
