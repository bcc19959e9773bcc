# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures of the Python tests (run by `meson test`, Vulkan validation on).

Every test runs on the default context, made once; after each test the validation layer's
message count must still be 0 (any message fails the test, as in the C suite). The data are
small: a 256-crystal ring scanner, a 16 x 16 x 4 grid, a few thousand simulated events."""
import os

import numpy as np
import pytest

import tomolab as tl

# A 4-ring octagon of 8 crystals per side (256 crystals), with TOF bins for the TOF tests.
SCANNER_TEXT = """name = pytest-ring
kind = ring
rings = 4
sides = 8
crystals_per_side = 8
crystal_pitch_mm = 4
radius_mm = 40
ring_pitch_mm = 4
crystal_size_mm = 4 4 10
tof_bins = 5
tof_bin_mm = 20
tof_fwhm_ps = 300
"""


@pytest.fixture(scope='session')
def ctx():
    c = tl.default_context()
    assert c.validation_enabled, 'the tests run with TOMOLAB_VALIDATE=1 (meson test sets it)'
    return c


@pytest.fixture(autouse=True)
def no_validation_messages(ctx):
    before = ctx.validation_messages
    yield
    assert ctx.validation_messages == before == 0, 'Vulkan validation messages'


@pytest.fixture(scope='session')
def scanner():
    return tl.Scanner.from_text(SCANNER_TEXT)


@pytest.fixture(scope='session')
def grid():
    return tl.Grid.centred((16, 16, 4), (3.0, 3.0, 4.0))


@pytest.fixture(scope='session')
def phantom(grid):
    act, mu = tl.phantom('cylinder', grid, radius_mm=18)
    return act, mu


@pytest.fixture(scope='session')
def listmode(scanner, phantom):
    act, mu = phantom
    return tl.Listmode.simulate(scanner, act, mu, events=6000, seed=7, tof=True, threads=1)


@pytest.fixture(scope='session')
def cli():
    path = os.environ.get('TOMOLAB_CLI')
    assert path and os.path.exists(path), 'TOMOLAB_CLI names the built tomolab-cli'
    return path


def rng(seed=1):
    return np.random.default_rng(seed)
