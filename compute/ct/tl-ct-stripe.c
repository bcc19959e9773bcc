/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Sorting-based stripe removal and dead-pixel columns (Vo, Atwood & Drakopoulos 2018;
 * tl-ct-stripe.h). */
#include "tl-ct-stripe.h"
#include "tl-error.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
  float value;
  guint view;
} Ranked;

/* ties keep view order, so the result does not depend on qsort's algorithm */
static int ranked_cmp(const void *a, const void *b) {
  const Ranked *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->view > y->view) - (x->view < y->view);
}

static int float_cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The window slides one column: `out` leaves the sorted w[0..n), `in` enters it (O(n)). */
static void window_slide(float *w, guint n, float out, float in) {
  guint i = 0;
  while (i < n - 1 && w[i] != out) i++; /* out is in w */
  for (; i + 1 < n; i++) w[i] = w[i + 1]; /* drop it ... */
  guint j = n - 1;
  for (; j > 0 && w[j - 1] > in; j--) w[j] = w[j - 1]; /* ... and insert in, in order */
  w[j] = in;
}

/* One sinogram s[v * stride + c]; sorted and rank hold n_views x n_cols, window size. */
static void destripe(float *s, gsize stride, guint n_views, guint n_cols, guint size,
                     float *sorted, guint *rank, float *window, Ranked *col) {
  for (guint c = 0; c < n_cols; c++) {
    for (guint v = 0; v < n_views; v++) col[v] = (Ranked){s[v * stride + c], v};
    qsort(col, n_views, sizeof *col, ranked_cmp);
    for (guint i = 0; i < n_views; i++) {
      sorted[(gsize)i * n_cols + c] = col[i].value;
      rank[(gsize)i * n_cols + c] = col[i].view;
    }
  }
  int h = (int)size / 2, last = (int)n_cols - 1;
  for (guint i = 0; i < n_views; i++) {
    const float *row = sorted + (gsize)i * n_cols;
    for (int o = -h; o <= h; o++) window[o + h] = row[CLAMP(o, 0, last)];
    qsort(window, size, sizeof *window, float_cmp);
    for (guint c = 0; c < n_cols; c++) {
      if (c > 0)
        window_slide(window, size, row[CLAMP((int)c - 1 - h, 0, last)],
                     row[CLAMP((int)c + h, 0, last)]);
      s[rank[(gsize)i * n_cols + c] * stride + c] = window[h];
    }
  }
}

/* The checks both entry points share: counts, window, finite values. */
static gboolean check_input(const float *proj, guint n_views, guint n_rows, guint n_cols,
                            guint size, const char *what, GError **error) {
  if (!proj || n_views == 0 || n_rows == 0 || n_cols == 0 || size < 3 || size % 2 == 0 ||
      size > 2 * (guint64)n_cols + 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: %u views x %u rows x %u columns, median window %u: expected "
                "every count > 0 and an odd window of 3 .. %" G_GUINT64_FORMAT " columns",
                what, n_views, n_rows, n_cols, size, 2 * (guint64)n_cols + 1);
    return FALSE;
  }
  gsize n = (gsize)n_views * n_rows * n_cols;
  for (gsize i = 0; i < n; i++)
    if (!isfinite(proj[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "%s: value %g at view %" G_GSIZE_FORMAT ", row %" G_GSIZE_FORMAT
                  ", column %" G_GSIZE_FORMAT ", expected finite values", what, proj[i],
                  i / ((gsize)n_rows * n_cols), i / n_cols % n_rows, i % n_cols);
      return FALSE;
    }
  return TRUE;
}

gboolean tl_ct_remove_stripes(float *proj, guint n_views, guint n_rows, guint n_cols,
                              guint size, GError **error) {
  if (!check_input(proj, n_views, n_rows, n_cols, size, "stripe removal", error)) return FALSE;
  g_autofree float *sorted = g_new(float, (gsize)n_views * n_cols);
  g_autofree guint *rank = g_new(guint, (gsize)n_views * n_cols);
  g_autofree float *window = g_new(float, size);
  g_autofree Ranked *col = g_new(Ranked, n_views);
  for (guint r = 0; r < n_rows; r++)
    destripe(proj + (gsize)r * n_cols, (gsize)n_rows * n_cols, n_views, n_cols, size, sorted,
             rank, window, col);
  return TRUE;
}

static int double_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One sinogram s[v * stride + c]: its dead columns replaced; var, med, win, dead: scratch of
 * n_cols, n_cols, size, n_cols. Returns the columns replaced. */
static guint dead_columns(float *s, gsize stride, guint n_views, guint n_cols, guint size,
                          double ratio, double *var, double *med, double *win, gboolean *dead) {
  for (guint c = 0; c < n_cols; c++) {
    double sum = 0;
    for (guint v = 0; v + 1 < n_views; v++)
      sum += fabs((double)s[(v + 1) * stride + c] - s[v * stride + c]);
    var[c] = n_views > 1 ? sum / (n_views - 1) : 0;
  }
  int h = (int)size / 2, last = (int)n_cols - 1;
  guint found = 0;
  for (guint c = 0; c < n_cols; c++) {
    for (int o = -h; o <= h; o++) win[o + h] = var[CLAMP((int)c + o, 0, last)];
    qsort(win, size, sizeof *win, double_cmp);
    med[c] = win[h];
    dead[c] = med[c] > 0 && var[c] < ratio * med[c];
    found += dead[c];
  }
  if (found == 0 || found == n_cols) return 0; /* nothing to do, or nothing to take from */
  for (guint c = 0; c < n_cols; c++) {
    if (!dead[c]) continue;
    int l = (int)c - 1, r = (int)c + 1;
    while (l >= 0 && dead[l]) l--;
    while (r <= last && dead[r]) r++;
    for (guint v = 0; v < n_views; v++) {
      float *row = s + v * stride;
      if (l < 0) row[c] = row[r];
      else if (r > last) row[c] = row[l];
      else row[c] = (float)(row[l] + ((double)row[r] - row[l]) * (double)((int)c - l) / (r - l));
    }
  }
  return found;
}

gboolean tl_ct_remove_dead_stripes(float *proj, guint n_views, guint n_rows, guint n_cols,
                                   guint size, double ratio, guint64 *n_found, GError **error) {
  if (!check_input(proj, n_views, n_rows, n_cols, size, "dead-column removal", error))
    return FALSE;
  if (!(ratio > 0 && ratio < 1)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "dead-column removal: ratio %g, "
                "expected a fraction of the neighbours' variation in (0, 1)", ratio);
    return FALSE;
  }
  g_autofree double *var = g_new(double, n_cols), *med = g_new(double, n_cols),
                    *win = g_new(double, size);
  g_autofree gboolean *dead = g_new(gboolean, n_cols);
  guint64 found = 0;
  for (guint r = 0; r < n_rows; r++)
    found += dead_columns(proj + (gsize)r * n_cols, (gsize)n_rows * n_cols, n_views, n_cols,
                          size, ratio, var, med, win, dead);
  if (n_found) *n_found = found;
  return TRUE;
}
