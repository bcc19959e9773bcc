/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Flat/dark normalisation and -log with a floor (tl-ct-normalise.h). */
#include "tl-ct-normalise.h"
#include "tl-error.h"
#include <math.h>

static gboolean floor_ok(double floor, const char *what, GError **error) {
  if (floor > 0 && floor <= 1) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s: transmission floor %g, expected a value in (0, 1]", what, floor);
  return FALSE;
}

double *tl_ct_image_mean(const float *images, guint n, gsize pixels) {
  double *m = g_new0(double, pixels);
  for (guint k = 0; k < n; k++)
    for (gsize i = 0; i < pixels; i++) m[i] += images[k * pixels + i];
  if (n > 0)
    for (gsize i = 0; i < pixels; i++) m[i] /= n;
  return m;
}

gboolean tl_ct_normalise(const float *data, guint n_views, gsize pixels, const float *flats,
                         guint n_flats, const float *darks, guint n_darks, double floor,
                         gboolean minus_log, float *out, guint64 *clamped, GError **error) {
  if (!floor_ok(floor, "flat/dark normalisation", error)) return FALSE;
  if (!data || !out || !flats || n_flats == 0 || pixels == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "flat/dark normalisation: %u flats of %" G_GSIZE_FORMAT " pixels%s, expected "
                "at least one flat image and one pixel", n_flats, pixels,
                data && out ? "" : " and no projections");
    return FALSE;
  }
  g_autofree double *w = tl_ct_image_mean(flats, n_flats, pixels);
  g_autofree double *d = tl_ct_image_mean(darks, darks ? n_darks : 0, pixels);
  guint64 low = 0;
  for (guint v = 0; v < n_views; v++)
    for (gsize i = 0; i < pixels; i++) {
      gsize j = v * pixels + i;
      double t = (data[j] - d[i]) / (w[i] - d[i]);
      /* written so that NaN (0/0, a NaN pixel) fails the test and is clamped too */
      if (!(w[i] - d[i] > 0) || !(t >= floor)) {
        t = floor;
        low++;
      }
      out[j] = (float)(minus_log ? -log(t) : t);
    }
  if (clamped) *clamped = low;
  return TRUE;
}

gboolean tl_ct_minus_log(const float *t, gsize n, double floor, float *out, guint64 *clamped,
                         GError **error) {
  if (!floor_ok(floor, "-log", error)) return FALSE;
  guint64 low = 0;
  for (gsize i = 0; i < n; i++) {
    double v = t[i];
    if (!(v >= floor)) {
      v = floor;
      low++;
    }
    out[i] = (float)-log(v);
  }
  if (clamped) *clamped = low;
  return TRUE;
}
