/* SPDX-License-Identifier: GPL-3.0-or-later */
/* MetaImage (ITK's .mhd + data file, or one .mha file; docs/formats.md "MetaImage"). */
#pragma once
#include "tl-api.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

/* The largest MetaImage text header read: 64 KiB (ITK's are a few hundred bytes). */
#define TL_METAIMAGE_MAX_HEADER (1u << 16)

/* 2-D and 3-D images of one channel, every MET_ element type up to 8 bytes, either byte order,
 * raw or zlib-compressed (CompressedData), LOCAL or in a named file; an identity
 * TransformMatrix (other orientations are refused naming the matrix). */
TL_API TlImage *tl_image_load_metaimage(const char *path, GError **error);
/* .mha: one file (ElementDataFile = LOCAL); .mhd: header + X.raw (X~1.raw when the header
 * being replaced names X.raw: one rename commits the pair, image/tl-file.h). MET_FLOAT little
 * endian, uncompressed. */
/* The data file the .mhd header `path` names (image/tl-datafile.h's policy); NULL when it is
 * not a readable header or its data are LOCAL (g_free). */
TL_API char *tl_metaimage_data_path(const char *path);
TL_API gboolean tl_image_save_metaimage(const TlImage *im, const char *path, GError **error);

TL_API extern const TlFormatClass tl_format_metaimage;

G_END_DECLS
