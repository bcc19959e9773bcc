/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Interfile "key := value" header syntax shared by the Interfile image reader
 * (tl-format-interfile-image.c) and STIR's projection data (pet/tl-format-stir-sino.c).
 *
 * Keys are matched case-insensitively after normalisation: the '!' and '%' prefixes go,
 * runs of blanks become one space, no space before '[' nor inside "[ i ]", so
 * "!matrix size [1]", "matrix size[1]" and "Matrix  Size [ 1 ]" are the same key
 * "matrix size[1]". ';' starts a comment (whole line or after a value). A key given twice
 * is refused naming both lines unless both give the same value (STIR's own headers repeat
 * "imaging modality := PET"): tl_kv_once_or_same of tl-file.h. Values are trimmed;
 * "{a, b, c}" lists are read by tl_interfile_int_list. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* The largest header read: 1 MiB (STIR's are a few KiB; a list of 1000 segments is 8 KiB). */
#define TL_INTERFILE_MAX_HEADER (1u << 20)

typedef struct _TlInterfile TlInterfile;

/* Parses header text (checked to be UTF-8 text first); `source` names it in messages. */
TL_API TlInterfile *tl_interfile_parse(const char *text, gsize len, const char *source, GError **error);
/* Reads and parses the header file `path` (at most TL_INTERFILE_MAX_HEADER bytes). */
TL_API TlInterfile *tl_interfile_load(const char *path, GError **error);
TL_API void tl_interfile_free(TlInterfile *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlInterfile, tl_interfile_free)

/* The normalised form of a key (g_free). */
TL_API char *tl_interfile_normalise_key(const char *key);
/* The value of `key` (any spelling; normalised here), or NULL when absent. */
TL_API const char *tl_interfile_get(const TlInterfile *h, const char *key);
/* Whether the header has a key starting with `prefix` (normalised). */
TL_API gboolean tl_interfile_has_prefix(const TlInterfile *h, const char *prefix);
TL_API const char *tl_interfile_source(const TlInterfile *h);

/* Typed values. A missing key gives `def` when `required` is FALSE, else a GError naming the
 * source and the key; a bad value names the source, the line, the key, the value and what was
 * expected. Integers must be in [min, max]; doubles finite (and > 0 when `positive`). */
TL_API gboolean tl_interfile_int(const TlInterfile *h, const char *key, gboolean required, gint64 def,
                          gint64 min, gint64 max, gint64 *out, GError **error);
TL_API gboolean tl_interfile_double(const TlInterfile *h, const char *key, gboolean required,
                             double def, gboolean positive, double *out, GError **error);
/* "{a, b, c}" (or one bare number) of at most max_n integers in [min, max]; *out g_free. */
TL_API gboolean tl_interfile_int_list(const TlInterfile *h, const char *key, guint max_n, gint64 min,
                               gint64 max, gint64 **out, guint *n, GError **error);
/* A GError naming the source, line, key and value with `expected`; returns FALSE. */
TL_API gboolean tl_interfile_fail(const TlInterfile *h, const char *key, const char *expected,
                           GError **error);

/* The number formats Interfile data come in, converted to float by tl_interfile_read_data. */
typedef enum {
  TL_INTERFILE_FLOAT,
  TL_INTERFILE_SIGNED,
  TL_INTERFILE_UNSIGNED,
} TlInterfileNumber;

typedef struct {
  TlInterfileNumber number;
  guint bytes;        /* 1, 2, 4 (integers), 4 or 8 (float) */
  gboolean big_endian;
  double scale;       /* value = raw * scale + offset */
  double offset;
} TlInterfileSample;

/* "!number format", "!number of bytes per pixel" and "imagedata byte order" (default big
 * endian, as the Interfile 3.3 standard says); GError for anything else. */
TL_API gboolean tl_interfile_sample_format(const TlInterfile *h, TlInterfileSample *fmt, GError **error);
/* One raw sample at p as a double (no scale applied); MetaImage reuses it. */
TL_API double tl_interfile_sample_value(const guint8 *p, const TlInterfileSample *fmt);
/* The data file named by "name of data file" (relative to the header's folder) with
 * "data offset in bytes[1]" (or "data starting block" * 2048): checks the file holds
 * offset + n * bytes before reading, converts to float (scale/offset applied) and refuses
 * non-finite values naming the sample. `header_path` names the header in messages. */
TL_API float *tl_interfile_read_data(const TlInterfile *h, const char *header_path,
                              const TlInterfileSample *fmt, guint64 n, GError **error);

G_END_DECLS

/* --- Interfile images (tl-format-interfile-image.c; docs/formats.md "Interfile images") --- */
#include "image/tl-image.h"
G_BEGIN_DECLS
/* .hv header + data file; any number format above, converted to float32. */
TL_API TlImage *tl_image_load_interfile(const char *path, GError **error);
/* STIR-compatible .hv + .v (float32 little endian, data offset 0, first pixel offsets); the .v
 * is named after the header (X.hv -> X.v, or X~1.v when the header being replaced names X.v);
 * the pair is replaced by one rename (image/tl-file.h, "Two-file outputs"). */
TL_API gboolean tl_image_save_interfile(const TlImage *im, const char *path, GError **error);
/* The data file the Interfile header `header` names (through image/tl-datafile.h's policy),
 * or NULL when it is not a readable header or names none (g_free). */
TL_API char *tl_interfile_data_path(const char *header);
/* The format class's companions (image/tl-format.h) of a header whose data go to `data_ext`. */
TL_API char **tl_interfile_companions(const char *path, gboolean writing, const char *data_ext);
/* A lower-cased copy of the first n bytes without blanks, for content probes. */
TL_API char *tl_interfile_squash(const guint8 *head, gsize n);
/* "holds", "grid" and "values" lines for `tomolab-cli info` (as the generic description). */
TL_API void tl_image_describe(const TlImage *im, GString *out);
TL_API extern const TlFormatClass tl_format_interfile;
G_END_DECLS
