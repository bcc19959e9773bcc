/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Data Exchange HDF5 projections (ct/tl-format-dxchange.c) and the centre-of-rotation
 * search (ct/tl-ct-centre.c). The small files are written here with libhdf5 from the
 * published layout (De Carlo et al. 2014: /exchange/data, data_white, data_dark, theta),
 * never by the reader; the real scan is ../shared/data/tooth/tooth.h5. */
#include "tl-test-common.h"
#include "dataset/tl-dataset.h"
#include "dataset/tl-formats.h"
#include "ct/tl-ct-centre.h"
#include "ct/tl-ct-formats.h"
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <string.h>

static char *dir;

enum { V = 4, R = 2, C = 5, NF = 2 };

/* One dataset under /exchange; buf NULL: declared, never written (no storage). */
static void put(hid_t f, const char *name, int rank, const hsize_t *dims, hid_t type,
                const void *buf) {
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  g_assert_cmpint(d, >=, 0);
  if (buf) g_assert_cmpint(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), >=, 0);
  H5Dclose(d);
  H5Sclose(space);
}

/* A fixed-length ASCII string, or (vlen_utf8) what h5py 3 writes for a Python str: a scalar
 * variable-length string with character set UTF-8. */
static void put_units(hid_t f, const char *name, const char *units, gboolean vlen_utf8) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t t = H5Tcopy(H5T_C_S1);
  if (vlen_utf8) {
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
  } else H5Tset_size(t, strlen(units) + 1);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(d, "units", t, s, H5P_DEFAULT, H5P_DEFAULT);
  if (vlen_utf8) H5Awrite(a, t, &units);
  else H5Awrite(a, t, units);
  H5Aclose(a), H5Sclose(s), H5Tclose(t), H5Dclose(d);
}

/* What a case changes in the good file. */
typedef struct {
  const char *omit;           /* a dataset left out */
  int data_rank;              /* 0: 3 */
  guint white_cols;           /* 0: C */
  guint theta_n;              /* 0: V */
  double theta0;              /* replaces theta[0] when not 0 */
  const char *units;          /* NULL: "degrees"; "": none */
  gboolean radians;           /* theta written in radians */
  gboolean units_vlen_utf8;   /* units as h5py 3 writes a str */
  gboolean uint16;            /* data as uint16 */
  float data0;                /* replaces data[0] when not 0 */
  hsize_t huge[3];            /* data declared with these extents (not written) */
} Case;

static float white_v(guint f, guint i) { return 1000.0f + 10 * f + i; }
static float dark_v(guint f) { return 100.0f + 10 * f; }
static double p_true(guint v, guint i) { return 0.1 * (v + 1) + 0.01 * i; }

/* data I = D + (W - D) exp(-p), rounded to integers (uint16 too); pixel (1, 0, 3): I < D */
static float data_v(guint v, guint i) {
  if (v == 1 && i == 3) return 50;
  double w = 1005.0 + i, d = 105.0;
  return (float)round(d + (w - d) * exp(-p_true(v, i)));
}

static char *write_case(const char *name, const Case *c) {
  char *path = g_build_filename(dir, name, NULL);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  g_assert_cmpint(f, >=, 0);
  hid_t g = H5Gcreate2(f, "/exchange", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  float data[V * R * C], white[NF * R * 8], dark[NF * R * C];
  guint16 data16[V * R * C];
  guint wc = c->white_cols ? c->white_cols : C;
  for (guint v = 0; v < V; v++)
    for (guint i = 0; i < R * C; i++) data[v * R * C + i] = data_v(v, i);
  if (c->data0 != 0) data[0] = c->data0;
  for (guint k = 0; k < V * R * C; k++) data16[k] = (guint16)data[k];
  for (guint fl = 0; fl < NF; fl++) {
    for (guint i = 0; i < R * wc; i++) white[fl * R * wc + i] = white_v(fl, i);
    for (guint i = 0; i < R * C; i++) dark[fl * R * C + i] = dark_v(fl);
  }
  double theta[V + 2];
  for (guint v = 0; v < V + 2; v++) theta[v] = c->radians ? v * G_PI / 4 : v * 45.0;
  if (c->theta0 != 0) theta[0] = c->theta0;
  if (g_strcmp0(c->omit, "data") != 0) {
    if (c->huge[0]) put(f, "/exchange/data", 3, c->huge, H5T_NATIVE_FLOAT, NULL);
    else if (c->data_rank == 2)
      put(f, "/exchange/data", 2, (hsize_t[]){V, R * C}, H5T_NATIVE_FLOAT, data);
    else if (c->uint16)
      put(f, "/exchange/data", 3, (hsize_t[]){V, R, C}, H5T_NATIVE_USHORT, data16);
    else put(f, "/exchange/data", 3, (hsize_t[]){V, R, C}, H5T_NATIVE_FLOAT, data);
  }
  if (g_strcmp0(c->omit, "data_white") != 0)
    put(f, "/exchange/data_white", 3, (hsize_t[]){NF, R, wc}, H5T_NATIVE_FLOAT, white);
  if (g_strcmp0(c->omit, "data_dark") != 0)
    put(f, "/exchange/data_dark", 3, (hsize_t[]){NF, R, C}, H5T_NATIVE_FLOAT, dark);
  if (g_strcmp0(c->omit, "theta") != 0) {
    put(f, "/exchange/theta", 1, (hsize_t[]){c->theta_n ? c->theta_n : V}, H5T_NATIVE_DOUBLE,
        theta);
    const char *units = c->units ? c->units : c->radians ? "radians" : "degrees";
    if (units[0]) put_units(f, "/exchange/theta", units, c->units_vlen_utf8);
  }
  H5Fclose(f);
  return path;
}

static void check_good(const TlCtData *d, gboolean dark) {
  const TlCtGeometry *g = d->geometry;
  g_assert_cmpint(g->beam, ==, TL_CT_PARALLEL);
  g_assert_cmpuint(g->n_views, ==, V);
  g_assert_cmpuint(g->det_u, ==, C);
  g_assert_cmpuint(g->det_v, ==, R);
  g_assert_cmpint(d->values, ==, TL_CT_LINE_INTEGRALS);
  for (guint v = 0; v < V; v++)
    for (guint i = 0; i < R * C; i++) {
      double w = 1005.0 + i, k = dark ? 105.0 : 0.0, I = data_v(v, i);
      double t = (I - k) / (w - k);
      double p = t >= 1e-6 ? -log(t) : -log(1e-6);
      g_assert_cmpfloat_with_epsilon(d->proj[v * R * C + i], p, 1e-5);
    }
  /* the clamped pixel, reported */
  if (dark) g_assert_cmpfloat_with_epsilon(d->proj[1 * R * C + 3], -log(1e-6), 1e-4);
  if (dark) g_assert_nonnull(strstr(d->description, " 1 values clamped"));
  /* parallel beam, theta 0, 45, 90, 135 deg: u = -sin t x + cos t y + (C - 1) / 2 with 1 mm
   * pixels, v = z + (R - 1) / 2 */
  double x[3] = {0.7, -1.2, 0.25};
  for (guint v = 0; v < V; v++) {
    double t = v * G_PI / 4, u, vv;
    tl_ct_geometry_project(g, v, x, &u, &vv);
    g_assert_cmpfloat_with_epsilon(u, -sin(t) * x[0] + cos(t) * x[1] + 0.5 * (C - 1), 1e-9);
    g_assert_cmpfloat_with_epsilon(vv, x[2] + 0.5 * (R - 1), 1e-9);
  }
}

static void test_good(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *p = write_case("good.h5", &(Case){0});
  const TlFormatClass *f = tl_format_detect(p, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "dxchange");
  g_autoptr(TlCtData) d = tl_format_load_kind(p, TL_DATA_CT, &error);
  g_assert_no_error(error);
  check_good(d, TRUE);
  /* by content: the same file named .dat */
  g_autofree char *q = g_build_filename(dir, "good.dat", NULL);
  g_assert_cmpint(g_rename(p, q), ==, 0);
  g_assert_true(tl_format_detect(q, &error) == f);
  GString *info = g_string_new(NULL);
  g_assert_true(tl_format_describe_file(q, info, &error));
  g_assert_nonnull(strstr(info->str, "4 views x 2 rows x 5 columns"));
  g_string_free(info, TRUE);
}

static void test_variants(void) {
  g_autoptr(GError) error = NULL;
  /* uint16 counts, theta in radians with units */
  g_autofree char *a = write_case("u16.h5", &(Case){.uint16 = TRUE, .radians = TRUE});
  g_autoptr(TlCtData) da = tl_ct_dxchange_load(a, &error);
  g_assert_no_error(error);
  check_good(da, TRUE);
  /* no units: degrees inferred from an angle above 2 pi, radians otherwise */
  g_autofree char *b = write_case("deg.h5", &(Case){.units = ""});
  g_autoptr(TlCtData) db = tl_ct_dxchange_load(b, &error);
  g_assert_no_error(error);
  check_good(db, TRUE);
  g_assert_nonnull(strstr(db->description, "units inferred"));
  g_autofree char *c = write_case("rad.h5", &(Case){.units = "", .radians = TRUE});
  g_autoptr(TlCtData) dc = tl_ct_dxchange_load(c, &error);
  g_assert_no_error(error);
  check_good(dc, TRUE);
  /* units as h5py 3 writes a Python str (issue 27 item 7: was "not one readable string") */
  g_autofree char *u = write_case("utf8.h5", &(Case){.radians = TRUE, .units_vlen_utf8 = TRUE});
  g_autoptr(TlCtData) du = tl_ct_dxchange_load(u, &error);
  g_assert_no_error(error);
  check_good(du, TRUE);
  /* no data_dark: zero */
  g_autofree char *e = write_case("nodark.h5", &(Case){.omit = "data_dark"});
  g_autoptr(TlCtData) de = tl_ct_dxchange_load(e, &error);
  g_assert_no_error(error);
  check_good(de, FALSE);
}

static void hostile(const char *name, const Case *c, const char *key, const char *value) {
  g_autofree char *p = c ? write_case(name, c) : g_build_filename(dir, name, NULL);
  g_autoptr(GError) error = NULL;
  gpointer d = tl_format_load_kind(p, TL_DATA_CT, &error);
  if (d) tl_ct_data_free(d);
  g_assert_null(d);
  g_assert_nonnull(error);
  g_test_message("%s: %s", name, error->message);
  g_assert_nonnull(strstr(error->message, p));
  if (key) g_assert_nonnull(strstr(error->message, key));
  if (value) g_assert_nonnull(strstr(error->message, value));
  /* `info` runs the same loader (issue 27: it described a NaN angle or value and said OK) */
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GError) info_error = NULL;
  g_assert_false(tl_dataset_info(p, FALSE, out, &info_error));
  g_assert_nonnull(info_error);
  g_assert_nonnull(strstr(info_error->message, error->message));
}

static void test_hostile(void) {
  hostile("nodata.h5", &(Case){.omit = "data"}, "/exchange/data", "missing");
  hostile("nowhite.h5", &(Case){.omit = "data_white"}, "/exchange/data_white", "missing");
  hostile("notheta.h5", &(Case){.omit = "theta"}, "/exchange/theta", "missing");
  hostile("rank.h5", &(Case){.data_rank = 2}, "/exchange/data", "rank 2, expected 3");
  hostile("whitecols.h5", &(Case){.white_cols = 6}, "/exchange/data_white", "2 x 6");
  hostile("thetan.h5", &(Case){.theta_n = 3}, "/exchange/theta", "3 angles");
  hostile("nantheta.h5", &(Case){.theta0 = NAN}, "/exchange/theta", "nan");
  hostile("nandata.h5", &(Case){.data0 = NAN}, "/exchange/data", "nan");
  hostile("neginf.h5", &(Case){.data0 = -INFINITY}, "/exchange/data", "-inf");
  hostile("units.h5", &(Case){.units = "furlongs"}, "/exchange/theta", "furlongs");
  hostile("huge.h5", &(Case){.huge = {70000, R, C}}, "/exchange/data", "70000");
  hostile("values.h5", &(Case){.huge = {60000, 60000, C}}, "/exchange/data", "18000000000");
  /* a good file cut in half; a text file named .h5 */
  g_autofree char *p = write_case("cut.h5", &(Case){0});
  g_autofree char *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(p, &bytes, &n, NULL));
  g_assert_true(g_file_set_contents(p, bytes, (gssize)(n / 2), NULL));
  hostile("cut.h5", NULL, NULL, NULL);
  g_autofree char *t = g_build_filename(dir, "text.h5", NULL);
  g_assert_true(g_file_set_contents(t, "not hdf5\n", -1, NULL));
  hostile("text.h5", NULL, NULL, NULL);
}

/* Issue 27: HDF5 reads other files for an external link, external raw storage (a dataset whose
 * values are in /etc/passwd) or a virtual dataset; all refused (image/tl-datafile.h's policy:
 * data only from the header's folder, here from the file itself). */
static void test_external(void) {
  g_autofree char *target = write_case("ext-target.h5", &(Case){0});
  g_autofree char *link = write_case("extlink.h5", &(Case){.omit = "data"});
  hid_t f = H5Fopen(link, H5F_ACC_RDWR, H5P_DEFAULT);
  g_assert_cmpint(f, >=, 0);
  g_assert_cmpint(H5Lcreate_external(target, "/exchange/data", f, "/exchange/data", H5P_DEFAULT,
                                     H5P_DEFAULT), >=, 0);
  H5Fclose(f);
  hostile("extlink.h5", NULL, "/exchange/data", "external link");
  g_autofree char *store = write_case("extstore.h5", &(Case){.omit = "data"});
  f = H5Fopen(store, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  g_assert_cmpint(H5Pset_external(dcpl, "/etc/passwd", 0, V * R * C * 4), >=, 0);
  hid_t space = H5Screate_simple(3, (hsize_t[]){V, R, C}, NULL);
  hid_t d = H5Dcreate2(f, "/exchange/data", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl,
                       H5P_DEFAULT);
  g_assert_cmpint(d, >=, 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Fclose(f);
  hostile("extstore.h5", NULL, "/exchange/data", "external files");
}

/* tests/data/dxchange-libhdf5-segv.h5: the test's good file with its /exchange/data layout
 * message changed by fuzz-dxchange (6 bytes). libhdf5 1.10.8 dereferences a null pointer in
 * H5Dread (H5VM_memcpyvv) on it; read in this process, that killed the CLI and the window.
 * Now the read fails with a GError naming the file, and this process goes on. */
static void test_libhdf5_crash(void) {
  const char *p = "tests/data/dxchange-libhdf5-segv.h5";
  g_autoptr(GError) error = NULL;
  g_autoptr(TlCtData) d = tl_ct_dxchange_load(p, &error);
  g_assert_null(d);
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, p));
  g_clear_error(&error);
  /* describe reads no values: the rest of the file is fine */
  g_autoptr(GString) info = g_string_new(NULL);
  g_assert_true(tl_format_dxchange.describe(p, info, &error));
  g_assert_no_error(error);
  g_assert_nonnull(strstr(info->str, "4 views x 2 rows x 5 columns"));
}

/* The test's own sharpness metric, written from its definition (docs/ct.md): the variance of
 * the gradient magnitude (central differences) over the pixels of the inscribed disc. */
static double sharpness_ref(const float *f, guint n) {
  double c = 0.5 * (n - 1.0), r = 0.5 * n - 2.0, s = 0, s2 = 0;
  double count = 0;
  for (guint y = 1; y + 1 < n; y++)
    for (guint x = 1; x + 1 < n; x++) {
      double dx = x - c, dy = y - c;
      if (dx * dx + dy * dy > r * r) continue;
      double gx = (f[y * n + x + 1] - (double)f[y * n + x - 1]) / 2;
      double gy = (f[(y + 1) * n + x] - (double)f[(y - 1) * n + x]) / 2;
      double m = hypot(gx, gy);
      s += m, s2 += m * m, count++;
    }
  return s2 / count - (s / count) * (s / count);
}

static void test_tooth(void) {
  /* meson runs this test in the source root: ../shared is the shared data */
  const char *full = "../shared/data/tooth/tooth.h5";
  g_autoptr(GError) error = NULL;
  g_autoptr(TlCtData) d = tl_format_load_kind(full, TL_DATA_CT, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(d->geometry->n_views, ==, 181);
  g_assert_cmpuint(d->geometry->det_u, ==, 640);
  TlContext *ctx = tl_test_context();
  TlCtCentre c;
  g_assert_true(tl_ct_centre_search(ctx, d, 1, &c, &error));
  g_assert_no_error(error);
  g_test_message("tooth: centre %.3f (metric %.6g, opposed views %.3f, %u slices)", c.centre,
                 c.metric, c.first_guess, c.evaluations);
  /* brute force: every 0.5 px over +-3 px around the detector column the opposed views give,
   * each slice by Tomolab's FBP with the geometry moved (a fresh FDK per centre) and scored
   * by this test's own metric */
  double best = -1, best_c = NAN;
  double lo = round(c.first_guess * 2) / 2 - 3, at_found = NAN;
  for (double cc = lo; cc <= lo + 6 + 1e-9; cc += 0.5) {
    g_autofree float *slice = tl_ct_centre_slice(ctx, d, 1, cc, &error);
    g_assert_no_error(error);
    double m = sharpness_ref(slice, 640);
    g_test_message("  centre %.1f: sharpness %.6g", cc, m);
    if (m > best) best = m, best_c = cc;
    if (fabs(cc - c.centre) < 1e-9) at_found = m;
  }
  g_test_message("tooth: brute force best %.1f (%.6g)", best_c, best);
  g_assert_cmpfloat(best_c, >, lo);       /* an interior maximum, */
  g_assert_cmpfloat(best_c, <, lo + 6);   /* not the window's edge */
  g_assert_cmpfloat(fabs(c.centre - best_c), <=, 1.0);
  /* the reported metric is the metric of that centre */
  if (isnan(at_found)) {
    g_autofree float *at = tl_ct_centre_slice(ctx, d, 1, c.centre, &error);
    g_assert_no_error(error);
    at_found = sharpness_ref(at, 640);
  }
  g_assert_cmpfloat(fabs(at_found - c.metric), <=, 1e-3 * c.metric);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  /* scripts/fuzz.sh: --write-seed FILE writes the good small file as a fuzzing seed */
  if (argc == 3 && strcmp(argv[1], "--write-seed") == 0) {
    dir = g_path_get_dirname(argv[2]);
    g_autofree char *base = g_path_get_basename(argv[2]);
    g_autofree char *p = write_case(base, &(Case){0});
    return 0;
  }
  tl_test_init(&argc, &argv);
  dir = g_dir_make_tmp("tl-dxchange-XXXXXX", NULL);
  g_assert_nonnull(dir);
  g_test_add_func("/format-dxchange/good", test_good);
  g_test_add_func("/format-dxchange/variants", test_variants);
  g_test_add_func("/format-dxchange/hostile", test_hostile);
  g_test_add_func("/format-dxchange/libhdf5-crash", test_libhdf5_crash);
  g_test_add_func("/format-dxchange/external", test_external);
  g_test_add_func("/format-dxchange/tooth-centre", test_tooth);
  int rc = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  (void)!system(rm);
  return rc;
}
