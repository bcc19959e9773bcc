# SPDX-License-Identifier: GPL-3.0-or-later
"""Every script of examples/python runs and passes its own check (each exits non-zero when the
figure it prints disagrees with what it claims, e.g. a numpy MLEM against Tomolab's own).

Each runs in a fresh interpreter, as a user would start it, in a temporary folder (the figures
it may write land there), with the suite's PYTHONPATH and TOMOLAB_VALIDATE: a Vulkan validation
message makes the script's context count it, and the scripts print that count."""
import glob
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'python')
SCRIPTS = sorted(p for p in glob.glob(os.path.join(EXAMPLES, '*.py'))
                 if os.path.basename(p) != 'common.py')


def test_examples_found():
    # a glob that finds nothing would make the parametrised test below vanish silently
    assert len(SCRIPTS) >= 3, SCRIPTS


@pytest.mark.parametrize('script', SCRIPTS, ids=os.path.basename)
def test_example_runs(script, tmp_path):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [os.path.abspath(EXAMPLES)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env['PYTHONUNBUFFERED'] = '1'
    proc = subprocess.run([sys.executable, os.path.abspath(script)], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, f'{os.path.basename(script)} exited {proc.returncode}:\n{proc.stdout[-4000:]}'
