/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Colour maps for the slice views: 256-entry lookup tables of premultiplied pixels in
 * cairo's ARGB32 layout (which is also the GdkMemoryTexture format used). */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TL_COLORMAP_GREY,
  TL_COLORMAP_HOT_METAL,   /* PET convention: black, red, yellow, white */
  TL_COLORMAP_VIRIDIS,
  TL_COLORMAP_INVERTED_GREY,
  TL_N_COLORMAPS,
} TlColormap;

const char *tl_colormap_name(TlColormap c);         /* "grey", "hot-metal", ... */
gboolean tl_colormap_from_name(const char *name, TlColormap *out);
/* 256 pixels, opaque, as 0xAARRGGBB words. */
const guint32 *tl_colormap_lut(TlColormap c);
/* Index into the table for v with window [lo, hi]. */
static inline guint8 tl_colormap_index(float v, float lo, float hi) {
  float t = hi > lo ? (v - lo) / (hi - lo) : 0.0f;
  t = t != t ? 0.0f : t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
  return (guint8)(t * 255.0f + 0.5f);
}

G_END_DECLS
