# SPDX-License-Identifier: GPL-3.0-or-later
"""Every notebook of examples/notebooks runs, top to bottom, in a fresh Jupyter kernel (nbclient,
ipykernel: Debian python3-nbclient, python3-ipykernel), so the lessons never rot: each asserts
its own figures of merit in a cell (an AssertionError fails this test with the cell's
traceback), and each must produce its plots (matplotlib's inline PNGs, counted here).

The kernel is this interpreter (sys.executable) with the suite's environment (PYTHONPATH to
the build tree, TOMOLAB_VALIDATE=1), started in the notebooks' folder as Jupyter would; a
Vulkan validation message in the kernel makes tomolab raise there."""
import glob
import os
import sys

import pytest

NOTEBOOKS = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'notebooks')
PATHS = sorted(glob.glob(os.path.join(NOTEBOOKS, '*.ipynb')))
# the plots each notebook draws (plt.show() calls): all of them must come out as PNGs
FIGURES = {'01-projection': 2, '02-subsets-noise': 1, '03-regularisation': 1, '04-tof': 1,
           '05-attenuation': 1, '06-ct-tooth': 2}


def test_notebooks_found():
    names = {os.path.basename(p)[:-6] for p in PATHS}
    assert names == set(FIGURES), names


@pytest.mark.parametrize('path', PATHS, ids=lambda p: os.path.basename(p)[:-6])
def test_notebook_runs(path):
    nbformat = pytest.importorskip('nbformat')
    nbclient = pytest.importorskip('nbclient')
    pytest.importorskip('ipykernel')
    pytest.importorskip('matplotlib')
    from jupyter_client.manager import KernelManager
    name = os.path.basename(path)[:-6]
    if name == '06-ct-tooth' and not os.path.exists(
            os.path.join(NOTEBOOKS, '..', '..', '..', 'shared', 'data', 'tooth', 'tooth.h5')):
        pytest.skip('../shared/data/tooth/tooth.h5: the shared data are not here')
    nb = nbformat.read(path, as_version=4)
    # this interpreter as the kernel, whatever `python3` the kernel spec would find on PATH
    km = KernelManager(kernel_name='python3')
    km.kernel_spec.argv[0] = sys.executable
    env = dict(os.environ, MPLBACKEND='module://matplotlib_inline.backend_inline')
    client = nbclient.NotebookClient(nb, km=km, timeout=300, allow_errors=False,
                                     resources={'metadata': {'path': NOTEBOOKS}})
    client.execute(env=env)
    pngs = sum(1 for c in nb.cells if c.cell_type == 'code' for o in c.get('outputs', [])
               if 'image/png' in o.get('data', {}))
    assert pngs == FIGURES[name], f'{name}: {pngs} figures, expected {FIGURES[name]}'
