/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sensitivity image (every allowed crystal pair back-projected, van Gendt et al. 2021 eq. 7):
 * the
 * fixed-point sums against an independent double-precision plain C reference (tests/pet-ref.c,
 * all pairs listed on the host), the symmetric method against the full one, the automatic
 * choice between them (symmetries found where they hold, refused where the grid, the
 * crystals, a mu-map or a pair subset break them), Siddon's walk in double against its float
 * walk, and the cache file's key version. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "pet/project/tl-projector.h"
#include "pet/project/tl-sensitivity.h"

static TlContext *ctx;
static const char *const kinds[] = {"siddon", "joseph"};

/* 8 sides of 4 crystals, 4 rings: the square's 8 symmetries times the axial mirror (16). */
static TlScanner *octagon(void) { return fx_ring_scanner(4, 8, 4, 6.0f, 40.0f, 6.0f, 3); }
/* 16 x 16 x 6 voxels of 4 mm, centred: crystals (x, y = +-3, +-9 on the axis-facing sides,
 * z = +-3, +-9) clear of its planes. */
static TlImageGrid octagon_grid(void) { return fx_grid(16, 16, 6, 4.0f, 4.0f, 4.0f); }

/* Every allowed pair back-projected in double. fx_grid's grids are centred: Siddon walks them
 * exactly so, first planes at -n vox / 2, which their float origins hold only to rounding
 * (the heptagon's y and z: 1e-6 mm off), as the device's double walk does. */
static double *reference(const char *kind, const TlScanner *sc, const TlImageGrid *g) {
  double *ref = g_new0(double, fx_voxels(g));
  double lo[3];
  for (int k = 0; k < 3; k++) lo[k] = -0.5 * g->dims[k] * (double)g->voxel_mm[k];
  TlRefModel m = {.kind = g_str_equal(kind, "joseph") ? TL_REF_JOSEPH : TL_REF_SIDDON,
                  .plane_lo = g_str_equal(kind, "joseph") ? NULL : lo};
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!fx_pair_allowed(sc, a, b)) continue;
      const float *ca = sc->crystals[a].centre, *cb = sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      tl_ref_back_model(&m, g, p0, p1, 1.0, ref);
    }
  return ref;
}

/* Whether Siddon's sensitivity walk must run in double here: on every device with
 * shaderFloat64 (lavapipe has it). */
static gboolean want_double(void) { return tl_context_info(ctx)->shader_float64; }

static float *sensitivity(TlProjector *p, const TlScanner *sc, TlSensMethod m) {
  GError *error = NULL;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(p));
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(img, &error));
  tl_projector_set_sensitivity_method(p, m);
  g_assert_true(tl_projector_sensitivity(p, s, sc, cry, 1, 0, img, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(img);
}

/* The measure: the largest per-voxel relative difference over the voxels holding at least 1 %
 * of the largest value. The others are the grid's corners outside the ring, grazed by a few
 * pairs, where one float chord's rounding is the whole value; the per-voxel measure is the
 * strict one inside (a sum over many pairs), unlike a difference relative to the maximum. */
static double voxel_rel(const float *a, const double *b, guint64 n) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, b[i]);
  for (guint64 i = 0; i < n; i++)
    if (b[i] >= 0.01 * m) d = MAX(d, fabs(a[i] - b[i]) / b[i]);
  return d;
}

static double *to_double(const float *a, guint64 n) {
  double *d = g_new(double, n);
  for (guint64 i = 0; i < n; i++) d[i] = a[i];
  return d;
}

/* Both methods against the double-precision reference, and against each other. The sums are
 * exact integers; what is left is the walk's rounding. Siddon walks in double (devices with
 * shaderFloat64): each chord rounded once to float, unbiased, and the image's float
 * rounding, 6e-8, so within 2e-7. Its float walk (the forward and back kernels': chords as
 * float differences of float crossing parameters) and Joseph's float interpolation, averaged
 * over the ~100 pairs per voxel here: within 1e-6 for Siddon (~5e-7 measured), 1e-5 for
 * Joseph (3e-6 measured). */
static void test_reference(gconstpointer kind) {
  GError *error = NULL;
  TlScanner *sc = octagon();
  TlImageGrid g = octagon_grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, kind, &g, &error);
  g_assert_no_error(error);
  guint order = 0;
  g_assert_cmpint(tl_projector_sensitivity_plan(p, sc, 1, FALSE, &order), ==, TL_SENS_SYMMETRIC);
  /* Joseph: no x <-> y swaps (tl_sensitivity_swaps) */
  g_assert_cmpuint(order, ==, g_str_equal(kind, "siddon") ? 16 : 8);
  g_autofree double *ref = reference(kind, sc, &g);
  g_autofree float *sym = sensitivity(p, sc, TL_SENS_AUTO);
  g_autofree float *full = sensitivity(p, sc, TL_SENS_FULL);
  g_autofree double *fulld = to_double(full, nv);
  double ds = voxel_rel(sym, ref, nv), df = voxel_rel(full, ref, nv);
  double dsf = voxel_rel(sym, fulld, nv);
  g_test_message("%s: per voxel vs double reference: symmetric %.3g, full %.3g; symmetric vs "
                 "full %.3g", (const char *)kind, ds, df, dsf);
  gboolean siddon = g_str_equal(kind, "siddon");
  g_assert_true(tl_projector_sensitivity_in_double(p) == (siddon && want_double()));
  double tol = tl_projector_sensitivity_in_double(p) ? 2e-7 : siddon ? 1e-6 : 1e-5;
  g_assert_cmpfloat(ds, <=, tol);
  g_assert_cmpfloat(df, <=, tol);
  g_assert_cmpfloat(dsf, <=, tol);
  if (siddon) { /* the float walk, as before the double one */
    tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_FLOAT);
    g_assert_false(tl_projector_sensitivity_in_double(p));
    g_autofree float *fsym = sensitivity(p, sc, TL_SENS_AUTO);
    double dfw = voxel_rel(fsym, ref, nv);
    g_test_message("siddon, float walk: symmetric vs double reference %.3g", dfw);
    g_assert_cmpfloat(dfw, <=, 1e-6);
  } else { /* Joseph has no double walk: asking for one fails, naming why */
    tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_DOUBLE);
    g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
    g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_false(tl_projector_sensitivity(p, s, sc, cry, 1, 0, img, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED);
    g_assert_nonnull(strstr(error->message, "only Siddon"));
    g_clear_error(&error);
  }
  fx_scanner_free(sc);
}

/* A heptagon has no quarter turn and only one mirror through the axes (y -> -y): 2 x the axial
 * mirror = 4 symmetries; both methods agree with the reference within the float tracer's
 * rounding. */
static void test_heptagon(void) {
  GError *error = NULL;
  TlScanner *sc = fx_ring_scanner(4, 7, 6, 4.0f, 40.0f, 6.0f, 3);
  /* planes clear of the crystals (y = +-2, +-6, +-10 on side 0) and rings (z = +-3, +-9) */
  TlImageGrid g = fx_grid(20, 15, 11, 2.0f, 2.2f, 2.5f);
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  guint order = 0;
  g_assert_cmpint(tl_projector_sensitivity_plan(p, sc, 1, FALSE, &order), ==, TL_SENS_SYMMETRIC);
  g_assert_cmpuint(order, ==, 4);
  TlSensSymmetry sym;
  tl_sensitivity_symmetry(sc, &g, TRUE, &sym);
  g_assert_cmphex(sym.mask, ==, (1u << 0) | (1u << 2) | (1u << 8) | (1u << 10));
  tl_sensitivity_symmetry_clear(&sym);
  g_autofree double *ref = reference("siddon", sc, &g);
  g_autofree float *s = sensitivity(p, sc, TL_SENS_AUTO);
  g_autofree float *f = sensitivity(p, sc, TL_SENS_FULL);
  g_autofree double *fd = to_double(f, nv);
  double ds = voxel_rel(s, ref, nv), dsf = voxel_rel(s, fd, nv);
  tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_FLOAT);
  g_autofree float *sf = sensitivity(p, sc, TL_SENS_AUTO);
  double dfw = voxel_rel(sf, ref, nv);
  g_test_message("heptagon: symmetric vs reference %.3g, vs full %.3g; float walk vs "
                 "reference %.3g", ds, dsf, dfw);
  /* The float walk: on 2 mm voxels a crossing parameter's rounding (6e-8 of the 80 mm pair)
   * is ~2e-6 of a chord, over fewer pairs per voxel than the octagon's (3e-6 and 8e-6
   * measured). The double walk: only each chord's and the image's float rounding. */
  double tol = want_double() ? 2e-7 : 2e-5;
  g_assert_cmpfloat(ds, <=, tol);
  g_assert_cmpfloat(dsf, <=, tol);
  g_assert_cmpfloat(dfw, <=, 2e-5);
  fx_scanner_free(sc);
}

/* The automatic choice: symmetric only for every pair, no mu-map, a grid centred on the axes
 * the symmetries act on, no crystal on a voxel plane; the full method otherwise. */
static void test_choice(void) {
  GError *error = NULL;
  TlScanner *sc = octagon();
  TlImageGrid g = octagon_grid();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  guint order = 0;
  g_assert_cmpint(tl_projector_sensitivity_plan(p, sc, 2, FALSE, &order), ==, TL_SENS_FULL);
  g_assert_cmpuint(order, ==, 1);
  g_assert_cmpint(tl_projector_sensitivity_plan(p, sc, 1, TRUE, &order), ==, TL_SENS_FULL);
  tl_projector_set_sensitivity_method(p, TL_SENS_FULL);
  g_assert_cmpint(tl_projector_sensitivity_plan(p, sc, 1, FALSE, &order), ==, TL_SENS_FULL);

  /* half a voxel off in x: only the transforms leaving x alone remain (y, z mirrors) */
  TlImageGrid gx = g;
  gx.origin_mm[0] += 2.0f;
  g_autoptr(TlProjector) px = tl_projector_new(ctx, "siddon", &gx, &error);
  g_assert_cmpint(tl_projector_sensitivity_plan(px, sc, 1, FALSE, &order), ==, TL_SENS_SYMMETRIC);
  g_assert_cmpuint(order, ==, 4);
  /* off in x, y and z: none */
  TlImageGrid gxyz = gx;
  gxyz.origin_mm[1] += 1.0f;
  gxyz.origin_mm[2] += 1.0f;
  g_autoptr(TlProjector) pxyz = tl_projector_new(ctx, "siddon", &gxyz, &error);
  g_assert_cmpint(tl_projector_sensitivity_plan(pxyz, sc, 1, FALSE, &order), ==, TL_SENS_FULL);
  g_assert_cmpuint(order, ==, 1);
  /* rings (z = +-3, +-9) on the planes of 3 mm voxels: a direct-plane pair lies in a voxel
   * plane, where the half-open voxels are not mirror-symmetric in z: the axial mirror goes,
   * the octagon's 8 transaxial transforms stay, and the image is the full method's */
  TlImageGrid gz = fx_grid(16, 16, 6, 4.0f, 4.0f, 3.0f);
  g_autoptr(TlProjector) pz = tl_projector_new(ctx, "siddon", &gz, &error);
  g_assert_cmpint(tl_projector_sensitivity_plan(pz, sc, 1, FALSE, &order), ==, TL_SENS_SYMMETRIC);
  g_assert_cmpuint(order, ==, 8);
  {
    guint64 nz = fx_voxels(&gz);
    g_autofree float *zs = sensitivity(pz, sc, TL_SENS_AUTO);
    g_autofree float *zf = sensitivity(pz, sc, TL_SENS_FULL);
    g_autofree double *zfd = to_double(zf, nz);
    double dz = voxel_rel(zs, zfd, nz);
    g_test_message("rings on z planes: 8 symmetries vs the full method %.3g", dz);
    g_assert_cmpfloat(dz, <=, 1e-6);
  }
  /* and with the rings on planes and half a voxel off in x too: only the y mirror is left */
  TlImageGrid gzx = gz;
  gzx.origin_mm[0] += 2.0f;
  g_autoptr(TlProjector) pzx = tl_projector_new(ctx, "siddon", &gzx, &error);
  g_assert_cmpint(tl_projector_sensitivity_plan(pzx, sc, 1, FALSE, &order), ==, TL_SENS_SYMMETRIC);
  g_assert_cmpuint(order, ==, 2);
  /* a crystal moved by 0.1 mm: the table has no symmetry left */
  sc->crystals[5].centre[0] += 0.1f;
  g_autoptr(TlProjector) pc = tl_projector_new(ctx, "siddon", &g, &error);
  g_assert_cmpint(tl_projector_sensitivity_plan(pc, sc, 1, FALSE, &order), ==, TL_SENS_FULL);
  sc->crystals[5].centre[0] -= 0.1f;
  g_assert_no_error(error);

  /* forced symmetric where it cannot apply: an error naming why, not a silent full image */
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) mu = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(img, &error) && tl_array_zero(mu, &error));
  g_autoptr(TlProjector) pf = tl_projector_new(ctx, "siddon", &g, &error);
  tl_projector_set_sensitivity_method(pf, TL_SENS_SYMMETRIC);
  g_assert_false(tl_projector_sensitivity_atten(pf, s, sc, cry, 1, 0, mu, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "mu-map"));
  g_clear_error(&error);
  g_assert_false(tl_projector_sensitivity(pf, s, sc, cry, 2, 1, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  fx_scanner_free(sc);
}

/* With a mu-map of zeros (the full method, attenuation factors 1) the image is the symmetric
 * method's, and the pair subsets (p mod 3, full method) add up to it. */
static void test_fallbacks_agree(void) {
  GError *error = NULL;
  TlScanner *sc = octagon();
  TlImageGrid g = octagon_grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  g_autofree float *sym = sensitivity(p, sc, TL_SENS_AUTO);
  g_autofree double *symd = to_double(sym, nv);
  tl_projector_set_sensitivity_method(p, TL_SENS_AUTO);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) sub = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) mu = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(img, &error) && tl_array_zero(mu, &error) &&
                tl_array_zero(sub, &error));
  g_assert_true(tl_projector_sensitivity_atten(p, s, sc, cry, 1, 0, mu, img, &error));
  for (guint k = 0; k < 3; k++)
    g_assert_true(tl_projector_sensitivity(p, s, sc, cry, 3, k, sub, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_autofree float *at = fx_download(img), *su = fx_download(sub);
  double da = voxel_rel(at, symd, nv), d3 = voxel_rel(su, symd, nv);
  g_test_message("mu = 0 vs symmetric %.3g; 3 subsets vs symmetric %.3g", da, d3);
  g_assert_cmpfloat(da, <=, 1e-6);
  g_assert_cmpfloat(d3, <=, 1e-6);
  fx_scanner_free(sc);
}

/* The DMI preset: its 34-gon has the two mirrors x -> -x, y -> -y (not the quarter turns),
 * its 4 modules of 9 rings the axial mirror, on the reference grid and the demo's. */
static void test_dmi_choice(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) sc = tl_scanner_new_preset("dmi", &error);
  g_assert_no_error(error);
  TlImageGrid grids[2] = {tl_scanner_default_grid(sc),
                          tl_image_grid_centred(108, 108, 36, 5.56f, 5.56f, 5.56f)};
  for (int i = 0; i < 2; i++) {
    TlSensSymmetry sym;
    tl_sensitivity_symmetry(sc, &grids[i], TRUE, &sym);
    g_assert_cmpuint(sym.order, ==, 8);
    g_assert_cmphex(sym.mask, ==, 0x0f0f);
    /* each permutation is one: every crystal hit once */
    g_autofree guint8 *hit = g_new(guint8, sc->n_crystals);
    for (guint k = 0; k + 1 < sym.order; k++) {
      memset(hit, 0, sc->n_crystals);
      for (guint c = 0; c < sc->n_crystals; c++) hit[sym.perm[(gsize)k * sc->n_crystals + c]]++;
      for (guint c = 0; c < sc->n_crystals; c++) g_assert_cmpuint(hit[c], ==, 1);
    }
    tl_sensitivity_symmetry_clear(&sym);
  }
}

/* The cache file carries key version 4 (fixed-point sums, the walk's arithmetic named):
 * files of earlier versions are not reused, and the float and double walks' images are two
 * files. */
static void test_cache_version(void) {
  GError *error = NULL;
  TlScanner *sc = octagon();
  TlImageGrid g = octagon_grid();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  gboolean hit = TRUE;
  g_autofree char *path = tl_sensitivity_cache_path(p, sc, 1, 0);
  g_unlink(path); /* left by an interrupted run */
  g_autoptr(TlArray) a = tl_sensitivity_image(p, s, sc, cry, 1, 0, TRUE, &hit, &error);
  g_assert_no_error(error);
  g_assert_false(hit);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &data, &len, &error));
  g_assert_true(g_str_has_prefix(data, "tomolab-sensitivity 4\nprojector siddon\nwalk "));
  g_assert_nonnull(strstr(data, want_double() ? "\nwalk double\n" : "\nwalk float\n"));
  g_autoptr(TlArray) b = tl_sensitivity_image(p, s, sc, cry, 1, 0, TRUE, &hit, &error);
  g_assert_true(hit);
  tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_FLOAT);
  g_autofree char *path_float = tl_sensitivity_cache_path(p, sc, 1, 0);
  g_assert_true(want_double() == (g_strcmp0(path, path_float) != 0));
  g_unlink(path);
  fx_scanner_free(sc);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
    char path[128];
    g_snprintf(path, sizeof path, "/pet/sensitivity/reference/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_reference);
  }
  g_test_add_func("/pet/sensitivity/heptagon", test_heptagon);
  g_test_add_func("/pet/sensitivity/choice", test_choice);
  g_test_add_func("/pet/sensitivity/fallbacks-agree", test_fallbacks_agree);
  g_test_add_func("/pet/sensitivity/dmi-choice", test_dmi_choice);
  g_test_add_func("/pet/sensitivity/cache-version", test_cache_version);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
