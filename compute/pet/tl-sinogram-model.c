/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Sinograms through the PET operator (tl-sinogram-model.h). */
#include "tl-sinogram-model.h"
#include "tl-pet-operator.h"
#include <stdlib.h>
#include <string.h>

/* the bin mapping of data/tl-sinogram-hist.c */
static gint floor_half(gint t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }
static gint mod(gint a, gint n) { return ((a % n) + n) % n; }

static const guint64 *sort_keys;
static int by_key(const void *a, const void *b) {
  guint64 ka = sort_keys[*(const guint64 *)a], kb = sort_keys[*(const guint64 *)b];
  return ka < kb ? -1 : ka > kb;
}

TlSinogram *tl_sinogram_forward(TlContext *ctx, const TlSinogram *s, const TlImage *x,
                                GError **error) {
  g_autoptr(TlScanner) sc = tl_sinogram_scanner(s, error);
  if (!sc) return NULL;
  g_autoptr(TlSinogram) ones = tl_sinogram_copy(s, FALSE);
  for (guint64 i = 0; i < ones->n_bins; i++) ones->data[i] = 1;
  GArray *pairs = tl_sinogram_to_bins(ones, TRUE, error);
  if (!pairs) return NULL;
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.use_cache = FALSE;
  TlSinogram *out = NULL;
  TlOperator *op = tl_pet_operator_new_binned(ctx, sc, (TlBin *)pairs->data, pairs->len,
                                              &x->grid, &o, error);
  guint64 n = pairs->len;
  float *y = NULL, *vals = NULL;
  guint64 *keys = NULL, *order = NULL;
  TlStream *st = NULL;
  TlArray *dx = NULL, *dy = NULL;
  if (!op) goto out;
  st = tl_stream_new(ctx, error);
  dx = st ? tl_array_new_float(ctx, tl_image_grid_n_voxels(&x->grid), error) : NULL;
  dy = dx ? tl_array_new_float(ctx, n, error) : NULL;
  if (!dy || !tl_array_upload(dx, x->data, error) ||
      !tl_operator_forward(op, st, 0, dx, dy, error) || !tl_stream_finish(st, error))
    goto out;
  y = g_new(float, n);
  if (!tl_array_download(dy, y, error)) goto out;
  /* the operator's data order is its record order (pairs regrouped by subset and sorted):
   * read the records back rather than assume it */
  TlLors lors = tl_pet_operator_lors(op, G_MAXUINT);
  if (lors.count != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "forward projection: %" G_GUINT64_FORMAT
                " records for %" G_GUINT64_FORMAT " pairs", lors.count, n);
    goto out;
  }
  TlBin *rec = g_new(TlBin, n);
  if (!tl_array_download_range(lors.records, lors.first, n, rec, error)) {
    g_free(rec);
    goto out;
  }
  keys = g_new(guint64, n);
  order = g_new(guint64, n);
  for (guint64 i = 0; i < n; i++) {
    const TlBin *b = &g_array_index(pairs, TlBin, i);
    keys[i] = (guint64)b->a * sc->n_crystals + b->b;
    order[i] = i;
  }
  sort_keys = keys;
  qsort(order, n, sizeof *order, by_key); /* pairs by (a, b) */
  vals = g_new(float, n);
  for (guint64 r = 0; r < n; r++) {
    guint64 key = (guint64)MIN(rec[r].a, rec[r].b) * sc->n_crystals + MAX(rec[r].a, rec[r].b);
    guint64 lo = 0, hi = n; /* binary search of the record's pair */
    while (lo < hi) {
      guint64 mid = (lo + hi) / 2;
      if (keys[order[mid]] < key) lo = mid + 1;
      else hi = mid;
    }
    if (lo == n || keys[order[lo]] != key) {
      g_free(rec);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "forward projection: record %"
                  G_GUINT64_FORMAT " (%u, %u) is not one of the sinogram's pairs", r, rec[r].a,
                  rec[r].b);
      goto out;
    }
    vals[order[lo]] = y[r];
  }
  g_free(rec);
  out = tl_sinogram_copy(s, FALSE);
  if (!tl_sinogram_set_from_pairs(out, pairs, vals, error)) g_clear_pointer(&out, tl_sinogram_free);
out:
  if (dx) tl_array_free(dx);
  if (dy) tl_array_free(dy);
  if (st) tl_stream_free(st);
  if (op) tl_operator_free(op);
  g_array_free(pairs, TRUE);
  g_free(y);
  g_free(vals);
  g_free(keys);
  g_free(order);
  return out;
}

gboolean tl_sinogram_expected_plane(TlContext *ctx, const TlSinogram *s, guint seg, guint ax,
                                    const TlScanner *scanner, const TlImage *image,
                                    const char *projector, const TlImage *mu, float *out,
                                    GError **error) {
  TlSinogramModel m = {.projector = projector, .mu = mu};
  return tl_sinogram_model_plane(ctx, s, seg, ax, scanner, image, &m, out, NULL, NULL, error);
}

gboolean tl_sinogram_model_plane(TlContext *ctx, const TlSinogram *s, guint seg, guint ax,
                                 const TlScanner *scanner, const TlImage *image,
                                 const TlSinogramModel *model, float *out, float *out_randoms,
                                 float *out_scatter, GError **error) {
  if (seg >= s->n_segments || ax >= s->n_axial[seg] ||
      s->min_ring_difference[seg] != s->max_ring_difference[seg] ||
      (s->n_detectors / 2) / s->n_views != 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sinogram plane: segment %u axial position %u (%u segments; span 1, no view "
                "mashing expected)", seg, ax, s->n_segments);
    return FALSE;
  }
  const TlRandoms *rnd = model->randoms;
  const TlScatterEstimate *sc = model->scatter;
  if (model->norm && !tl_norm_check_scanner(model->norm, scanner, "the normalisation", error))
    return FALSE;
  if (sc && !tl_scatter_estimate_check_scanner(sc, scanner, "the scatter estimate", error))
    return FALSE;
  if (rnd && rnd->n_crystals != scanner->n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms estimate of %u crystals for "
                "scanner '%s' of %u crystals", rnd->n_crystals, scanner->name ? scanner->name : "",
                scanner->n_crystals);
    return FALSE;
  }
  TlCylinder cyl; /* detector positions to crystals, block gaps left out */
  tl_sinogram_cylinder(s, &cyl);
  gint N = (gint)s->n_detectors, rd = s->min_ring_difference[seg];
  gint r1 = rd >= 0 ? (gint)ax : (gint)ax - rd, r2 = r1 + rd;
  gint t0 = -(gint)(s->n_tangential / 2);
  guint n_plane = s->n_views * s->n_tangential;
  memset(out, 0, n_plane * sizeof(float));
  if (out_randoms) memset(out_randoms, 0, n_plane * sizeof(float));
  if (out_scatter) memset(out_scatter, 0, n_plane * sizeof(float));
  /* the plane's detectable pairs, and the plane pixel each one adds to */
  g_autoptr(GArray) bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
  g_autoptr(GArray) pixel = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint v = 0; v < s->n_views; v++)
    for (guint ti = 0; ti < s->n_tangential; ti++) {
      gint t = t0 + (gint)ti;
      guint d1 = (guint)mod((gint)v + floor_half(t), N);
      guint d2 = (guint)mod((gint)v - floor_half(t + 1) + N / 2, N);
      guint32 a = tl_cylinder_crystal(&cyl, (guint)r1, d1), b = tl_cylinder_crystal(&cyl, (guint)r2, d2);
      if (a == G_MAXUINT32 || b == G_MAXUINT32) continue;
      if (a == b || !tl_scanner_pair_allowed(scanner, a, b)) continue;
      TlBin bin = {MIN(a, b), MAX(a, b), 1.0f};
      guint px = v * s->n_tangential + ti;
      g_array_append_val(bins, bin);
      g_array_append_val(pixel, px);
      /* the additive term of the pair as the reconstruction's (tl_pet_operator_additive):
       * r_ab + eps_a eps_b S_ab, not attenuated; TOF bins summed */
      double r = rnd ? tl_randoms_pair(rnd, bin.a, bin.b) : 0;
      double n = model->norm ? tl_norm_scatter_pair(model->norm, bin.a, bin.b) : 1;
      double sct = sc ? n * tl_scatter_estimate_pair(sc, bin.a, bin.b) : 0;
      out[px] += (float)(r + sct);
      if (out_randoms) out_randoms[px] += (float)r;
      if (out_scatter) out_scatter[px] += (float)sct;
    }
  if (bins->len == 0) return TRUE;
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = model->projector;
  o.subsets = 1;
  o.attenuation = model->mu;
  o.norm = model->norm;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) op = tl_pet_operator_new_binned(ctx, scanner, (const TlBin *)bins->data,
                                                        bins->len, &image->grid, &o, error);
  if (!op) return FALSE;
  /* the operator stores bins sorted by pair: its records say which pair each datum is */
  TlLors lors = tl_pet_operator_lors(op, G_MAXUINT);
  guint64 nd = tl_operator_n_data(op), nv = tl_image_grid_n_voxels(&image->grid);
  g_autofree TlBin *rec = g_new(TlBin, nd);
  g_autofree float *y = g_new(float, nd);
  g_autoptr(TlStream) st = tl_stream_new(ctx, error);
  g_autoptr(TlArray) x = st ? tl_array_new(ctx, nv, sizeof(float), error) : NULL;
  g_autoptr(TlArray) ya = x ? tl_array_new(ctx, nd, sizeof(float), error) : NULL;
  /* D = n exp(-A mu) is the operator's diagonal, applied inside its projection kernels */
  if (!ya || !tl_array_upload(x, image->data, error) ||
      !tl_operator_forward(op, st, 0, x, ya, error) || !tl_stream_finish(st, error) ||
      !tl_array_download(ya, y, error) || !tl_array_download(lors.records, rec, error))
    return FALSE;
  g_autoptr(GHashTable) where = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autofree gint64 *keys = g_new(gint64, bins->len);
  for (guint i = 0; i < bins->len; i++) {
    const TlBin *b = &g_array_index(bins, TlBin, i);
    keys[i] = (gint64)b->a << 32 | b->b;
    g_hash_table_insert(where, &keys[i], GUINT_TO_POINTER(g_array_index(pixel, guint, i) + 1));
  }
  for (guint64 j = 0; j < nd; j++) {
    /* records hold each pair in the operator's orientation (tl-pet-operator.c, orient) */
    gint64 key = (gint64)MIN(rec[j].a, rec[j].b) << 32 | MAX(rec[j].a, rec[j].b);
    guint px = GPOINTER_TO_UINT(g_hash_table_lookup(where, &key));
    if (px) out[px - 1] += y[j];
  }
  return TRUE;
}
