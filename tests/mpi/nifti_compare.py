#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compares NIfTI-1 float32 images voxel by voxel, read from the published layout
(NIfTI-1 header: dim at byte 40, datatype at 70, vox_offset at 108), not by Tomolab's reader.

  nifti_compare.py REF.nii OTHER.nii [TOL]

Prints the largest difference relative to the reference's largest voxel, and exits 1 when it
exceeds TOL (default 1e-5), 2 when the files are not comparable."""
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 352 or struct.unpack_from("<i", data, 0)[0] != 348:
        sys.exit(f"{path}: not a little-endian NIfTI-1 file (sizeof_hdr != 348)")
    dim = struct.unpack_from("<8h", data, 40)
    datatype = struct.unpack_from("<h", data, 70)[0]
    offset = int(struct.unpack_from("<f", data, 108)[0])
    if datatype != 16:
        sys.exit(f"{path}: datatype {datatype}, expected 16 (float32)")
    n = int(np.prod(dim[1:1 + dim[0]]))
    if offset + 4 * n != len(data):
        sys.exit(f"{path}: {len(data)} bytes, expected {offset + 4 * n}")
    return dim[1:1 + dim[0]], np.frombuffer(data, "<f4", n, offset).astype(np.float64)


def main():
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    da, a = read(sys.argv[1])
    db, b = read(sys.argv[2])
    if da != db:
        print(f"dims differ: {da} vs {db}")
        return 2
    scale = np.abs(a).max()
    if not np.all(np.isfinite(b)) or scale <= 0:
        print("not finite, or an empty reference")
        return 2
    rel = np.abs(a - b).max() / scale
    print(f"max |diff| / max |ref| = {rel:.3g} (tolerance {tol:g}); sums {a.sum():.9g} {b.sum():.9g}")
    return 0 if rel <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
