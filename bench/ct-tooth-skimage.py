#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/ct-tooth's other side: scikit-image's FBP (iradon, filter 'ramp') of the same tooth
sinogram, one slice per detector row, timed as bench/ct-tooth times Tomolab (warm-up, then
best of REPEAT). Reads the line integrals bench/ct-tooth wrote (float32, views x rows x
columns) and prints 'skimage SECONDS VERSION SART_SECONDS CPU_SECONDS SART_CPU_SECONDS' (SART:
one iteration of iradon_sart per slice; CPU: the process time of the same best run, as
bench/ct-tooth gives core-seconds), or 'skimage none' when scikit-image is absent.

    ct-tooth-skimage.py RAW VIEWS ROWS COLUMNS ARC_DEG REPEAT
"""
import sys
import time

import numpy as np

try:
    import skimage
    from skimage.transform import iradon, iradon_sart
except ImportError:
    print('skimage none')
    sys.exit(0)

raw, views, rows, cols, arc, repeat = sys.argv[1:7]
views, rows, cols, repeat = int(views), int(rows), int(cols), int(repeat)
p = np.fromfile(raw, np.float32).reshape(views, rows, cols)
theta = np.arange(views) * float(arc) / views


def fbp():
    # iradon wants (detector, angle) per slice; output cols x cols, as Tomolab's grid
    return [iradon(p[:, r, :].T, theta=theta, filter_name='ramp') for r in range(rows)]


def timed(run):
    """Best wall seconds of REPEAT runs after a warm-up, and that run's CPU seconds."""
    run()  # warm-up
    best, cpu = float('inf'), float('nan')
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        run()
        w = time.perf_counter() - t
        if w < best:
            best, cpu = w, time.process_time() - c
    return best, cpu


best, cpu = timed(fbp)


def sart():
    # one iteration of SART per slice (every view once), scikit-image's iterative method
    return [iradon_sart(p[:, r, :].T.astype(np.float64), theta=theta) for r in range(rows)]


best_sart, cpu_sart = timed(sart)
print('skimage %.4f %s %.4f %.4f %.4f' % (best, skimage.__version__, best_sart, cpu, cpu_sart))
