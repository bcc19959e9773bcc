/* SPDX-License-Identifier: GPL-3.0-or-later */
/* STIR projection data: sinograms of a known image written by this test from STIR's published
 * layout (Interfile keys of its example headers; ProjDataInfoCylindricalNoArcCorr's documented
 * detector mapping: detector angles LOR angle + bin angle and LOR angle + pi - bin angle,
 * interleaved) with tests/pet-ref.c's plain C Siddon line integrals, read by Tomolab and
 * reconstructed with binned MLEM (tl_recon over the solver): correlation with the image >= 0.95.
 * Also: the crystal pair of each bin against the test's own end points, both storage orders,
 * span 3 with view mashing, Tomolab's forward projection written back as .hs against the
 * test's, bit-for-bit round trips, content detection and hostile headers. */
#include "tomolab-compute.h"
#include "tl-test-common.h"
#include "dataset/tl-formats.h"
#include "pet/tl-sinogram-model.h"
#include "pet/tl-recon.h"
#include "pet-ref.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static TlContext *ctx;
static char *tmpdir;
static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* The test scanner: 4 rings 4 mm apart, 96 detectors on radius 57 + 3 mm depth. */
enum { RINGS = 4, DETS = 96, TANG = 41 };
static const double RADIUS = 60.0, RING_MM = 4.0;

typedef struct {
  int n_seg;
  int lo[8], hi[8], n_ax[8];
  int views;
} Layout;

/* span 1: segments 0, -1, +1, -2, +2, -3, +3 (STIR's file order) */
static Layout span1(void) {
  Layout l = {7, {0, -1, 1, -2, 2, -3, 3}, {0, -1, 1, -2, 2, -3, 3}, {4, 3, 3, 2, 2, 1, 1}, DETS / 2};
  return l;
}
/* span 3, view mashing 2: segment 0 = ring differences -1..1 (7 positions, half a ring apart),
 * -1 = -3..-2 and +1 = 2..3 (3 positions each) */
static Layout span3(void) {
  Layout l = {3, {-1, -3, 2}, {1, -2, 3}, {7, 3, 3}, DETS / 4};
  return l;
}

/* Detector end point: angle 2 pi d / N, (R sin, -R cos), rings centred on z = 0. */
static void detector(int d, int r, double p[3]) {
  double psi = 2 * G_PI * d / DETS;
  p[0] = RADIUS * sin(psi);
  p[1] = -RADIUS * cos(psi);
  p[2] = (r - 0.5 * (RINGS - 1)) * RING_MM;
}

/* Uncompressed view u, tangential t: bin angle t pi / N on either side of the LOR angle, odd t
 * rotated half a detector back (STIR's interleaving). */
static void detectors_of(int u, int t, int *d1, int *d2) {
  int f = (int)floor(t / 2.0), c = (int)ceil(t / 2.0);
  *d1 = ((u + f) % DETS + DETS) % DETS;
  *d2 = ((u - c + DETS / 2) % DETS + DETS) % DETS;
}

typedef void (*PairFn)(int d1, int r1, int d2, int r2, gpointer data);

/* Every crystal pair of bin (segment s, view v, axial a, tangential t). */
static int pairs_of(const Layout *l, int s, int v, int a, int t, PairFn fn, gpointer data) {
  int mash = (DETS / 2) / l->views, n = 0;
  int minabs = (l->lo[s] <= 0 && l->hi[s] >= 0) ? 0 : MIN(abs(l->lo[s]), abs(l->hi[s]));
  int step = l->lo[s] == l->hi[s] ? 2 : 1;
  int sum = minabs + step * a; /* r1 + r2 */
  for (int u = v * mash; u < (v + 1) * mash; u++) {
    int d1, d2;
    detectors_of(u, t, &d1, &d2);
    for (int r1 = 0; r1 < RINGS; r1++) {
      int r2 = sum - r1;
      if (r2 < 0 || r2 >= RINGS || r2 - r1 < l->lo[s] || r2 - r1 > l->hi[s]) continue;
      if (fn) fn(d1, r1, d2, r2, data);
      n++;
    }
  }
  return n;
}

typedef struct {
  const TlImageGrid *g;
  const float *x;
  double sum;
} LineCtx;

static void line_integral(int d1, int r1, int d2, int r2, gpointer data) {
  LineCtx *c = data;
  double p0[3], p1[3];
  detector(d1, r1, p0);
  detector(d2, r2, p1);
  c->sum += tl_ref_forward(TL_REF_SIDDON, c->g, p0, p1, c->x);
}

/* Odd transaxially: the LORs through the axis (t = 0 of views 0 and pi/2) run through voxel
 * centres, not along voxel boundaries, where Siddon implementations may legitimately differ. */
static TlImageGrid test_grid(void) { return tl_image_grid_centred(31, 31, 7, 2.5f, 2.5f, 2.0f); }

/* A disk of 25 mm (1) with a hot spot (3, planes 2-4) and a cold one (0.2), 4 x 4 sub-samples. */
static TlImage *phantom(void) {
  TlImageGrid g = test_grid();
  TlImage *im = tl_image_new(&g);
  for (guint z = 0; z < g.dims[2]; z++)
    for (guint y = 0; y < g.dims[1]; y++)
      for (guint x = 0; x < g.dims[0]; x++) {
        double c[3], v = 0;
        tl_image_grid_voxel_centre(&g, x, y, z, c);
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++) {
            double px = c[0] + (i - 1.5) * 0.625, py = c[1] + (j - 1.5) * 0.625;
            double w = px * px + py * py < 25 * 25 ? 1 : 0;
            if (z >= 2 && z <= 4 && (px - 10) * (px - 10) + (py - 5) * (py - 5) < 36) w = 3;
            if ((px + 10) * (px + 10) + (py + 8) * (py + 8) < 25) w = 0.2;
            v += w / 16;
          }
        im->data[x + g.dims[0] * (y + g.dims[1] * z)] = (float)v;
      }
  return im;
}

/* The header of STIR's layout; view_major: [seg][view][axial][tang], else [seg][axial][view]. */
static char *header(const Layout *l, const char *data_name, gboolean view_major) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "!INTERFILE  :=\n!imaging modality := PT\nname of data file := %s\n"
                         "originating system := test scanner\n!version of keys := STIR4.0\n"
                         "!GENERAL DATA :=\n!GENERAL IMAGE DATA :=\n!type of data := PET\n"
                         "imagedata byte order := LITTLEENDIAN\n!PET STUDY (General) :=\n"
                         "!PET data type := Emission\napplied corrections := {None}\n"
                         "!number format := float\n!number of bytes per pixel := 4\n"
                         "number of dimensions := 4\nmatrix axis label [4] := segment\n"
                         "!matrix size [4] := %d\n", data_name, l->n_seg);
  g_string_append_printf(s, "matrix axis label [%d] := view\n!matrix size [%d] := %d\n",
                         view_major ? 3 : 2, view_major ? 3 : 2, l->views);
  g_string_append_printf(s, "matrix axis label [%d] := axial coordinate\n!matrix size [%d] := { ",
                         view_major ? 2 : 3, view_major ? 2 : 3);
  for (int i = 0; i < l->n_seg; i++) g_string_append_printf(s, "%s%d", i ? ", " : "", l->n_ax[i]);
  g_string_append_printf(s, "}\nmatrix axis label [1] := tangential coordinate\n"
                         "!matrix size [1] := %d\nminimum ring difference per segment := {", TANG);
  for (int i = 0; i < l->n_seg; i++) g_string_append_printf(s, "%s%d", i ? "," : "", l->lo[i]);
  g_string_append(s, "}\nmaximum ring difference per segment := {");
  for (int i = 0; i < l->n_seg; i++) g_string_append_printf(s, "%s%d", i ? "," : "", l->hi[i]);
  g_string_append_printf(s, "}\nnumber of time frames := 1\n\nScanner parameters:=\n"
                         "Scanner type := test scanner\nNumber of rings                          := %d\n"
                         "Number of detectors per ring             := %d\n"
                         "Inner ring diameter (cm)                 := 11.4\n"
                         "Average depth of interaction (cm)        := 0.3\n"
                         "Distance between rings (cm)              := 0.4\n"
                         "Default bin size (cm)                    := 0.39\n"
                         "View offset (degrees)                    := 0\n"
                         "Maximum number of non-arc-corrected bins := %d\n"
                         "End scanner parameters:=\n!END OF INTERFILE :=\n", RINGS, DETS, TANG);
  return g_string_free(s, FALSE);
}

static guint64 n_bins(const Layout *l) {
  guint64 n = 0;
  for (int i = 0; i < l->n_seg; i++) n += (guint64)l->n_ax[i] * l->views * TANG;
  return n;
}

/* The sinogram of x in view-major order (the canonical one), one value per bin. */
static float *project(const Layout *l, const TlImage *x) {
  float *y = g_new(float, n_bins(l));
  guint64 k = 0;
  for (int s = 0; s < l->n_seg; s++)
    for (int v = 0; v < l->views; v++)
      for (int a = 0; a < l->n_ax[s]; a++)
        for (int t = -TANG / 2; t <= TANG / 2; t++) {
          LineCtx c = {&x->grid, x->data, 0};
          pairs_of(l, s, v, a, t, line_integral, &c);
          y[k++] = (float)c.sum;
        }
  return y;
}

/* Writes .hs + .s (data in the chosen order); returns the .hs path. */
static char *write_sino(const Layout *l, const float *y, const char *stem, gboolean view_major) {
  g_autofree char *data_name = g_strconcat(stem, ".s", NULL);
  char *hs = g_strconcat(tmpdir, "/", stem, ".hs", NULL);
  g_autofree char *s_path = tmp_path(data_name);
  g_autofree char *text = header(l, data_name, view_major);
  g_assert_true(g_file_set_contents(hs, text, -1, NULL));
  guint64 n = n_bins(l);
  g_autofree guint8 *bytes = g_malloc(4 * n);
  guint64 k = 0, off = 0;
  for (int s = 0; s < l->n_seg; s++) {
    int na = l->n_ax[s];
    for (int first = 0; first < (view_major ? l->views : na); first++)
      for (int second = 0; second < (view_major ? na : l->views); second++)
        for (int t = 0; t < TANG; t++) {
          int v = view_major ? first : second, a = view_major ? second : first;
          float f = y[off + ((guint64)v * na + a) * TANG + t];
          guint32 u;
          memcpy(&u, &f, 4);
          for (int b = 0; b < 4; b++) bytes[4 * k + b] = (guint8)(u >> (8 * b));
          k++;
        }
    off += (guint64)na * l->views * TANG;
  }
  g_assert_true(g_file_set_contents(s_path, (char *)bytes, (gssize)(4 * n), NULL));
  return hs;
}

static double correlation(const TlImage *a, const TlImage *b, double radius) {
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, n = 0;
  const TlImageGrid *g = &a->grid;
  for (guint z = 0; z < g->dims[2]; z++)
    for (guint y = 0; y < g->dims[1]; y++)
      for (guint x = 0; x < g->dims[0]; x++) {
        double c[3];
        tl_image_grid_voxel_centre(g, x, y, z, c);
        if (c[0] * c[0] + c[1] * c[1] > radius * radius) continue;
        guint64 i = x + (guint64)g->dims[0] * (y + (guint64)g->dims[1] * z);
        double u = a->data[i], v = b->data[i];
        sa += u, sb += v, saa += u * u, sbb += v * v, sab += u * v, n++;
      }
  double cov = sab / n - sa * sb / n / n;
  return cov / sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
}

static TlImage *reconstruct(TlSinogram *s, guint iterations) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScanner) sc = tl_sinogram_scanner(s, &e);
  g_assert_no_error(e);
  g_autoptr(GArray) bins = tl_sinogram_to_bins(s, FALSE, &e);
  g_assert_no_error(e);
  TlImageGrid g = test_grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.iterations = iterations;
  o.loglik = TL_LOGLIK_NEVER;
  o.use_cache = FALSE;
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, sc, (TlBin *)bins->data, bins->len, &g, &o, &e);
  g_assert_no_error(e);
  g_assert_true(tl_recon_run(r, &e));
  g_assert_no_error(e);
  TlImage *im = tl_recon_image(r, &e);
  g_assert_no_error(e);
  return im;
}

typedef struct {
  const TlScanner *sc;
  const GArray *bins;
  guint64 next;
} PairCheck;

/* tl_sinogram_to_bins lists each bin's pairs in its own order: match as unordered sets of end
 * points by looking the test's pair up among the bin's. */
static void test_mapping(void) {
  Layout l = span1();
  g_autoptr(TlImage) x = phantom();
  g_autofree float *y = project(&l, x);
  g_autofree char *hs = write_sino(&l, y, "map", TRUE);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_load(hs, &e);
  g_assert_no_error(e);
  for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = 1;
  g_autoptr(TlScanner) sc = tl_sinogram_scanner(s, &e);
  g_autoptr(GArray) bins = tl_sinogram_to_bins(s, TRUE, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(bins->len, ==, s->n_bins); /* span 1, no mashing: one pair per bin */
  guint64 k = 0;
  for (int sg = 0; sg < l.n_seg; sg++)
    for (int v = 0; v < l.views; v++)
      for (int a = 0; a < l.n_ax[sg]; a++)
        for (int t = -TANG / 2; t <= TANG / 2; t++, k++) {
          int d1 = 0, d2 = 0;
          int r[2] = {0, 0};
          int mash = 1;
          (void)mash;
          detectors_of(v, t, &d1, &d2);
          int rd = l.lo[sg];
          r[0] = rd >= 0 ? a : a - rd;
          r[1] = r[0] + rd;
          double p[2][3];
          detector(d1, r[0], p[0]);
          detector(d2, r[1], p[1]);
          const TlBin *b = &g_array_index(bins, TlBin, k);
          const TlCrystal *ca = &sc->crystals[b->a], *cb = &sc->crystals[b->b];
          double e1 = 0, e2 = 0;
          for (int d = 0; d < 3; d++) {
            e1 = MAX(e1, fabs(ca->centre[d] - p[0][d]) + fabs(cb->centre[d] - p[1][d]));
            e2 = MAX(e2, fabs(ca->centre[d] - p[1][d]) + fabs(cb->centre[d] - p[0][d]));
          }
          if (MIN(e1, e2) > 1e-3)
            g_error("segment %d view %d axial %d tangential %d: crystals %u, %u are not the "
                    "end points (%g mm off)", sg, v, a, t, b->a, b->b, MIN(e1, e2));
        }
}

static void test_recon(void) {
  Layout l = span1();
  g_autoptr(TlImage) x = phantom();
  g_autofree float *y = project(&l, x);
  for (int view_major = 1; view_major >= 0; view_major--) {
    g_autofree char *hs = write_sino(&l, y, view_major ? "vm" : "am", view_major);
    g_autoptr(GError) e = NULL;
    TlDataKind kind;
    const TlFormatClass *f = NULL;
    TlSinogram *s = tl_format_load_any(hs, &kind, &f, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(f->name, ==, "stir");
    g_assert_cmpint(kind, ==, TL_DATA_PET_SINOGRAM);
    g_assert_cmpuint(s->n_bins, ==, n_bins(&l));
    g_assert_cmpuint(s->n_segments, ==, 7);
    g_assert_false(s->arc_corrected);
    g_assert_cmpmem(s->data, 4 * s->n_bins, y, 4 * n_bins(&l)); /* both orders */
    if (view_major) {
      g_autoptr(TlImage) r = reconstruct(s, 40);
      double c = correlation(r, x, 30);
      g_test_message("span 1: correlation %.4f after 40 MLEM iterations", c);
      g_assert_cmpfloat(c, >=, 0.95);
    }
    tl_sinogram_free(s);
  }
}

static void test_span_mashing(void) {
  Layout l = span3();
  g_autoptr(TlImage) x = phantom();
  g_autofree float *y = project(&l, x);
  g_autofree char *hs = write_sino(&l, y, "span3", FALSE);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_load(hs, &e);
  g_assert_no_error(e);
  g_assert_cmpmem(s->data, 4 * s->n_bins, y, 4 * n_bins(&l));
  /* the counts are split over the pairs, the total kept */
  g_autoptr(GArray) bins = tl_sinogram_to_bins(s, FALSE, &e);
  g_assert_no_error(e);
  double total = 0, split = 0;
  for (guint64 i = 0; i < s->n_bins; i++) total += s->data[i];
  for (guint i = 0; i < bins->len; i++) split += g_array_index(bins, TlBin, i).count;
  g_assert_cmpfloat(fabs(split - total), <=, 1e-5 * total);
  /* pair counts: 2 views x ring pairs per bin */
  guint64 pairs = 0;
  for (int sg = 0; sg < l.n_seg; sg++)
    for (int a = 0; a < l.n_ax[sg]; a++)
      pairs += (guint64)pairs_of(&l, sg, 0, a, 0, NULL, NULL) * l.views * TANG;
  g_autoptr(GArray) all = tl_sinogram_to_bins(s, TRUE, &e);
  g_assert_cmpuint(all->len, ==, pairs);
  g_autoptr(TlImage) r = reconstruct(s, 40);
  double c = correlation(r, x, 30);
  g_test_message("span 3, mashing 2: correlation %.4f after 40 MLEM iterations", c);
  g_assert_cmpfloat(c, >=, 0.95);
}

/* Tomolab's forward projection written back as .hs: the test's Siddon sinogram, and the
 * files read back bit for bit (the .s also with fread here). */
static void test_forward_write(void) {
  for (int span = 1; span <= 3; span += 2) {
    Layout l = span == 1 ? span1() : span3();
    g_autoptr(TlImage) x = phantom();
    g_autofree float *y = project(&l, x);
    g_autofree char *hs = write_sino(&l, y, "fw", TRUE);
    g_autoptr(GError) e = NULL;
    g_autoptr(TlSinogram) s = tl_sinogram_load(hs, &e);
    g_assert_no_error(e);
    g_autoptr(TlSinogram) fp = tl_sinogram_forward(ctx, s, x, &e);
    g_assert_no_error(e);
    double worst = 0, peak = 0;
    for (guint64 i = 0; i < s->n_bins; i++) {
      worst = MAX(worst, fabs(fp->data[i] - y[i]));
      peak = MAX(peak, y[i]);
    }
    g_test_message("span %d: forward projection vs the test's Siddon: max |diff| %.3g of peak "
                   "%.3g", span, worst, peak);
    g_assert_cmpfloat(worst, <=, 1e-3 * peak);
    g_autofree char *out = tmp_path("written.hs"), *out_s = tmp_path("written.s");
    g_assert_true(tl_format_save(&tl_format_stir_sino, fp, out, &e));
    g_assert_no_error(e);
    g_autoptr(TlSinogram) again = tl_sinogram_load(out, &e);
    g_assert_no_error(e);
    g_assert_cmpuint(again->n_segments, ==, fp->n_segments);
    g_assert_cmpmem(again->n_axial, 4 * fp->n_segments, fp->n_axial, 4 * fp->n_segments);
    g_assert_cmpmem(again->min_ring_difference, 4 * fp->n_segments, fp->min_ring_difference,
                    4 * fp->n_segments);
    g_assert_cmpfloat(again->inner_radius_mm, ==, fp->inner_radius_mm);
    g_assert_cmpfloat(again->ring_spacing_mm, ==, fp->ring_spacing_mm);
    g_assert_cmpmem(again->data, 4 * fp->n_bins, fp->data, 4 * fp->n_bins);
    g_autofree char *bytes = NULL;
    gsize nb = 0;
    g_assert_true(g_file_get_contents(out_s, &bytes, &nb, NULL));
    g_assert_cmpuint(nb, ==, 4 * fp->n_bins);
    for (guint64 i = 0; i < fp->n_bins; i++) {
      guint32 u = (guint8)bytes[4 * i] | (guint32)(guint8)bytes[4 * i + 1] << 8 |
                  (guint32)(guint8)bytes[4 * i + 2] << 16 | (guint32)(guint8)bytes[4 * i + 3] << 24;
      float f;
      memcpy(&f, &u, 4);
      g_assert_cmpmem(&f, 4, &fp->data[i], 4);
    }
  }
}

static void test_probe(void) {
  const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
  g_autofree char *mmr = g_build_filename(root ? root : ".",
                                          "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR", NULL);
  gsize n = 0;
  g_autoptr(GError) e = NULL;
  g_autofree guint8 *head = tl_format_read_head(mmr, &n, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(tl_format_stir_sino.probe(mmr, head, n), ==, 0);
  g_autofree char *stir_hv = g_build_filename(root ? root : ".",
                                              "../shared/data/stir-image/test_image_3.hv", NULL);
  g_autofree guint8 *h2 = tl_format_read_head(stir_hv, &n, &e);
  g_assert_cmpuint(tl_format_stir_sino.probe(stir_hv, h2, n), ==, 0);
}

/* info names every geometric field of the header (issue 26: a STIR user compares them) */
static void test_describe(void) {
  Layout l = span1();
  g_autofree char *hs = tmp_path("d.hs"), *sp = tmp_path("d.s");
  g_autofree char *text = header(&l, "d.s", TRUE);
  g_assert_true(g_file_set_contents(hs, text, -1, NULL));
  g_autofree char *zeros = g_malloc0(4 * n_bins(&l));
  g_assert_true(g_file_set_contents(sp, zeros, (gssize)(4 * n_bins(&l)), NULL));
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_format_describe_file(hs, out, &e));
  g_assert_no_error(e);
  /* the header's values (cm, diameter) in mm and as radii */
  static const char *const want[] = {"inner ring radius 57 mm", "average depth of interaction 3 mm",
                                     "effective radius 60 mm", "ring spacing 4 mm",
                                     "default bin size 3.9 mm", "view offset 0 degrees",
                                     "not arc-corrected", "41 tangential positions"};
  for (guint i = 0; i < G_N_ELEMENTS(want); i++)
    if (!strstr(out->str, want[i])) g_error("'%s' not in: %s", want[i], out->str);
  g_remove(hs);
  g_remove(sp);
}

/* --- hostile headers --- */

static void expect_refused(const char *from, const char *to, gssize n_data, ...) {
  Layout l = span1();
  g_autofree char *hs = tmp_path("bad.hs"), *sp = tmp_path("bad.s");
  g_autofree char *text = header(&l, "bad.s", TRUE);
  GString *s = g_string_new(text);
  if (from && g_string_replace(s, from, to, 1) != 1) g_error("'%s' not in the header", from);
  g_assert_true(g_file_set_contents(hs, s->str, (gssize)s->len, NULL));
  g_string_free(s, TRUE);
  gsize n = n_data < 0 ? 4 * n_bins(&l) : (gsize)n_data;
  g_autofree char *zeros = g_malloc0(MAX(n, 1));
  g_assert_true(g_file_set_contents(sp, zeros, (gssize)n, NULL));
  g_autoptr(GError) e = NULL;
  g_autoptr(TlSinogram) sg = tl_sinogram_load(hs, &e);
  g_assert_null(sg);
  g_assert_nonnull(e);
  g_test_message("%s", e->message);
  g_assert_nonnull(strstr(e->message, hs));
  va_list ap;
  va_start(ap, n_data);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(e->message, needle)) g_error("'%s' not in: %s", needle, e->message);
  va_end(ap);
}

static void test_hostile(void) {
  Layout l = span1();
  gssize ok = 4 * (gssize)n_bins(&l);
  expect_refused(NULL, NULL, ok - 4, "125948", "31488", NULL); /* truncated */
  expect_refused("!matrix size [1] := 41", "!matrix size [1] := 1000000", ok, "matrix size[1]",
                 "1000000", NULL);
  expect_refused("!matrix size [3] := 48", "!matrix size [3] := 47", ok, "47 views", "view axis", NULL);
  expect_refused("Number of rings                          := 4",
                 "Number of rings := -4", ok, "number of rings", "-4", NULL);
  expect_refused("Inner ring diameter (cm)                 := 11.4",
                 "Inner ring diameter (cm) := nan", ok, "inner ring diameter (cm)", "nan", NULL);
  expect_refused("Distance between rings (cm)              := 0.4",
                 "Distance between rings (cm) := 0", ok, "distance between rings (cm)", NULL);
  expect_refused("!matrix size [4] := 7", "!matrix size [4] := 6", ok,
                 "matrix size[2]", "6 entries", NULL);
  expect_refused("{ 4, 3, 3, 2, 2, 1, 1}", "{ 4, 3, 3, 2, 2, 1, 2}", ok, "segment 6", "2 axial",
                 "expected 1", NULL);
  expect_refused("minimum ring difference per segment := {0,-1,1,-2,2,-3,3}",
                 "minimum ring difference per segment := {0,-1,1,-2,2,-3}", ok,
                 "minimum ring difference per segment", NULL);
  expect_refused("maximum ring difference per segment := {0,-1,1,-2,2,-3,3}",
                 "maximum ring difference per segment := {0,-1,1,-2,2,-3,9}", ok,
                 "ring differences 3 to 9",
                 "maximum ring difference per segment", NULL);
  expect_refused("maximum ring difference per segment := {0,-1,1,-2,2,-3,3}",
                 "maximum ring difference per segment := {0,-1,1,-2,2,-3,3", ok,
                 "maximum ring difference per segment", NULL);
  expect_refused("!number format := float", "!number format := ascii", ok, "number format",
                 "ascii", NULL);
  expect_refused("!END OF", "data offset in bytes[1] := 999999\n!END OF", ok, "999999", NULL);
  expect_refused("number of dimensions := 4", "number of dimensions := 5", ok,
                 "number of dimensions", "TOF", NULL);
  expect_refused("matrix axis label [3] := view", "matrix axis label [3] := segment", ok,
                 "matrix axis label[4]", "segment", NULL);
  expect_refused("Number of detectors per ring             := 96",
                 "Number of detectors per ring := 95", ok, "number of detectors per ring", "95",
                 NULL);
  expect_refused("Scanner parameters:=\nScanner type := test scanner\n"
                 "Number of rings                          := 4\n", "", ok, "number of rings",
                 "Scanner parameters", "ecat 962", NULL);
  /* issue 27: a data file larger than the header describes (a size key read too small: half
   * the data reconstructed), and data outside the header's folder (image/tl-datafile.h) */
  expect_refused(NULL, NULL, ok + 4, "125956 bytes", "expected exactly 125952", NULL);
  expect_refused("name of data file := bad.s", "name of data file := /etc/passwd", ok,
                 "/etc/passwd", "absolute path", NULL);
  expect_refused("name of data file := bad.s", "name of data file := ../bad.s", ok,
                 "../bad.s", "leaves the header's folder", NULL);
  {
    /* a scanner STIR names, without the block: its table's geometry (ECAT HR+: 32 rings of
     * 576 detectors, 4.85 mm apart) */
    GString *t = g_string_new("!INTERFILE :=\nname of data file := hrplus.s\n"
                              "originating system := ECAT 962\n!number format := float\n"
                              "!number of bytes per pixel := 4\nimagedata byte order := "
                              "LITTLEENDIAN\nnumber of dimensions := 4\n"
                              "matrix axis label [4] := segment\n!matrix size [4] := 1\n"
                              "matrix axis label [3] := view\n!matrix size [3] := 288\n"
                              "matrix axis label [2] := axial coordinate\n!matrix size [2] := {32}\n"
                              "matrix axis label [1] := tangential coordinate\n"
                              "!matrix size [1] := 3\nminimum ring difference per segment := {0}\n"
                              "maximum ring difference per segment := {0}\n");
    g_autofree char *hs = tmp_path("hrplus.hs"), *sp = tmp_path("hrplus.s");
    g_assert_true(g_file_set_contents(hs, t->str, -1, NULL));
    g_string_free(t, TRUE);
    g_autofree char *zeros = g_malloc0(4 * 288 * 32 * 3);
    g_assert_true(g_file_set_contents(sp, zeros, 4 * 288 * 32 * 3, NULL));
    g_autoptr(GError) e = NULL;
    g_autoptr(TlSinogram) sg = tl_sinogram_load(hs, &e);
    g_assert_no_error(e);
    g_assert_cmpuint(sg->n_rings, ==, 32);
    g_assert_cmpuint(sg->n_detectors, ==, 576);
    g_assert_cmpfloat_with_epsilon(sg->ring_spacing_mm, 4.85, 1e-9);
  }
  {
    g_autoptr(GError) e = NULL;
    Layout l3 = span1();
    g_autofree float *y = g_new0(float, n_bins(&l3));
    y[5] = NAN;
    g_autofree char *hs = write_sino(&l3, y, "nan", TRUE);
    g_assert_null(tl_sinogram_load(hs, &e));
    g_assert_nonnull(strstr(e->message, "value 5"));
  }
  {
    /* arc-corrected data load but are refused for reconstruction, saying why */
    Layout l3 = span1();
    g_autofree float *y = g_new0(float, n_bins(&l3));
    g_autofree char *hs = write_sino(&l3, y, "arc", TRUE);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(hs, &text, NULL, NULL));
    GString *s = g_string_new(text);
    g_string_replace(s, "{None}", "{arc correction}", 1);
    g_assert_true(g_file_set_contents(hs, s->str, -1, NULL));
    g_string_free(s, TRUE);
    g_autoptr(GError) e = NULL;
    g_autoptr(TlSinogram) sg = tl_sinogram_load(hs, &e);
    g_assert_no_error(e);
    g_assert_true(sg->arc_corrected);
    g_assert_null(tl_sinogram_to_bins(sg, FALSE, &e));
    g_assert_nonnull(strstr(e->message, "arc-corrected"));
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-stir-XXXXXX", NULL);
  ctx = tl_test_context();
  g_test_add_func("/format/stir/mapping", test_mapping);
  g_test_add_func("/format/stir/recon", test_recon);
  g_test_add_func("/format/stir/span-mashing", test_span_mashing);
  g_test_add_func("/format/stir/forward-write", test_forward_write);
  g_test_add_func("/format/stir/probe", test_probe);
  g_test_add_func("/format/stir/describe", test_describe);
  g_test_add_func("/format/stir/hostile", test_hostile);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  tl_test_remove_tree(tmpdir);
  return rc;
}
