#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent reference for test-format-dicom: pydicom (Debian's python3-pydicom) reads its
own CT_small.dcm and writes what it finds, and writes the DICOM files the test feeds to
Tomolab's reader (a shuffled 3-slice series and hostile variants).

  dicom-ref.py OUTDIR   ->  OUTDIR/ref.txt: "rows cols spacing_row spacing_col" then every
                            value (row by row, pixel_array * RescaleSlope + RescaleIntercept)
                            and OUTDIR/*.dcm (see below)
"""
import os
import sys

import warnings

import numpy as np
import pydicom
from pydicom.data import get_testdata_file

warnings.simplefilter("ignore")  # the NaN slope below is meant
out = sys.argv[1]
src = get_testdata_file("CT_small.dcm")
ds = pydicom.dcmread(src)
hu = ds.pixel_array.astype(np.float64) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
with open(os.path.join(out, "ref.txt"), "w") as f:
    f.write("%s\n" % src)
    f.write("%d %d %r %r\n" % (ds.Rows, ds.Columns, float(ds.PixelSpacing[0]),
                               float(ds.PixelSpacing[1])))
    for v in hu.ravel():
        f.write("%r\n" % v)


def variant(name, change, folder=None):
    d = pydicom.dcmread(src)
    change(d)
    where = os.path.join(out, folder) if folder else out
    os.makedirs(where, exist_ok=True)
    d.save_as(os.path.join(where, name), write_like_original=False)


# a 3-slice series, files named against the slice order, 2.5 mm apart, slice k = HU + 100 k
uid = pydicom.uid.generate_uid()
for k, name in ((2, "a.dcm"), (0, "b.dcm"), (1, "c.dcm")):
    def series(d, k=k):
        d.SeriesInstanceUID = uid
        d.SOPInstanceUID = pydicom.uid.generate_uid()
        d.ImagePositionPatient = [-158.135803, -179.035797, -75.7 + 2.5 * k]
        a = d.pixel_array.astype(np.int16) + 100 * k
        d.PixelData = a.tobytes()
    variant(name, series, "series")

# hostile: no pixel data; NaN slope; a series whose second file has another size;
# unequal slice gaps
variant("nopixels.dcm", lambda d: delattr(d, "PixelData"), "nopixels")


def nan_slope(d):
    d[0x00281053].value = "NaN"
variant("nanslope.dcm", nan_slope, "nanslope")

uid2 = pydicom.uid.generate_uid()
for k, name in ((0, "a.dcm"), (1, "b.dcm")):
    def sizes(d, k=k):
        d.SeriesInstanceUID = uid2
        d.ImagePositionPatient = [0, 0, 5.0 * k]
        if k == 1:
            a = d.pixel_array[:64, :64].copy()
            d.Rows, d.Columns = 64, 64
            d.PixelData = a.tobytes()
    variant(name, sizes, "sizes")

uid3 = pydicom.uid.generate_uid()
for k, z in ((0, 0.0), (1, 2.0), (2, 7.0)):
    def gaps(d, z=z):
        d.SeriesInstanceUID = uid3
        d.ImagePositionPatient = [0, 0, z]
    variant("s%d.dcm" % k, gaps, "gaps")

# issue 27 (info runs the loader): pixel data cut short (the element's length says so, the
# file is whole); an oblique orientation (30 degrees about z); two slices at one position
variant("short.dcm", lambda d: setattr(d, "PixelData", d.PixelData[: len(d.PixelData) // 2]),
        "short")
variant("oblique.dcm", lambda d: setattr(d, "ImageOrientationPatient",
                                         [0.866025, 0.5, 0, -0.5, 0.866025, 0]), "oblique")
uid4 = pydicom.uid.generate_uid()
for name in ("a.dcm", "b.dcm"):
    def dup(d):
        d.SeriesInstanceUID = uid4
        d.SOPInstanceUID = pydicom.uid.generate_uid()
        d.ImagePositionPatient = [0, 0, 5.0]
    variant(name, dup, "duplicate")

# truncated: the first half of the file
with open(src, "rb") as f:
    data = f.read()
os.makedirs(os.path.join(out, "truncated"), exist_ok=True)
with open(os.path.join(out, "truncated", "half.dcm"), "wb") as f:
    f.write(data[: len(data) // 2])
