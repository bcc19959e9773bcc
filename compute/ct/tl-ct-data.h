/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtData: a CT scan in memory and on disk (".tlct", docs/formats.md "CT"): the geometry,
 * the projections (float32, views x rows x columns, column fastest) and what they hold.
 *
 *   TOMOLAB-CT 1
 *   values = line-integrals          # or counts
 *   i0 = 10000                       # incident photons per pixel when noise was simulated
 *   byte_order = little-endian
 *   grid = 64 64 64 1 1 1 -31.5 -31.5 -31.5   # optional: a suggested volume grid
 *   description = ...                # optional, one line
 *   begin_geometry
 *   ...the geometry text (tl-ct-geometry.h)...
 *   end_geometry
 *   end_header
 *   <4 x views x det_v x det_u bytes>
 */
#pragma once
#include "tl-api.h"
#include "image/tl-image.h"
#include "tl-ct-geometry.h"

G_BEGIN_DECLS

typedef enum {
  TL_CT_LINE_INTEGRALS, /* -log(I / I0): what every algorithm reconstructs from */
  TL_CT_COUNTS,         /* detected counts (emission data for MLEM) */
} TlCtValues;

typedef struct {
  TlCtGeometry *geometry; /* owned */
  float *proj;            /* owned: n_views * det_v * det_u */
  TlCtValues values;
  double i0;              /* 0 = noise-free */
  gboolean has_grid;
  TlImageGrid grid;       /* suggested reconstruction grid, when has_grid */
  char *description;
} TlCtData;

/* Takes the geometry; projections zero-filled. */
TL_API TlCtData *tl_ct_data_new(TlCtGeometry *geometry_owned);
TL_API void tl_ct_data_free(TlCtData *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtData, tl_ct_data_free)
TL_API guint64 tl_ct_data_n_values(const TlCtData *d);

/* Load checks the header, the geometry and that the data section has exactly the size the
 * header implies and only finite values; errors name the file, the line and the value. */
TL_API TlCtData *tl_ct_data_load(const char *path, GError **error);
TL_API gboolean tl_ct_data_save(const TlCtData *d, const char *path, GError **error);
/* Whether the file starts like a CT data file (for verbs that accept several kinds). */
TL_API gboolean tl_ct_data_sniff(const char *path);

/* Entry of the format table (compute/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_tlct;

G_END_DECLS
