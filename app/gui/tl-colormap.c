/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Tables built once from a few control points by linear interpolation (viridis from 9
 * samples of matplotlib's table: close enough for display). */
#include "tl-colormap.h"
#include <string.h>

typedef struct { float t, r, g, b; } Stop;

static const Stop kGrey[] = {{0, 0, 0, 0}, {1, 1, 1, 1}};
static const Stop kInverted[] = {{0, 1, 1, 1}, {1, 0, 0, 0}};
static const Stop kHot[] = {{0, 0, 0, 0}, {0.4f, 0.75f, 0, 0}, {0.75f, 1, 0.75f, 0}, {1, 1, 1, 1}};
static const Stop kViridis[] = {
    {0.000f, 0.267f, 0.005f, 0.329f}, {0.125f, 0.283f, 0.141f, 0.458f},
    {0.250f, 0.254f, 0.265f, 0.530f}, {0.375f, 0.207f, 0.372f, 0.553f},
    {0.500f, 0.164f, 0.471f, 0.558f}, {0.625f, 0.128f, 0.567f, 0.551f},
    {0.750f, 0.135f, 0.659f, 0.518f}, {0.875f, 0.478f, 0.821f, 0.318f},
    {1.000f, 0.993f, 0.906f, 0.144f}};

static const char *const kNames[TL_N_COLORMAPS] = {"grey", "hot-metal", "viridis", "inverted-grey"};

const char *tl_colormap_name(TlColormap c) {
  return c < TL_N_COLORMAPS ? kNames[c] : "grey";
}

gboolean tl_colormap_from_name(const char *name, TlColormap *out) {
  for (int i = 0; i < TL_N_COLORMAPS; i++)
    if (g_strcmp0(name, kNames[i]) == 0) {
      *out = i;
      return TRUE;
    }
  return FALSE;
}

static void build(guint32 *lut, const Stop *s, gsize n) {
  for (int i = 0; i < 256; i++) {
    float t = i / 255.0f;
    gsize k = 0;
    while (k + 2 < n && t > s[k + 1].t)
      k++;
    float u = (t - s[k].t) / (s[k + 1].t - s[k].t);
    u = CLAMP(u, 0.0f, 1.0f);
    guint r = (guint)((s[k].r + u * (s[k + 1].r - s[k].r)) * 255.0f + 0.5f);
    guint g = (guint)((s[k].g + u * (s[k + 1].g - s[k].g)) * 255.0f + 0.5f);
    guint b = (guint)((s[k].b + u * (s[k + 1].b - s[k].b)) * 255.0f + 0.5f);
    lut[i] = 0xff000000u | r << 16 | g << 8 | b;
  }
}

const guint32 *tl_colormap_lut(TlColormap c) {
  static guint32 luts[TL_N_COLORMAPS][256];
  static gsize once;
  if (g_once_init_enter(&once)) {
    build(luts[TL_COLORMAP_GREY], kGrey, G_N_ELEMENTS(kGrey));
    build(luts[TL_COLORMAP_HOT_METAL], kHot, G_N_ELEMENTS(kHot));
    build(luts[TL_COLORMAP_VIRIDIS], kViridis, G_N_ELEMENTS(kViridis));
    build(luts[TL_COLORMAP_INVERTED_GREY], kInverted, G_N_ELEMENTS(kInverted));
    g_once_init_leave(&once, 1);
  }
  return luts[c < TL_N_COLORMAPS ? c : 0];
}
