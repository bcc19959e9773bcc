/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DICOM through DCMTK (Debian's libdcmtk-dev), behind a small C interface: the C++ stays in
 * tl-dicom.cpp. One image slice of a file: its size, spacing, position, orientation and the
 * stored values rescaled to the modality's units (RescaleSlope x stored + RescaleIntercept:
 * Hounsfield units for CT). Transfer syntaxes: the uncompressed ones, RLE, JPEG (baseline,
 * extended, lossless) and JPEG-LS through DCMTK's codecs; others (JPEG 2000...) are refused
 * with a GError naming the transfer syntax. Writing: one uncompressed 16-bit file per slice
 * (tl_dicom_save_series below). */
#pragma once
#include "tl-api.h"
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
  guint images_in_acquisition; /* ImagesInAcquisition (0020,1002); 0 when absent */
  gboolean by_tomolab;      /* Manufacturer "Tomolab": written by tl_dicom_save_series */
} TlDicomSlice;

/* Reads one single-frame greyscale image; pixels too when `pixels`. Every count is checked
 * (rows, columns 1 .. TL_DICOM_MAX_DIM, bits, the pixel data length against them) and every
 * number (spacing > 0, finite slope != 0, intercept, position, orientation) before use. */
TL_API gboolean tl_dicom_read(const char *path, gboolean pixels, TlDicomSlice *out, GError **error);
TL_API void tl_dicom_slice_clear(TlDicomSlice *s);

/* Writing: which IOD (Information Object Definition) the slices claim. The caller says what
 * the values are; a TlImage carries no units, so the format table's plain "dicom" writes
 * Secondary Capture, which claims nothing about them. */
typedef enum {
  TL_DICOM_SECONDARY_CAPTURE, /* SOP class 1.2.840.10008.5.1.4.1.1.7, Modality OT */
  TL_DICOM_PET,               /* 1.2.840.10008.5.1.4.1.1.128 (PET Image), Modality PT */
  TL_DICOM_CT,                /* 1.2.840.10008.5.1.4.1.1.2 (CT Image), Modality CT: values in HU */
} TlDicomIod;

/* One slice to write (tl_dicom_write_slice): everything already computed and checked by
 * tl-format-dicom.c; DS values are passed as the text written, so the writer and the
 * rescale computed from them agree to the digit. */
typedef struct {
  TlDicomIod iod;
  gboolean bqml;              /* PET: Units BQML; else Units NONE */
  guint rows, cols;
  const guint16 *pixels;      /* rows x cols stored words, column fastest */
  gboolean is_signed;         /* PixelRepresentation 1: the words are two's complement */
  char spacing[2][17];        /* PixelSpacing (row spacing \ column spacing), DS text */
  char position[3][17];       /* ImagePositionPatient */
  char orientation[6][17];    /* ImageOrientationPatient */
  char thickness[17];         /* SliceThickness and SpacingBetweenSlices */
  char location[17];          /* SliceLocation */
  char slope[17], intercept[17];
  guint instance;             /* InstanceNumber (and PET ImageIndex), 1 .. n_slices */
  guint n_slices;
  char study_uid[65], series_uid[65], frame_uid[65];
  char date[9], time[7];      /* YYYYMMDD, HHMMSS: study, series, content */
  const char *description;    /* SeriesDescription */
} TlDicomWriteSlice;

/* A new UID (DCMTK's dcmGenerateUniqueIdentifier under its own root). */
TL_API void tl_dicom_new_uid(char out[65]);
/* Writes one slice to `path` (Part 10, explicit VR little endian). Not atomic by itself:
 * tl-format-dicom.c writes temp files and renames them. */
TL_API gboolean tl_dicom_write_slice(const char *path, const char *shown_as, const TlDicomWriteSlice *s,
                              GError **error); /* shown_as: the name errors give (the final one) */

/* Options of tl_dicom_save_series. */
typedef struct {
  TlDicomIod iod;
  gboolean bqml;           /* PET only: the values are Bq/mL (Units BQML instead of NONE) */
  const char *description; /* SeriesDescription; NULL: "Tomolab" */
} TlDicomSaveOptions;

/* Writes a TlImage (gpointer: keeps this header C++-clean) as a series, one file per slice
 * (z), see tl-format-dicom.c and docs/formats.md "DICOM" for the names and attributes:
 *  - `path` ending in .dcm/.dicom/.ima: the files are `path` with the slice number (4 digits,
 *    or as many as a run of '#' in the name asks for) in place of the '#' run or before the
 *    extension ("ct.dcm" -> ct_0001.dcm ...); a one-slice image without '#' is `path` itself;
 *  - any other `path`: a folder (new, or empty) holding IM_0001.dcm ...
 * No existing file is replaced (a series may be the input); every file is written to a temp
 * name and renamed; on failure nothing written stays. Voxels must be finite, |v| <= 1e9. */
TL_API gboolean tl_dicom_save_series(gconstpointer image, const char *path,
                              const TlDicomSaveOptions *opt, GError **error);

/* The series of `path` as an image (tl-format-dicom.c: frames, ordering, LPS -> scanner
 * frame). The result is a TlImage (image/tl-image.h); gpointer keeps this header C++-clean. */
TL_API gpointer tl_dicom_load_series(const char *path, GError **error);

/* Entry of the format table (compute/dataset/tl-formats.c). */
#ifndef __cplusplus
#include "tl-format.h"
TL_API extern const TlFormatClass tl_format_dicom;     /* reads; writes Secondary Capture */
TL_API extern const TlFormatClass tl_format_dicom_pet; /* writes PET Image (Units NONE) */
TL_API extern const TlFormatClass tl_format_dicom_ct;  /* writes CT Image (values in HU) */
#endif

G_END_DECLS
