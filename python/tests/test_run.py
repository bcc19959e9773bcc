# SPDX-License-Identifier: GPL-3.0-or-later
"""tomolab.Run: the run description of compute/run/ from Python: typed attributes, the text
form written and read back, refusals naming the key and value, files shared with
`tomolab-cli recon --run / --save-run` (and an image's sidecar), and the Solver a run makes
giving the image the explicit Solver call gives."""
import json
import subprocess

import numpy as np
import pytest

import tomolab as tl


def test_attributes_and_text_roundtrip(tmp_path):
    r = tl.Run(algorithm='bsrem', subsets=5, iterations=2, prior='rdp', beta=0.05, gamma=1.5,
               tof=True, tof_nsigma=2.5, filter='gauss:4', filter_every=5, data='scan.tlm',
               kernels=['pet_em=a.glsl'], calibration=1234.5, isotope='F18')
    assert (r.algorithm, r.subsets, r.iterations, r.prior) == ('bsrem', 5, 2, 'rdp')
    assert r.beta == 0.05 and r.gamma == 1.5 and r.tof is True and r.tof_nsigma == 2.5
    assert r.filter == 'gauss:4' and r.filter_every == 5 and r.kernels == ['pet_em=a.glsl']
    assert r.attenuation is None and r.duration is None and r.cache is True
    assert r.calibration == 1234.5
    r.validate()
    path = tmp_path / 'run.txt'
    r.save(path)
    back = tl.Run.load(path)
    assert back == r and back.text == r.text
    assert tl.Run.parse(r.text) == r
    # every key is in the text once
    for key, *_ in tl.Run.keys():
        assert r.text.count('\n%s = ' % key) == 1
    r.prior = None
    assert r.prior == 'none'
    r.calibration = None
    assert r.calibration is None


def test_refusals():
    r = tl.Run()
    with pytest.raises(tl.InvalidArgument, match="subsets.*'-3'"):
        r.subsets = -3
    with pytest.raises(tl.InvalidArgument, match="algorithm.*'magic'"):
        r.algorithm = 'magic'
    with pytest.raises(tl.InvalidArgument, match="projector.*'pencil'"):
        r.projector = 'pencil'
    with pytest.raises(AttributeError, match='colour'):
        r.colour = 3
    assert r.subsets == 0  # unchanged by the refused values
    with pytest.raises(tl.Error, match=r"run:2: key 'iterations' repeated"):
        tl.Run.parse('iterations = 2\niterations = 3\n')
    with pytest.raises(tl.Error, match='run:1: unknown key'):
        tl.Run.parse('smoothness = 2\n')
    r.tof_nsigma = 2.0
    with pytest.raises(tl.InvalidArgument, match='tof-nsigma'):
        r.validate()


def test_cli_files(cli, listmode, grid, tmp_path):
    """A run saved by the CLI loads here; one saved here runs in the CLI; the image's sidecar
    loads as a run."""
    tlm = tmp_path / 'scan.tlm'
    listmode.save(str(tlm))
    g = '%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm)
    # lavapipe's default threads: the back projections sum in fixed point, so the two runs are
    # bit-identical (compute/core/tl-fixed.h, tests/check-sidecar.py)
    subprocess.run([cli, 'recon', str(tlm), '--algo', 'osem', '-s', '2', '-n', '2', '--grid', g,
                    '-o', str(tmp_path / 'a.nii'), '-q', '--save-run', str(tmp_path / 'a.run')],
                   check=True, timeout=300)
    a = tl.Run.load(tmp_path / 'a.run')
    assert (a.algorithm, a.subsets, a.iterations, a.data) == ('osem', 2, 2, str(tlm))
    j = tl.Run.load(tmp_path / 'a.json')
    assert j.projector == 'siddon' and a.projector == 'auto'  # the sidecar resolves defaults
    j.projector = None
    assert j == a
    side = json.loads((tmp_path / 'a.json').read_text())
    assert side['ReconMethodName'] == 'OSEM'
    a.output = str(tmp_path / 'b.nii')
    a.save(tmp_path / 'b.run')
    subprocess.run([cli, 'recon', '--run', str(tmp_path / 'b.run'), '-q'], check=True,
                   timeout=300)
    assert (tmp_path / 'a.nii').read_bytes()[352:] == (tmp_path / 'b.nii').read_bytes()[352:]


def test_solver_from_run(ctx, listmode, grid, phantom):
    """The run's operator and Solver give the same image as the explicit calls."""
    r = tl.Run(algorithm='bsrem', subsets=2, iterations=2, prior='rdp', beta=0.01,
               relaxation=0.5, projector='joseph')
    g = '%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm)
    r.grid = g
    A = r.pet_operator(listmode, ctx=ctx)
    assert A.grid == grid and A.n_subsets == 2
    sv = r.solver(A)
    sv.run()
    B = tl.pet_operator(listmode, grid, projector='joseph', subsets=2, ctx=ctx)
    # the run leaves epsilon to PETRIC's rule: 1e-3 x the largest voxel of one OSEM epoch
    osem = tl.Solver(B, 'osem', iterations=1)
    osem.run()
    eps = 1e-3 * float(np.max(osem.image))
    ref = tl.Solver(B, 'bsrem', iterations=2, relaxation=0.5, prior='rdp', beta=0.01,
                    epsilon=eps)
    ref.run()
    assert np.array_equal(sv.image, ref.image)
    assert sv.algorithm == 'bsrem'
    fdk = tl.Run(modality='ct', algorithm='fdk')
    with pytest.raises(tl.InvalidArgument, match='fdk'):
        fdk.solver(A)


def test_corrections_never_dropped(ctx, listmode, grid, phantom, tmp_path):
    """A run's corrections are applied or refused by Run, never left out: its attenuation key
    is read as the mu-map (the same image as passing it), a normalisation is refused by
    pet_operator, randoms and scatter by solver unless the additive term is given."""
    act, mu = phantom
    mu_path = tmp_path / 'mu.nii'
    mu.save(str(mu_path))
    g = '%dx%dx%d@%g,%g,%g' % (grid.dims + grid.voxel_mm)
    r = tl.Run(algorithm='osem', subsets=2, iterations=1, grid=g, attenuation=str(mu_path))
    by_key = r.solver(r.pet_operator(listmode, ctx=ctx))
    by_key.run()
    given = r.solver(r.pet_operator(listmode, attenuation=tl.load_image(str(mu_path)), ctx=ctx))
    given.run()
    plain = tl.Run(algorithm='osem', subsets=2, iterations=1, grid=g)
    none = plain.solver(plain.pet_operator(listmode, ctx=ctx))
    none.run()
    assert np.array_equal(by_key.image, given.image)
    assert not np.array_equal(by_key.image, none.image)
    n = tl.Run(algorithm='osem', grid=g, norm=str(tmp_path / 'ring.tln'))
    with pytest.raises(tl.InvalidArgument, match='norm = .*ring.tln'):
        n.pet_operator(listmode, ctx=ctx)
    A = plain.pet_operator(listmode, ctx=ctx)
    for keys, want in ((dict(randoms='delayeds'), 'randoms = delayeds'),
                       (dict(scatter='sss', attenuation=str(mu_path)), 'scatter = sss')):
        c = tl.Run(algorithm='osem', subsets=2, iterations=1, grid=g, **keys)
        with pytest.raises(tl.InvalidArgument, match=want):
            c.solver(A)
    c = tl.Run(algorithm='osem', subsets=2, iterations=1, grid=g, randoms='delayeds')
    add = np.full(listmode.n_events, 1e-3, np.float32)
    sv = c.solver(A, additive=add)
    sv.run()
    assert np.asarray(sv.image).max() > 0
