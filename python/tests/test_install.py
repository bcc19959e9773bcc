# SPDX-License-Identifier: GPL-3.0-or-later
"""The installed package: `meson install --destdir` of the build, then a fresh interpreter
imports tomolab from the installed dist-packages folder only (not the build tree) against the
installed libtomolab-compute, and runs a forward projection."""
import json
import os
import subprocess
import sys

import pytest

CHECK = '''
import numpy as np, tomolab as tl, sys
assert tl.__file__.startswith(sys.argv[1]), tl.__file__
g = tl.Grid.centred((8, 8, 2), (4.0, 4.0, 4.0))
sc = tl.Scanner.from_text("kind = ring\\nrings = 1\\nsides = 4\\ncrystals_per_side = 4\\n"
                          "crystal_pitch_mm = 4\\nradius_mm = 30\\ncrystal_size_mm = 4 4 10\\n")
lm = tl.Listmode.simulate(sc, tl.Image(np.ones(g.shape), g), events=100, seed=1, threads=1)
y = tl.pet_operator(lm, g, use_cache=False).forward(np.ones(g.shape, np.float32))
assert y.shape == (lm.n_events,) and (y > 0).any()
print("installed tomolab OK:", tl.__file__)
'''


def test_installed_package(tmp_path):
    build = os.environ.get('TOMOLAB_BUILD_ROOT')
    assert build, 'TOMOLAB_BUILD_ROOT names the build directory (meson test sets it)'
    dest = str(tmp_path / 'dest')
    subprocess.run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild',
                    '--quiet'], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(build, 'meson-info', 'intro-buildoptions.json')) as f:
        opts = {o['name']: o['value'] for o in json.load(f)}
    libdir = dest + os.path.join(opts['prefix'], opts['libdir'])
    inits = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs
             if f == '__init__.py' and r.endswith('/tomolab')]
    assert len(inits) == 1, inits
    pkg_parent = os.path.dirname(os.path.dirname(inits[0]))
    env = dict(os.environ, PYTHONPATH=pkg_parent, LD_LIBRARY_PATH=libdir)
    r = subprocess.run([sys.executable, '-c', CHECK, pkg_parent], env=env, capture_output=True,
                       text=True, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    # the installed extension carries no path into the build tree
    ext = [f for f in os.listdir(os.path.join(pkg_parent, 'tomolab')) if f.endswith('.so')]
    dyn = subprocess.run(['readelf', '-d', os.path.join(pkg_parent, 'tomolab', ext[0])],
                         capture_output=True, text=True, check=True).stdout
    assert os.path.realpath(build) not in dyn and build not in dyn, dyn
