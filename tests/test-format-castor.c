/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CASToR data and scanners: files the test writes byte by byte from CASToR's published layout
 * (iDataFilePET event order, iScannerPET LUT) read to the values written and written back to
 * the same bytes; a Tomolab simulation handed to CASToR and read back is the same events;
 * hostile headers, data and LUTs refused with the file, the key and the value. */
#include "tl-test-common.h"
#include "pet/data/tl-format-castor.h"
#include "pet/simulate/tl-simulate.h"
#include "dataset/tl-formats.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

static char *tpath(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void put_u(GByteArray *b, guint32 u) {
  u = GUINT32_TO_LE(u);
  g_byte_array_append(b, (const guint8 *)&u, 4);
}

static void put_f(GByteArray *b, float f) {
  guint32 u;
  memcpy(&u, &f, 4);
  put_u(b, u);
}

static void write_file(const char *name, const void *data, gssize len) {
  g_autofree char *p = tpath(name);
  g_assert_true(g_file_set_contents(p, data, len, NULL));
}

static GBytes *read_file(const char *name) {
  g_autofree char *p = tpath(name);
  char *data;
  gsize len;
  g_assert_true(g_file_get_contents(p, &data, &len, NULL));
  return g_bytes_new_take(data, len);
}

/* A small ring: 2 rings of 8 crystals on radius 50 mm, LUT written from CASToR's layout:
 * crystal middle (face + depth/2 outwards) and the outward axis. */
static void write_scanner(const char *stem, double mdoi) {
  GByteArray *b = g_byte_array_new();
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 8; i++) {
      double a = 2 * G_PI * i / 8, c = cos(a), s = sin(a);
      put_f(b, (float)(55 * c)), put_f(b, (float)(55 * s)), put_f(b, (float)(r * 4.0 - 2));
      put_f(b, (float)c), put_f(b, (float)s), put_f(b, 0.0f);
    }
  g_autofree char *lut = g_strconcat(stem, ".lut", NULL), *hscan = g_strconcat(stem, ".hscan", NULL);
  write_file(lut, b->data, b->len);
  g_byte_array_free(b, TRUE);
  g_autofree char *h = g_strdup_printf("modality: PET\nscanner name: %s\nnumber of elements: 16\n"
                                       "number of layers: 1\nnumber of crystals in layer: 16\n"
                                       "crystals size depth: 10\ncrystals size transaxial: 4\n"
                                       "crystals size axial: 4\nmean depth of interaction: %g\n",
                                       stem, mdoi);
  write_file(hscan, h, -1);
}

static const char *list_header =
    "Scanner name: ring16\nData filename: lm.cdf\nNumber of events: 5\nData mode: list-mode\n"
    "Data type: PET\nStart time (s): 2\nDuration (s): 10\nCalibration factor: 1\n"
    "Isotope: F-18\nAttenuation correction flag: 1\nNormalization correction flag: 1\n"
    "Scatter correction flag: 1\nRandom correction flag: 1\nTOF information flag: 1\n"
    "TOF resolution (ps): 300\nList TOF measurement range (ps): 1000\n"
    "List TOF quantization bin size (ps): 100\n";

/* list mode with every optional field: time, atn, scat, rand, norm, TOF, id1, id2 */
static GByteArray *list_events(void) {
  GByteArray *b = g_byte_array_new();
  for (guint i = 0; i < 5; i++) {
    put_u(b, 100 * i);                  /* time (ms) */
    put_f(b, 1.5f + i);                 /* attenuation */
    put_f(b, 0.25f * i);                /* scatter */
    put_f(b, 0.125f);                   /* random */
    put_f(b, 0.9f);                     /* normalisation */
    put_f(b, 100.0f * (float)i - 200);  /* TOF (ps): -200 .. 200, bins -2 .. 2 of 100 ps */
    put_u(b, i);                        /* id1: crystals 0..4 of ring 0 */
    put_u(b, 8 + (i + 4) % 8);          /* id2: the opposite crystal of ring 1 */
  }
  return b;
}

static void test_list_roundtrip(void) {
  write_scanner("ring16", 0);
  g_autoptr(GByteArray) ev = list_events();
  write_file("lm.cdh", list_header, -1);
  write_file("lm.cdf", ev->data, ev->len);
  g_autofree char *cdh = tpath("lm.cdh");
  GError *error = NULL;
  g_autoptr(TlCastorData) d = tl_castor_load(cdh, &error);
  g_assert_no_error(error);
  g_assert_false(d->histogram);
  g_assert_cmpuint(d->n_events, ==, 5);
  g_assert_cmpuint(tl_castor_event_bytes(d), ==, 32);
  g_assert_true(d->has_atn && d->has_scat && d->has_rand && d->has_norm && d->has_tof);
  g_assert_cmpfloat(d->start_s, ==, 2);
  g_assert_cmpfloat(d->duration_s, ==, 10);
  g_assert_cmpstr(d->isotope, ==, "F-18");
  for (guint i = 0; i < 5; i++) {
    g_assert_cmpuint(d->time_ms[i], ==, 100 * i);
    g_assert_cmpfloat(d->atn[i], ==, 1.5f + i);
    g_assert_cmpfloat(d->scat[i], ==, 0.25f * i);
    g_assert_cmpfloat(d->rand[i], ==, 0.125f);
    g_assert_cmpfloat(d->norm[i], ==, 0.9f);
    g_assert_cmpfloat(d->tof_ps[i], ==, 100.0f * (float)i - 200);
    g_assert_cmpuint(d->id1[i], ==, i);
    g_assert_cmpuint(d->id2[i], ==, 8 + (i + 4) % 8);
  }
  /* written back: the data bytes are the same; the header reads back to the same values */
  g_autofree char *out = tpath("again.cdh");
  g_assert_true(tl_castor_save(d, out, &error));
  g_assert_no_error(error);
  g_autoptr(GBytes) a = read_file("lm.cdf"), b = read_file("again.cdf");
  g_assert_true(g_bytes_equal(a, b));
  g_autoptr(TlCastorData) d2 = tl_castor_load(out, &error);
  g_assert_no_error(error);
  g_assert_true(d2->n_events == d->n_events && d2->tof_range_ps == d->tof_range_ps &&
                d2->tof_quant_ps == d->tof_quant_ps && d2->tof_fwhm_ps == d->tof_fwhm_ps &&
                d2->start_s == d->start_s && d2->duration_s == d->duration_s &&
                d2->has_scat && d2->has_norm && strcmp(d2->scanner_name, "ring16") == 0);
  /* and a third time: the header too is the same bytes once written by Tomolab */
  g_autofree char *out3 = tpath("third.cdh");
  g_assert_true(tl_castor_save(d2, out3, &error));
  g_autoptr(GBytes) h2 = read_file("again.cdh"), h3 = read_file("third.cdh");
  g_autofree char *s2 = g_strndup(g_bytes_get_data(h2, NULL), g_bytes_get_size(h2));
  g_autofree char *s3 = g_strndup(g_bytes_get_data(h3, NULL), g_bytes_get_size(h3));
  g_assert_nonnull(strstr(s3, "Data filename: third.cdf"));
  g_assert_cmpstr(strstr(s2, "Number of events"), ==, strstr(s3, "Number of events"));
  /* as Tomolab list mode: TOF dt (ps) -> s = c dt / 2 -> bins of c * 100 ps / 2 = 14.99 mm */
  g_autoptr(TlListmode) lm = tl_format_load_kind(cdh, TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lm->n_events, ==, 5);
  g_assert_true(lm->has_tof);
  g_assert_cmpfloat_with_epsilon(lm->scanner->tof_bin_mm, 0.5 * 0.299792458 * 100, 1e-5);
  g_assert_cmpuint(lm->scanner->tof_bins, ==, 11); /* 1000 ps / 100 ps, odd */
  for (guint i = 0; i < 5; i++) {
    g_assert_cmpuint(lm->events[i].a, ==, i);
    g_assert_cmpuint(lm->events[i].b, ==, 8 + (i + 4) % 8);
    g_assert_cmpint(lm->events[i].tof_bin, ==, (int)i - 2);
  }
  /* the LUT's middles + outward axes with mean DOI 0: line ends on the inner faces (r = 50) */
  for (guint k = 0; k < 16; k++) {
    const TlCrystal *c = &lm->scanner->crystals[k];
    g_assert_cmpfloat_with_epsilon(hypot(c->centre[0], c->centre[1]), 50, 1e-4);
    g_assert_cmpfloat_with_epsilon(c->centre[0] * c->normal[0] + c->centre[1] * c->normal[1], -50, 1e-4);
    g_assert_cmpuint(c->ring, ==, k / 8);
  }
}

static void test_histogram_roundtrip(void) {
  /* histogram with TOF (3 bins) and all fields: time, atn, rand, norm, (value, scat) x 3, ids */
  const char *h = "Scanner name: ring16\nData filename: h.cdf\nNumber of events: 4\n"
                  "Data mode: histogram\nData type: PET\nAttenuation correction flag: 1\n"
                  "Normalization correction flag: 1\nScatter correction flag: 1\n"
                  "Random correction flag: 1\nTOF information flag: 1\nTOF resolution (ps): 250\n"
                  "Histo TOF number of bins: 3\nHisto TOF bin size (ps): 120\n";
  GByteArray *b = g_byte_array_new();
  for (guint i = 0; i < 4; i++) {
    put_u(b, 0), put_f(b, 2.0f), put_f(b, 0.5f), put_f(b, 1.25f);
    for (guint t = 0; t < 3; t++) put_f(b, (float)(i + t)), put_f(b, 0.0625f * t);
    put_u(b, i), put_u(b, 8 + (i + 4) % 8);
  }
  write_file("h.cdh", h, -1);
  write_file("h.cdf", b->data, b->len);
  g_autofree char *cdh = tpath("h.cdh"), *out = tpath("h2.cdh");
  GError *error = NULL;
  g_autoptr(TlCastorData) d = tl_castor_load(cdh, &error);
  g_assert_no_error(error);
  g_assert_true(d->histogram);
  g_assert_cmpuint(d->tof_bins, ==, 3);
  g_assert_cmpuint(tl_castor_event_bytes(d), ==, 48);
  g_assert_cmpfloat(d->value[2 * 3 + 1], ==, 3.0f);
  g_assert_cmpfloat(d->scat[1 * 3 + 2], ==, 0.125f);
  g_assert_cmpuint(d->id2[3], ==, 8 + 7);
  g_assert_true(tl_castor_save(d, out, &error));
  g_autoptr(GBytes) x = read_file("h.cdf"), y = read_file("h2.cdf");
  g_assert_true(g_bytes_equal(x, y));
  g_byte_array_free(b, TRUE);
  /* TOF histograms have no list-mode equivalent: refused, naming the file */
  g_assert_null(tl_format_load_kind(cdh, TL_DATA_PET_LISTMODE, &error));
  g_assert_nonnull(strstr(error->message, "h.cdh"));
  g_clear_error(&error);
  /* a non-TOF count histogram becomes that many events */
  const char *h3 = "Scanner name: ring16\nData filename: c.cdf\nNumber of events: 2\n"
                   "Data mode: histogram\nData type: PET\n";
  GByteArray *c = g_byte_array_new();
  put_u(c, 0), put_f(c, 3.0f), put_u(c, 1), put_u(c, 13);
  put_u(c, 0), put_f(c, 0.0f), put_u(c, 2), put_u(c, 6);
  write_file("c.cdh", h3, -1);
  write_file("c.cdf", c->data, c->len);
  g_byte_array_free(c, TRUE);
  g_autofree char *ccdh = tpath("c.cdh");
  g_autoptr(TlListmode) lm = tl_format_load_kind(ccdh, TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lm->n_events, ==, 3);
  g_assert_cmpuint(lm->events[2].a, ==, 1);
  g_assert_cmpuint(lm->events[2].b, ==, 13);
}

/* A Tomolab simulation (TOF, DMI-like ring) written as CASToR and read back: the same events
 * (crystal pairs and TOF bins), the scanner's crystals within float rounding. */
static void test_simulation(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_preset("small-animal", &error);
  g_assert_no_error(error);
  s->tof_bins = 9, s->tof_bin_mm = 15, s->tof_fwhm_ps = 200;
  TlImageGrid g = tl_image_grid_centred(16, 16, 16, 3, 3, 3);
  g_autoptr(TlImage) act = tl_image_new(&g);
  for (guint i = 0; i < 16 * 16 * 16; i++) act->data[i] = 1;
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 2000;
  p.seed = 7;
  p.tof = TRUE;
  p.n_threads = 1;
  g_autoptr(TlListmode) lm = tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lm->n_events, >, 1000);
  g_autofree char *cdh = tpath("sim.cdh");
  const TlFormatClass *f = tl_format_for_output(cdh, TL_DATA_PET_LISTMODE, NULL, &error);
  g_assert_true(f == &tl_format_castor);
  g_assert_true(tl_format_save(f, lm, cdh, &error));
  g_assert_no_error(error);
  g_autoptr(TlListmode) back = tl_format_load_kind(cdh, TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->n_events, ==, lm->n_events);
  g_assert_true(back->has_tof);
  g_assert_cmpuint(back->scanner->tof_bins, ==, 9);
  g_assert_cmpfloat_with_epsilon(back->scanner->tof_bin_mm, 15, 1e-4);
  g_assert_true(memcmp(back->events, lm->events, 12 * lm->n_events) == 0);
  g_assert_cmpuint(back->scanner->n_crystals, ==, s->n_crystals);
  g_assert_cmpuint(back->scanner->n_rings, ==, s->n_rings);
  for (guint k = 0; k < s->n_crystals; k++)
    for (int j = 0; j < 3; j++) {
      g_assert_cmpfloat_with_epsilon(back->scanner->crystals[k].centre[j], s->crystals[k].centre[j], 2e-4);
      g_assert_cmpfloat_with_epsilon(back->scanner->crystals[k].normal[j], s->crystals[k].normal[j], 1e-6);
    }
  /* the scanner file alone, through the format table */
  g_autofree char *hscan = tpath("sim-scanner.hscan");
  g_autoptr(TlScanner) sc = tl_format_load_kind(hscan, TL_DATA_SCANNER, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(sc->crystals_per_ring, ==, s->crystals_per_ring);
}

/* The real mMR acquisition handed to CASToR and read back: the same 218 881 prompts. */
static void test_real_mmr(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = tl_format_load_kind("../shared/data/mmr/small_listmode_file.l",
                                                 TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lm->n_events, ==, 218881);
  g_autofree char *cdh = tpath("mmr.cdh");
  g_assert_true(tl_format_save(&tl_format_castor, lm, cdh, &error));
  g_assert_no_error(error);
  g_autoptr(TlListmode) back = tl_format_load_kind(cdh, TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->n_events, ==, lm->n_events);
  g_assert_false(back->has_tof);
  g_assert_true(memcmp(back->events, lm->events, 12 * lm->n_events) == 0);
  g_assert_cmpfloat_with_epsilon(back->duration_s, 0.613, 1e-12);
  g_assert_cmpuint(back->scanner->n_rings, ==, 64);
  g_assert_cmpuint(back->scanner->crystals_per_ring, ==, 448);
}

/* A generic .geom (CASToR's keys): 4 rsectors of 2 modules axially (1.5 mm apart) x 2 x 3
 * crystals of 4 x 5 x 10 mm (0.5 mm gaps transaxially), radius 100, first angle 0, clockwise.
 * Rsector 0 faces +y: crystal faces at y = 100, x = -4.25 / 0 + ... (centred), z centred;
 * rsector 1 (90 degrees clockwise) at x = 100, y = -x0. */
static void test_geom(void) {
  const char *g = "# a test geometry\nmodality : PET\nscanner name : g4\nnumber of elements : 48\n"
                  "number of layers : 1\nscanner radius : 100\nnumber of rsectors : 4\n"
                  "number of crystals transaxial : 2\nnumber of crystals axial : 3\n"
                  "crystals size depth : 10\ncrystals size transaxial : 4\ncrystals size axial : 5\n"
                  "number of modules axial : 2\nmodule gap axial : 1.5\ncrystal gap transaxial : 0.5\n"
                  "rsectors first angle : 0\nrotation direction : CW\nmean depth of interaction : 0\n";
  write_file("g4.geom", g, -1);
  g_autofree char *p = tpath("g4.geom");
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_format_load_kind(p, TL_DATA_SCANNER, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(s->n_crystals, ==, 48);
  g_assert_cmpuint(s->n_rings, ==, 6);
  g_assert_cmpuint(s->crystals_per_ring, ==, 8);
  /* transaxial crystals of a rsector: 2 x 4 + 0.5 = 8.5 mm wide, centres at -2.25, +2.25 */
  const double xs[2] = {-2.25, 2.25};
  /* rings: 2 modules of 3 x 5 mm (15 mm) 1.5 mm apart: 31.5 mm, centres -13.25 + 5 r (+1.5) */
  for (guint ring = 0; ring < 6; ring++) {
    double z = -15.75 + 2.5 + 5.0 * (ring % 3) + (ring / 3) * 16.5;
    for (guint rsa = 0; rsa < 4; rsa++)
      for (guint k = 0; k < 2; k++) {
        const TlCrystal *c = &s->crystals[ring * 8 + rsa * 2 + k];
        double a = rsa * G_PI / 2, x = xs[k], y = 100;
        g_assert_cmpfloat_with_epsilon(c->centre[0], cos(a) * x + sin(a) * y, 1e-4);
        g_assert_cmpfloat_with_epsilon(c->centre[1], -sin(a) * x + cos(a) * y, 1e-4);
        g_assert_cmpfloat_with_epsilon(c->centre[2], z, 1e-4);
        g_assert_cmpfloat_with_epsilon(c->normal[0], -sin(a), 1e-6);
        g_assert_cmpfloat_with_epsilon(c->normal[1], -cos(a), 1e-6);
        g_assert_cmpuint(c->group, ==, rsa);
        g_assert_cmpuint(c->ring, ==, ring);
      }
  }
  /* inconsistent: 48 elements but the layout makes 6 x 8 = 48; say 50 */
  g_autofree char *bad = g_strdup(g);
  memcpy(strstr(bad, "elements : 48"), "elements : 50", 13);
  write_file("g4.geom", bad, -1);
  g_assert_null(tl_castor_geom_load(p, &error));
  g_assert_nonnull(strstr(error->message, "number of elements"));
  g_assert_nonnull(strstr(error->message, "50"));
  g_clear_error(&error);
  g_autofree char *bad2 = g_strdup(g);
  memcpy(strstr(bad2, "radius : 100"), "radius : nan", 12);
  write_file("g4.geom", bad2, -1);
  g_assert_null(tl_castor_geom_load(p, &error));
  g_assert_nonnull(strstr(error->message, "scanner radius"));
  g_assert_nonnull(strstr(error->message, "nan"));
  g_clear_error(&error);
}

static void expect(const char *file, const char *const *words) {
  g_autofree char *p = tpath(file);
  GError *error = NULL;
  gpointer d = g_str_has_suffix(file, ".hscan") ? (gpointer)tl_castor_scanner_load(p, &error)
                                                : (gpointer)tl_castor_load(p, &error);
  g_assert_null(d);
  g_assert_nonnull(error);
  for (guint i = 0; words[i]; i++)
    if (!strstr(error->message, words[i])) g_error("message '%s' lacks '%s'", error->message, words[i]);
  g_clear_error(&error);
}

static char *header_with(const char *key, const char *line) {
  g_auto(GStrv) lines = g_strsplit(list_header, "\n", -1);
  GString *s = g_string_new(NULL);
  for (guint i = 0; lines[i]; i++)
    if (*lines[i] && !g_str_has_prefix(lines[i], key)) g_string_append_printf(s, "%s\n", lines[i]);
  if (line) g_string_append_printf(s, "%s\n", line);
  return g_string_free(s, FALSE);
}

static void test_hostile(void) {
  g_autoptr(GByteArray) ev = list_events();
  write_file("lm.cdf", ev->data, ev->len);
  struct { const char *key, *line, *want[5]; } cases[] = {
      {"Number of events", "Number of events: 6", {"bad.cdh", "number of events", "6", "truncated"}},
      {"Number of events", "Number of events: 4", {"bad.cdh", "number of events", "4", "oversized"}},
      {"Number of events", "Number of events: -5", {"bad.cdh", "number of events", "-5", NULL}},
      {"Number of events", "Number of events: 99999999999999999999", {"bad.cdh", "number of events", NULL}},
      {"Number of events", NULL, {"bad.cdh", "lacks", "number of events", NULL}},
      {"Data mode", NULL, {"bad.cdh", "lacks", "data mode", NULL}},
      {"Data mode", "Data mode: sinogram", {"bad.cdh", "data mode", "sinogram", NULL}},
      {"Data type", "Data type: SPECT", {"bad.cdh", "data type", "SPECT", NULL}},
      {"TOF resolution", "TOF resolution (ps): nan", {"bad.cdh", "tof resolution (ps)", "nan", NULL}},
      {"TOF resolution", NULL, {"bad.cdh", "lacks", "tof resolution", NULL}},
      {"List TOF measurement range", "List TOF measurement range (ps): -1", {"bad.cdh", "measurement range", "-1", NULL}},
      {"Duration", "Duration (s): inf", {"bad.cdh", "duration (s)", "inf", NULL}},
      {"Calibration factor", "Calibration factor: 0", {"bad.cdh", "calibration factor", "0", NULL}},
      {"Random correction flag", "Random correction flag: 2", {"bad.cdh", "random correction flag", "2", NULL}},
      {"Data filename", "Data filename: missing.cdf", {"missing.cdf", NULL}},
      {"Isotope", "Maximum number of lines per event: 2", {"bad.cdh", "lines per event", "2", NULL}},
      {"Isotope", "Coincidence kind flag: 1", {"bad.cdh", "coincidence kind flag", "1", NULL}},
      {"Isotope", "Scanner name: twice", {"bad.cdh", "scanner name", "given twice", NULL}},
      {"Isotope", "no colon here", {"bad.cdh", "expected 'key: value'", NULL}},
      /* fuzz-castor: a name the writer refuses was accepted */
      {"Scanner name", "Scanner name: a-scann:er", {"bad.cdh", "scanner name", "a-scann:er", NULL}},
      {"Scanner name", "Scanner name: a-scanne\rr", {"bad.cdh", "carriage return", NULL}},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = header_with(cases[i].key, cases[i].line);
    write_file("bad.cdh", text, -1);
    expect("bad.cdh", cases[i].want);
  }
  /* a NaN in the events */
  GByteArray *b = list_events();
  float nan = NAN;
  memcpy(b->data + 3 * 32 + 20, &nan, 4); /* event 3, TOF */
  write_file("lm.cdf", b->data, b->len);
  g_byte_array_free(b, TRUE);
  write_file("bad.cdh", list_header, -1);
  expect("bad.cdh", (const char *const[]){"lm.cdf", "event 3", "TOF", "nan", NULL});
  /* scanners */
  write_scanner("s1", 0);
  g_autoptr(GBytes) lut = read_file("s1.lut");
  write_file("s1.lut", g_bytes_get_data(lut, NULL), 16 * 24 - 4);
  expect("s1.hscan", (const char *const[]){"s1.hscan", "number of elements", "16", "s1.lut", NULL});
  /* a crystal 1e20 mm away (fuzz-castor-scanner: it overflowed a voxel count on saving) */
  write_scanner("s3", 0);
  g_autoptr(GBytes) lut3 = read_file("s3.lut");
  g_autofree guint8 *far = g_memdup2(g_bytes_get_data(lut3, NULL), 16 * 24);
  float huge = 1.05806e20f;
  memcpy(far + 5 * 24 + 4, &huge, 4);
  write_file("s3.lut", far, 16 * 24);
  expect("s3.hscan", (const char *const[]){"s3.lut", "crystal 5", "1.05806e+20", NULL});
  write_scanner("s2", 0);
  g_autofree char *txt = NULL;
  g_autofree char *p2 = tpath("s2.hscan");
  g_assert_true(g_file_get_contents(p2, &txt, NULL, NULL));
  g_autofree char *t2 = g_strconcat(txt, "bogus", NULL);
  g_autofree char *t3 = g_strdup(txt);
  char *depth = strstr(t3, "depth: 10");
  memcpy(depth, "depth: -1", 9);
  write_file("s2.hscan", t3, -1);
  expect("s2.hscan", (const char *const[]){"s2.hscan", "crystals size depth", "-1", NULL});
  write_file("s2.hscan", t2, -1);
  expect("s2.hscan", (const char *const[]){"s2.hscan", "expected 'key: value'", NULL});
  g_autofree char *t4 = g_strdup(txt);
  char *layers = strstr(t4, "number of layers: 1");
  memcpy(layers, "number of layers: 2", 19);
  write_file("s2.hscan", t4, -1);
  expect("s2.hscan", (const char *const[]){"s2.hscan", "number of layers", "2", NULL});
  /* a scanner named by no file */
  write_file("lm.cdf", ev->data, ev->len);
  g_autofree char *text = header_with("Scanner name", "Scanner name: nowhere");
  write_file("bad.cdh", text, -1);
  g_autofree char *bad = tpath("bad.cdh");
  GError *error = NULL;
  g_assert_null(tl_format_load_kind(bad, TL_DATA_PET_LISTMODE, &error));
  g_assert_nonnull(strstr(error->message, "nowhere"));
  g_assert_nonnull(strstr(error->message, "scanner name"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("tl-castor-XXXXXX", NULL);
  g_test_add_func("/format-castor/list", test_list_roundtrip);
  g_test_add_func("/format-castor/histogram", test_histogram_roundtrip);
  g_test_add_func("/format-castor/simulation", test_simulation);
  g_test_add_func("/format-castor/real-mmr", test_real_mmr);
  g_test_add_func("/format-castor/geom", test_geom);
  g_test_add_func("/format-castor/hostile", test_hostile);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return rc;
}
