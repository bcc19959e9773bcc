/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlFormatClass: one file format Tomolab reads and/or writes. A format is one file in the module
 * whose data it holds (images in image/, list mode and sinograms in pet/, projections in ct/)
 * plus one line in compute/dataset/tl-formats.c, the table `tomolab-cli info FILE`, `convert`, `recon`,
 * the window and the Python module detect and open files from.
 *
 * Detection is by content first: every format's probe sees the first TL_FORMAT_HEAD_BYTES of
 * the file and its path and scores how sure it is; the extension alone only breaks ties. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* What a format's load returns and its save takes. */
typedef enum {
  TL_DATA_IMAGE,        /* TlImage (image/tl-image.h) */
  TL_DATA_PET_LISTMODE, /* TlListmode (pet/tl-listmode.h) */
  TL_DATA_PET_SINOGRAM, /* TlSinogram (pet/tl-sinogram.h) */
  TL_DATA_CT,           /* TlCtData (ct/tl-ct-data.h) */
  TL_DATA_SCANNER,      /* TlScanner (pet/tl-scanner.h) */
  TL_DATA_PET_NORM,     /* TlNorm (pet/tl-norm.h): a PET normalisation */
  TL_DATA_N_KINDS
} TlDataKind;

TL_API const char *tl_data_kind_name(TlDataKind kind); /* "image", "PET list mode", ... */

/* Probe scores: the format's magic / signature is there; a key or layout only this format uses;
 * only the extension matches. 0: not this format. */
#define TL_FORMAT_SURE 100
#define TL_FORMAT_LIKELY 60
#define TL_FORMAT_EXTENSION 10
#define TL_FORMAT_HEAD_BYTES 4096

typedef struct _TlFormatClass TlFormatClass;
struct _TlFormatClass {
  const char *name;       /* short, lower case: "nifti", "interfile", "castor" */
  const char *summary;    /* one line for listings */
  TlDataKind kind;
  const char *extensions; /* space-separated, lower case, the written one first: ".nii .nii.gz" */
  /* How sure this is the format, from the file's first n_head bytes (n_head may be < the
   * maximum for a short file) and its path. Never fails, never reads the file itself. */
  guint (*probe)(const char *path, const guint8 *head, gsize n_head);
  /* "key: value" lines for `tomolab-cli info FILE`: modality, scanner, counts, grid, duration...
   * Reads what it needs (a header where it can). NULL: the lead's generic description of the
   * loaded data is used. */
  gboolean (*describe)(const char *path, GString *out, GError **error);
  /* Returns the kind's type (see TlDataKind); NULL + GError on failure. NULL: cannot read. */
  gpointer (*load)(const char *path, GError **error);
  /* Writes atomically (image/tl-file.h). NULL: cannot write. */
  gboolean (*save)(gconstpointer data, const char *path, GError **error);
  /* The other files of the file `path` (NULL-terminated, g_strfreev; NULL: none), for the one
   * output-safety check (dataset/tl-outputs.h). writing FALSE: every file a load of `path`
   * reads besides it (a header's data file through image/tl-datafile.h, a sidecar); names the
   * resolver refuses are left out (the load refuses them). TRUE: every other file a save to
   * `path` may write, replace or remove. */
  char **(*companions)(const char *path, gboolean writing);
};

/* Detection and choice of a writer within a NULL-terminated list of formats: the whole table
 * (compute/dataset/tl-formats.c) or one module's part of it (the image formats of
 * tl_image_formats(), which tl_image_load/save use: one image loader, one detection).
 * detect: the best probe score, content first, the extension breaking ties; the GError names
 * the file and the list's readers. for_output: `name` non-NULL picks that format (it must
 * write `kind`), else the longest matching extension among the writers of `kind`. */
TL_API const TlFormatClass *tl_format_detect_in(const TlFormatClass *const *list, const char *path,
                                         GError **error);
TL_API const TlFormatClass *tl_format_for_output_in(const TlFormatClass *const *list, const char *path,
                                             TlDataKind kind, const char *name, GError **error);
/* "name (.ext ...), ..." of the list's formats that read (writers FALSE) or write `kind`
 * (TL_DATA_N_KINDS: any kind), for messages (g_free). */
TL_API char *tl_format_list_names(const TlFormatClass *const *list, TlDataKind kind, gboolean writers);

/* Whether the lower-cased path ends with one of the space-separated extensions. */
TL_API gboolean tl_format_path_has_extension(const char *path, const char *extensions);
/* Up to TL_FORMAT_HEAD_BYTES of the file (g_free); n set to the bytes read; a folder gives an
 * empty head (n = 0), for formats of folders. */
TL_API guint8 *tl_format_read_head(const char *path, gsize *n, GError **error);
/* The head holds `text` at its start (after optional blanks / a UTF-8 BOM), case-insensitive. */
TL_API gboolean tl_format_head_starts_with(const guint8 *head, gsize n_head, const char *text);

G_END_DECLS
