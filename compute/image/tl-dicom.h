/* DICOM through DCMTK (Debian's libdcmtk-dev), behind a small C interface: the C++ stays in
 * tl-dicom.cpp. One image slice of a file: its size, spacing, position, orientation and the
 * stored values rescaled to the modality's units (RescaleSlope x stored + RescaleIntercept:
 * Hounsfield units for CT). Transfer syntaxes: the uncompressed ones, RLE, JPEG (baseline,
 * extended, lossless) and JPEG-LS through DCMTK's codecs; others (JPEG 2000...) are refused
 * with a GError naming the transfer syntax. */
#pragma once
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

#define TL_DICOM_MAX_DIM 16384u /* rows or columns */

typedef struct {
  guint rows, cols;
  double spacing[2];        /* PixelSpacing: [0] between rows (mm), [1] between columns */
  gboolean has_position;
  double position[3];       /* ImagePositionPatient: centre of the first pixel, LPS mm */
  gboolean has_orientation;
  double orientation[6];    /* ImageOrientationPatient: row (along a row) and column cosines */
  double thickness;         /* SliceThickness, 0 when absent */
  double slope, intercept;  /* RescaleSlope (1 when absent), RescaleIntercept (0) */
  char modality[17];
  char series_uid[65];
  float *pixels;            /* rows x cols rescaled values, column fastest; NULL unless asked */
} TlDicomSlice;

/* Reads one single-frame greyscale image; pixels too when `pixels`. Every count is checked
 * (rows, columns 1 .. TL_DICOM_MAX_DIM, bits, the pixel data length against them) and every
 * number (spacing > 0, finite slope != 0, intercept, position, orientation) before use. */
gboolean tl_dicom_read(const char *path, gboolean pixels, TlDicomSlice *out, GError **error);
void tl_dicom_slice_clear(TlDicomSlice *s);

/* The series of `path` as an image (tl-format-dicom.c: frames, ordering, LPS -> scanner
 * frame). The result is a TlImage (image/tl-image.h); gpointer keeps this header C++-clean. */
gpointer tl_dicom_load_series(const char *path, GError **error);

/* Entry of the format table (compute/tl-formats.c). */
#ifndef __cplusplus
#include "tl-format.h"
extern const TlFormatClass tl_format_dicom;
#endif

G_END_DECLS
