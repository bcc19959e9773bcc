/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The table of file formats (image/tl-format.h), and opening any file by its content.
 * A new format is one file in its module + one line in tl-formats.c's table. */
#pragma once
#include "tl-api.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

/* NULL-terminated, in table order. */
TL_API const TlFormatClass *const *tl_formats(void);
TL_API const TlFormatClass *tl_format_find(const char *name); /* NULL if none */

/* The format of an existing file: the best probe score (content first, the extension breaks
 * ties); GError naming the file when no format recognises it. */
TL_API const TlFormatClass *tl_format_detect(const char *path, GError **error);
/* The format to write `path` holding `kind`, by its extension (`name` non-NULL: that format). */
TL_API const TlFormatClass *tl_format_for_output(const char *path, TlDataKind kind, const char *name,
                                          GError **error);

/* Detects and loads; *kind and *format (either may be NULL) say what came back. */
TL_API gpointer tl_format_load_any(const char *path, TlDataKind *kind, const TlFormatClass **format,
                            GError **error);
/* Loads a file that must hold `kind` (the GError names the file, what it holds, what was
 * expected). */
TL_API gpointer tl_format_load_kind(const char *path, TlDataKind kind, GError **error);
TL_API gboolean tl_format_save(const TlFormatClass *format, gconstpointer data, const char *path,
                        GError **error);

/* "*.nii;*.nii.gz;..." of every format that reads (write FALSE) or writes `kind`
 * (TL_DATA_N_KINDS: any kind), for file choosers (g_free). */
TL_API char *tl_formats_patterns(TlDataKind kind, gboolean write);
/* Whether some format reads files with this path's extension. */
TL_API gboolean tl_formats_known_extension(const char *path);

/* Frees data of any kind. */
TL_API void tl_data_free(TlDataKind kind, gpointer data);
/* The generic "key: value" description of loaded data (grid, counts, scanner...). */
TL_API void tl_data_describe(TlDataKind kind, gconstpointer data, GString *out);
/* `tomolab-cli info FILE`: the format, then its own description or the generic one. */
TL_API gboolean tl_format_describe_file(const char *path, GString *out, GError **error);

G_END_DECLS
