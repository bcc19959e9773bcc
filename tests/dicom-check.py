#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent check of the DICOM series Tomolab writes (test-format-dicom): pydicom reads the
files and they are compared with the known image, recomputed here from its definition (the
same formula and grid as known_image() in test-format-dicom.c, not read from any file).

  dicom-check.py KIND FILE...   KIND: sc, pet, pet-bqml or ct; FILE: every slice file of one
                                series (pet-bqml: the PET image written with Units BQML)

Checks: SOP class, modality, one series of n files with InstanceNumber 1..n, Rows/Columns,
PixelSpacing, ImageOrientationPatient, ImagePositionPatient of each slice (Tomolab's frame is
x = -L, y = -P, z = S; DICOM's first pixel is voxel (nx-1, ny-1, k)), SliceThickness, the
IOD's own attributes (PET: Units NONE, intercept 0; CT: RescaleType HU; SC: ConversionType
WSD), and every value: stored * RescaleSlope + RescaleIntercept within half a step
(RescaleSlope) of the known value, the step no larger than the slice's range over 65535.
Prints what failed and exits 1; prints "ok N files" and exits 0 otherwise.
"""
import sys

import numpy as np
import pydicom

NX, NY, NZ = 7, 5, 4
VOXEL = (1.25, 0.8, 2.5)
ORIGIN = (-3.5, 10.25, -20.1)
SOP = {"sc": "1.2.840.10008.5.1.4.1.1.7", "pet": "1.2.840.10008.5.1.4.1.1.128",
       "ct": "1.2.840.10008.5.1.4.1.1.2"}
UNITS = {"pet": "NONE", "pet-bqml": "BQML"}
MODALITY = {"sc": "OT", "pet": "PT", "ct": "CT"}


def known(kind):
    """The known image, [z][y][x], as float32 (Tomolab's voxel type)."""
    z, y, x = np.meshgrid(np.arange(NZ), np.arange(NY), np.arange(NX), indexing="ij")
    s = np.sin(0.9 * x + 0.5 * y + 0.3 * z)
    if kind == "sc":  # negative and positive, not integers
        v = 1000.5 * s - 300.0 * z + 0.25
    elif kind == "pet":  # activity: >= 0
        v = 5000.0 * (1.0 + s) + 10.0 * z
    else:  # CT: integer Hounsfield units
        v = np.floor(1500.0 * s + 0.5) - 200.0 * z
    return v.astype(np.float32)


def main():
    kind, files = sys.argv[1], sys.argv[2:]
    units = UNITS.get(kind)
    kind = "pet" if units else kind
    errors = []

    def check(cond, what):
        if not cond:
            errors.append(what)

    f32 = lambda v: float(np.float32(v))  # noqa: E731  (the grid is float32 in Tomolab)
    ref = known(kind).astype(np.float64)
    slices = sorted((pydicom.dcmread(f) for f in files), key=lambda d: int(d.InstanceNumber))
    check(len(slices) == NZ, "%d files, expected %d" % (len(slices), NZ))
    series = {d.SeriesInstanceUID for d in slices}
    check(len(series) == 1, "%d SeriesInstanceUIDs" % len(series))
    check(len({d.SOPInstanceUID for d in slices}) == len(slices), "SOPInstanceUIDs repeat")
    for k, d in enumerate(slices):
        where = "slice %d" % (k + 1)
        check(d.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.1", where + ": transfer syntax")
        check(d.SOPClassUID == SOP[kind], "%s: SOPClassUID %s" % (where, d.SOPClassUID))
        check(d.file_meta.MediaStorageSOPClassUID == SOP[kind], where + ": meta SOP class")
        check(d.Modality == MODALITY[kind], "%s: Modality %s" % (where, d.Modality))
        check(int(d.InstanceNumber) == k + 1, "%s: InstanceNumber %s" % (where, d.InstanceNumber))
        check((d.Rows, d.Columns) == (NY, NX), "%s: %d x %d" % (where, d.Rows, d.Columns))
        check(np.allclose([float(v) for v in d.PixelSpacing], [f32(VOXEL[1]), f32(VOXEL[0])],
                          rtol=1e-7), "%s: PixelSpacing %s" % (where, d.PixelSpacing))
        check([float(v) for v in d.ImageOrientationPatient] == [1, 0, 0, 0, 1, 0],
              "%s: ImageOrientationPatient %s" % (where, d.ImageOrientationPatient))
        ras = (f32(ORIGIN[0]) + (NX - 1) * f32(VOXEL[0]), f32(ORIGIN[1]) + (NY - 1) * f32(VOXEL[1]),
               f32(ORIGIN[2]) + k * f32(VOXEL[2]))
        lps = (-ras[0], -ras[1], ras[2])
        check(np.allclose([float(v) for v in d.ImagePositionPatient], lps, rtol=0, atol=1e-9),
              "%s: ImagePositionPatient %s, expected %s" % (where, d.ImagePositionPatient, lps))
        check(abs(float(d.SliceThickness) - f32(VOXEL[2])) < 1e-12, where + ": SliceThickness")
        check(d.BitsAllocated == 16 and d.SamplesPerPixel == 1, where + ": 16-bit greyscale")
        check(d.PatientName == "Anonymous", where + ": PatientName")
        slope, icpt = float(d.RescaleSlope), float(d.RescaleIntercept)
        if kind == "pet":
            check(d.Units == units, "%s: Units %s, expected %s" % (where, d.Units, units))
            check(icpt == 0, "%s: PET RescaleIntercept %g, expected 0" % (where, icpt))
        elif kind == "ct":
            check(d.RescaleType == "HU", where + ": RescaleType")
            check(slope == 1, "%s: integer HU with RescaleSlope %g, expected 1" % (where, slope))
        else:
            check(d.ConversionType == "WSD", where + ": ConversionType")
        # pixel (row j, column i) is voxel (nx - 1 - i, ny - 1 - j, k)
        want = ref[k][::-1, ::-1]
        got = d.pixel_array.astype(np.float64) * slope + icpt
        err = np.max(np.abs(got - want))
        # the tightest step the slice allows: its range over the 16-bit codes used
        lo, hi = float(want.min()), float(want.max())
        span = max(hi, -lo) / 32767 if kind == "pet" and lo < 0 else \
            hi / 65535 if kind == "pet" else (hi - lo) / 65535
        check(kind == "ct" or slope <= span * (1 + 1e-9),
              "%s: RescaleSlope %g, more than the range over 65535 (%g)" % (where, slope, span))
        tol = slope / 2 * (1 + 1e-9) + 1e-7 * np.max(np.abs(want))
        check(err <= tol, "%s: values off by %g, more than half a step %g" % (where, err,
                                                                             slope / 2))
    for e in errors:
        print("dicom-check: " + e)
    if errors:
        sys.exit(1)
    print("ok %d files" % len(slices))


main()
