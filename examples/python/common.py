# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared set-up of the examples: a small ring scanner and a cylinder phantom with hot and cold
spheres-worth of contrast, small enough that each example runs in seconds on lavapipe."""
import tomolab as tl

SCANNER = """name = example-ring
kind = ring
rings = 8
sides = 12
crystals_per_side = 8
crystal_pitch_mm = 4
radius_mm = 70
ring_pitch_mm = 4
crystal_size_mm = 4 4 10
"""


def pet_case(events=200_000, seed=1):
    """(scanner, grid, activity, mu, list mode) of a NEMA-like phantom on a 32 x 32 x 8 grid."""
    scanner = tl.Scanner.from_text(SCANNER)
    grid = tl.Grid.centred((32, 32, 8), (3.5, 3.5, 4.0))
    act, mu = tl.phantom('nema', grid)
    lm = tl.Listmode.simulate(scanner, act, mu, events=events, seed=seed)
    return scanner, grid, act, mu, lm


def show(title, images, path):
    """Saves a PNG of the central slices with matplotlib when it is installed (Debian:
    python3-matplotlib); the examples run without it."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('(matplotlib not installed: no figure)')
        return
    fig, axes = plt.subplots(1, len(images), figsize=(3 * len(images), 3))
    for ax, (name, im) in zip(axes, images.items()):
        ax.imshow(im[im.shape[0] // 2], cmap='gray')
        ax.set_title(name)
        ax.axis('off')
    fig.suptitle(title)
    fig.savefig(path, dpi=80)
    print('wrote', path)
