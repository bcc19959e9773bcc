#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pip route (pyproject.toml, meson-python): builds the wheel of this source tree with
`pip wheel --no-build-isolation` (offline), installs it into a fresh
`python3 -m venv --system-site-packages` outside both trees, and from a third folder imports
it and runs examples/python/cgls_ct.py with that venv's interpreter. Checks that the module
comes from the venv, that __version__ is meson's project version, and that the extension
needs no libtomolab-compute.so and points into no build tree (the library is inside it).

Usage: check-wheel.py SOURCE_ROOT BUILD_ROOT [WORK_DIR]. The wheel's meson build folder is
BUILD_ROOT/python/wheel-build, kept between runs so that a rerun only recompiles what changed
(the first run compiles the library once more: minutes on 2 busy cores)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHECK = r'''
import sys, numpy as np, tomolab as tl
venv, version = sys.argv[1], sys.argv[2]
assert tl.__file__.startswith(venv), (tl.__file__, venv)
assert tl.__version__ == version, (tl.__version__, version)
g = tl.Grid.centred((8, 8, 8), (2.0, 2.0, 2.0))
geom = tl.CtGeometry.parallel(12, 12, 8, 2.0, 2.0)
A = tl.ct_operator(geom, g)
x = np.ones(g.shape, np.float32)
y = A.forward(x)
assert y.shape == (12 * 12 * 8,) and float(y.max()) > 0
print('wheel OK:', tl.__file__, tl.__version__, tl.default_context().name)
'''


def run(cmd, **kw):
    t = time.monotonic()
    print('+', ' '.join(cmd), flush=True)
    r = subprocess.run(cmd, **kw)
    print(f'  ({time.monotonic() - t:.1f} s)', flush=True)
    if r.returncode != 0:
        sys.exit(f'check-wheel: {cmd[0]} exited {r.returncode}')
    return r


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    work = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix='tomolab-wheel-')
    with open(os.path.join(build, 'meson-info', 'intro-projectinfo.json')) as f:
        version = json.load(f)['version']
    # Debian's interpreter (numpy and meson-python are its packages): a pyenv python3 on PATH
    # would have neither
    python = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'LD_LIBRARY_PATH', 'LD_PRELOAD')}
    builddir = os.path.join(build, 'python', 'wheel-build')
    if not os.path.exists(os.path.join(builddir, 'meson-private', 'coredata.dat')):
        # meson-python 0.12 reconfigures a build folder it is given whenever its native file
        # (written in the source tree) is unchanged, and fails on one never configured:
        # without that file it sets the folder up afresh
        try:
            os.remove(os.path.join(src, '.mesonpy-native-file.ini'))
        except FileNotFoundError:
            pass
    dist = os.path.join(work, 'dist')
    shutil.rmtree(dist, ignore_errors=True)
    run([python, '-m', 'pip', 'wheel', '--no-build-isolation', '--no-deps', '--no-index',
         '-w', dist, '--config-settings', 'builddir=' + builddir, src], env=env, check=False)
    wheels = glob.glob(os.path.join(dist, 'tomolab-*.whl'))
    assert len(wheels) == 1, wheels
    wheel = wheels[0]
    assert f'tomolab-{version}-' in os.path.basename(wheel), (wheel, version)
    # the wheel holds the package and its metadata only: no programs, headers, docs
    names = subprocess.run([python, '-m', 'zipfile', '-l', wheel], capture_output=True,
                           text=True, check=True).stdout
    files = [ln.split()[0] for ln in names.splitlines()[1:] if ln.strip()]
    stray = [f for f in files if not f.startswith((
        'tomolab/', f'tomolab-{version}.dist-info/', f'tomolab-{version}.data/purelib/tomolab/',
        f'tomolab-{version}.data/platlib/tomolab/'))]
    assert not stray, f'files outside the package in the wheel: {stray}'

    venv = os.path.join(work, 'venv')
    shutil.rmtree(venv, ignore_errors=True)
    run([python, '-m', 'venv', '--system-site-packages', venv], env=env, check=False)
    vpy = os.path.join(venv, 'bin', 'python')
    run([vpy, '-m', 'pip', 'install', '--no-index', '--no-deps', '--quiet', wheel], env=env,
        check=False)
    elsewhere = os.path.join(work, 'elsewhere')
    os.makedirs(elsewhere, exist_ok=True)
    run([vpy, '-c', CHECK, os.path.realpath(venv), version], cwd=elsewhere, env=env, check=False)

    ext = glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages', 'tomolab',
                                 '_tomolab*.so'))
    assert len(ext) == 1, ext
    dyn = subprocess.run(['readelf', '-d', ext[0]], capture_output=True, text=True,
                         check=True).stdout
    assert 'libtomolab-compute' not in dyn, dyn
    for tree in (src, build):
        assert tree not in dyn and os.path.realpath(tree) not in dyn, dyn

    # an example as a user runs it: the venv's interpreter, from another folder
    examples = os.path.join(src, 'examples', 'python')
    run([vpy, os.path.join(examples, 'cgls_ct.py')], cwd=elsewhere,
        env=dict(env, PYTHONPATH=examples), check=False)
    if len(sys.argv) <= 3:
        shutil.rmtree(work, ignore_errors=True)
    print('check-wheel: OK')


if __name__ == '__main__':
    main()
