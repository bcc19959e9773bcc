/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD writer: list mode as release v0.10.0 in yardl's compact binary encoding (Microsoft
 * yardl, "Compact Binary Encoding Reference"): the magic "yardl", uint32 LE version 1, the
 * schema (tl_petsird_schema) as a length-prefixed string, then the protocol's steps in order:
 * `header` (a Header value), `timeBlocks` (a stream: batches of a count and that many items,
 * ending with an empty batch). Unsigned integers are varints, signed ones and enums zig-zag
 * varints, floats little-endian IEEE 754, strings and vectors length-prefixed (a fixed-length
 * vector or array: no prefix; an array of known rank: its dimension lengths), optionals and
 * unions a varint option index then the value. Fields are written in the model's order, which
 * is the order of the fields in the schema.
 *
 * The crystal table becomes one module type: modules of E detecting elements, E the crystals
 * one group (polygon side, head) holds when every group's crystals are a rigid copy of the
 * first group's, else E = 1 (a module per crystal, exact for any table). A module's frame is
 * its first crystal's: x outward (PETSIRD's reference generator points a box's depth away from
 * the axis), z the scanner axis made orthogonal to x, y = z x x. Each element is a box of the
 * crystal's size centred on the crystal's position, in the crystal's own such frame, so a reader
 * taking box centres (PETSIRD's model, Tomolab's reader) gets Tomolab's lines of response back,
 * and one turning the box's depth axis its normal. One energy bin per crystal
 * (the scanner's energy window), so a detection bin is the crystal id. */
#include "tl-format-petsird.h"
#include "tl-error.h"
#include "image/tl-file.h"
#include <gio/gio.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#define C_MM_PER_PS 0.299792458 /* speed of light */
#define MAX_POSITION_MM 1e5     /* what the reader accepts */
#define MIN_RADIUS_MM 1e-3      /* a crystal nearer the axis has no facing direction */
#define GROUP_TOLERANCE_MM 1e-4 /* a group is a rigid copy of the first when this close */
#define BUF_BYTES (1u << 20)

/* enum values of the model (CoincidencePolicy, ...) */
#define POLICY_NONE 0
#define POLICY_OTHER 4

/* ---- the bytes: buffered, to the file or through gzip ---- */

typedef struct {
  FILE *f;
  GConverter *z; /* NULL: plain */
  GByteArray *buf;
  gboolean failed;
} Sink;

static void sink_write(Sink *s, const void *p, gsize n) {
  if (!s->failed && fwrite(p, 1, n, s->f) != n) s->failed = TRUE;
}

/* Hands the buffer to the file (through the compressor); `last` ends the gzip stream. */
static gboolean sink_flush(Sink *s, gboolean last, GError **error) {
  if (!s->z) {
    sink_write(s, s->buf->data, s->buf->len);
    g_byte_array_set_size(s->buf, 0);
    return TRUE;
  }
  guint8 out[1 << 16];
  const guint8 *in = s->buf->data;
  gsize left = s->buf->len;
  while (TRUE) {
    gsize got, put;
    GConverterResult r = g_converter_convert(s->z, in, left, out, sizeof out,
                                             last ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS,
                                             &got, &put, error);
    if (r == G_CONVERTER_ERROR) return FALSE;
    sink_write(s, out, put);
    in += got;
    left -= got;
    if (r == G_CONVERTER_FINISHED || (!last && left == 0)) break;
  }
  g_byte_array_set_size(s->buf, 0);
  return TRUE;
}

static void put(Sink *s, const void *p, gsize n) {
  g_byte_array_append(s->buf, p, (guint)n);
}

static void varint(Sink *s, guint64 v) {
  guint8 b[10];
  gsize n = 0;
  do {
    b[n] = v & 0x7f;
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put(s, b, n);
}

/* signed integers and enums: zig-zag, so small magnitudes of either sign take one byte */
static void zigzag(Sink *s, gint64 v) {
  varint(s, v < 0 ? ((guint64)(-(v + 1)) << 1) | 1 : (guint64)v << 1);
}

static void f32(Sink *s, double v) {
  float f = (float)v;
  guint32 u;
  memcpy(&u, &f, 4);
  u = GUINT32_TO_LE(u);
  put(s, &u, 4);
}

static void string(Sink *s, const char *t) {
  gsize n = strlen(t);
  varint(s, n);
  put(s, t, n);
}

/* BinEdges: an array of float32 of rank 1 (its length, then the edges) */
static void bin_edges(Sink *s, const double *e, guint n) {
  varint(s, n);
  for (guint i = 0; i < n; i++) f32(s, e[i]);
}

/* RigidTransformation: a fixed 3 x 4 float32 array, row-major */
static void transform(Sink *s, const double m[12]) {
  for (int i = 0; i < 12; i++) f32(s, m[i]);
}

/* ---- the geometry: modules of E elements ---- */

typedef struct {
  guint E, M;
  double *module_tf; /* M x 12 */
  double *elem_tf;   /* E x 12 */
} Modules;

static void modules_clear(Modules *g) {
  g_free(g->module_tf);
  g_free(g->elem_tf);
}

/* Crystal c's frame as a 3 x 4 transformation: columns x (outward), y, z, origin. */
static void frame(const TlCrystal *c, double m[12]) {
  double x[3] = {-c->normal[0], -c->normal[1], -c->normal[2]}, h[3] = {0, 0, 1}, z[3], y[3];
  double nx = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  for (int i = 0; i < 3; i++) x[i] /= nx;
  if (fabs(x[2]) > 0.9) h[0] = 1, h[2] = 0; /* a normal along the axis: x is the helper */
  double d = x[0] * h[0] + x[1] * h[1] + x[2] * h[2];
  for (int i = 0; i < 3; i++) z[i] = h[i] - d * x[i];
  double nz = sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2]);
  for (int i = 0; i < 3; i++) z[i] /= nz;
  y[0] = z[1] * x[2] - z[2] * x[1];
  y[1] = z[2] * x[0] - z[0] * x[2];
  y[2] = z[0] * x[1] - z[1] * x[0];
  for (int i = 0; i < 3; i++) {
    m[4 * i] = x[i];
    m[4 * i + 1] = y[i];
    m[4 * i + 2] = z[i];
    m[4 * i + 3] = c->centre[i];
  }
}

/* The crystal's frame c in the module's frame m: rotation R_m^T R_c, translation R_m^T (o_c -
 * o_m) (3 x 4, row-major). */
static void to_local(const double m[12], const double c[12], double l[12]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      double v = 0;
      for (int k = 0; k < 3; k++) v += m[4 * k + i] * (j < 3 ? c[4 * k + j] : c[4 * k + 3] - m[4 * k + 3]);
      l[4 * i + j] = v;
    }
}

/* Modules of E crystals: every module's crystals, positions and frames, in its own frame where
 * the first module's are. Each element keeps its crystal's frame, so a reader turning the box's
 * depth axis (x) by both transforms gets the crystal's normal back. */
static gboolean try_modules(const TlScanner *s, guint E, Modules *g) {
  guint n = s->n_crystals;
  if (E == 0 || n % E) return FALSE;
  g->E = E;
  g->M = n / E;
  g->module_tf = g_new(double, 12 * (gsize)g->M);
  g->elem_tf = g_new0(double, 12 * (gsize)E);
  for (guint m = 0; m < g->M; m++) {
    double *tf = g->module_tf + 12 * (gsize)m;
    frame(&s->crystals[m * E], tf);
    for (guint e = 0; e < E; e++) {
      const TlCrystal *c = &s->crystals[m * E + e];
      if (E > 1 && c->group != s->crystals[m * E].group) return FALSE;
      double fc[12], l[12];
      frame(c, fc);
      to_local(tf, fc, l);
      double *et = g->elem_tf + 12 * (gsize)e;
      if (m == 0) {
        memcpy(et, l, sizeof l);
        continue;
      }
      for (int i = 0; i < 12; i++) /* translations in mm, rotations as fractions */
        if (fabs(l[i] - et[i]) > (i % 4 == 3 ? GROUP_TOLERANCE_MM : 1e-5)) return FALSE;
    }
  }
  return TRUE;
}

static void choose_modules(const TlScanner *s, Modules *g) {
  guint run = 1; /* the first group's crystals, when they come first and together */
  while (run < s->n_crystals && s->crystals[run].group == s->crystals[0].group) run++;
  if (run > 1 && try_modules(s, run, g)) return;
  modules_clear(g);
  memset(g, 0, sizeof *g);
  try_modules(s, 1, g); /* always works: one crystal per module */
}

/* ---- what PETSIRD cannot hold ---- */

static gboolean ms_of(double s, const char *what, const char *path, guint32 *out, GError **error) {
  double ms = round(s * 1000);
  if (!isfinite(ms) || ms < 0 || ms > G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "'%s': %s %g s cannot be written: PETSIRD "
                "time intervals are uint32 milliseconds (0 to 4294967295 ms)", path, what, s);
    return FALSE;
  }
  *out = (guint32)ms;
  return TRUE;
}

static gboolean check(const TlListmode *lm, const TlPetsirdBlock *blocks, guint n_blocks,
                      const char *path, GError **error) {
  if (!lm || !lm->scanner) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': no list mode to write", path);
    return FALSE;
  }
  if (!tl_scanner_validate(lm->scanner, error) || !tl_listmode_validate(lm, path, error))
    return FALSE;
  const TlScanner *s = lm->scanner;
  for (guint i = 0; i < s->n_crystals; i++) {
    const float *c = s->crystals[i].centre;
    if (hypot(c[0], c[1]) < MIN_RADIUS_MM || fabs(c[0]) > MAX_POSITION_MM ||
        fabs(c[1]) > MAX_POSITION_MM || fabs(c[2]) > MAX_POSITION_MM) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "'%s': crystal %u at (%g, %g, %g) mm "
                  "cannot be written: PETSIRD readers place crystals off the axis (at least %g mm) "
                  "and within %g mm", path, i, c[0], c[1], c[2], MIN_RADIUS_MM, MAX_POSITION_MM);
      return FALSE;
    }
  }
  if (!blocks) return TRUE;
  guint64 p = 0, d = 0, nd = lm->delayed ? lm->n_delayed : 0;
  for (guint k = 0; k < n_blocks; k++) {
    if (blocks[k].stop_ms < blocks[k].start_ms) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': time block %u: [%u, %u) ms "
                  "(expected start <= stop)", path, k, blocks[k].start_ms, blocks[k].stop_ms);
      return FALSE;
    }
    /* compared with what is left, so no sum of counts can wrap round */
    if (blocks[k].prompts > lm->n_events - p || blocks[k].delayeds > nd - d) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': time block %u: %" G_GUINT64_FORMAT
                  " prompts and %" G_GUINT64_FORMAT " delayeds, more than the list mode's %"
                  G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " left after the blocks before it",
                  path, k, blocks[k].prompts, blocks[k].delayeds, lm->n_events - p, nd - d);
      return FALSE;
    }
    p += blocks[k].prompts;
    d += blocks[k].delayeds;
  }
  if (p != lm->n_events || d != nd) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': %u time blocks hold %"
                G_GUINT64_FORMAT " prompts and %" G_GUINT64_FORMAT " delayeds (expected the list "
                "mode's %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT ")", path, n_blocks, p, d,
                lm->n_events, nd);
    return FALSE;
  }
  return TRUE;
}

/* ---- the protocol's steps ---- */

static void header(Sink *o, const TlListmode *lm, const Modules *g) {
  const TlScanner *s = lm->scanner;
  /* Header.scanner: ScannerInformation */
  string(o, s->name ? s->name : "");
  /* scannerGeometry.replicatedModules: one ReplicatedDetectorModule */
  varint(o, 1);
  /* DetectorModule.detectingElements: ReplicatedBoxSolidVolume { BoxSolidVolume, transforms } */
  double h[3] = {s->crystal_size[2] / 2, s->crystal_size[0] / 2, s->crystal_size[1] / 2};
  for (int k = 0; k < 8; k++) { /* BoxShape.corners (fixed 8) of Coordinate (fixed 3) */
    /* corner order of PETSIRD's generator: x the slowest, then (y, z) round the face */
    static const int sx[8] = {-1, -1, -1, -1, 1, 1, 1, 1}, sy[8] = {-1, -1, 1, 1, -1, -1, 1, 1},
                     sz[8] = {-1, 1, 1, -1, -1, 1, 1, -1};
    f32(o, sx[k] * h[0]);
    f32(o, sy[k] * h[1]);
    f32(o, sz[k] * h[2]);
  }
  varint(o, 0); /* materialId: no bulk materials are described */
  varint(o, g->E);
  for (guint e = 0; e < g->E; e++) transform(o, g->elem_tf + 12 * (gsize)e);
  varint(o, 0); /* nonDetectingElements */
  varint(o, g->M);
  for (guint m = 0; m < g->M; m++) transform(o, g->module_tf + 12 * (gsize)m);
  varint(o, 0); /* nonDetectingVolumes: null */
  varint(o, 0); /* bulkMaterials */
  varint(o, 0); /* gantryAlignment: null */
  /* tofBinEdges, a lower-triangular matrix of one module-type pair: Tomolab's bins (odd, bin 0
   * at the midpoint), else one bin wider than any line */
  double fwhm_mm = 0;
  varint(o, 1);
  varint(o, 1);
  if (lm->has_tof) { /* a TOF scanner's list mode without TOF: one bin, as without TOF */
    guint n = s->tof_bins;
    g_autofree double *e = g_new(double, n + 1);
    for (guint i = 0; i <= n; i++) e[i] = ((double)i - n / 2.0) * s->tof_bin_mm;
    bin_edges(o, e, n + 1);
    fwhm_mm = s->tof_fwhm_ps * C_MM_PER_PS / 2;
  } else {
    double r = 0;
    for (guint i = 0; i < s->n_crystals; i++) {
      const float *c = s->crystals[i].centre;
      r = MAX(r, sqrt((double)c[0] * c[0] + (double)c[1] * c[1] + (double)c[2] * c[2]));
    }
    double e[2] = {-ceil(2 * r + 1), ceil(2 * r + 1)};
    bin_edges(o, e, 2);
  }
  varint(o, 1); /* tofResolution: FWHM of (t1 - t2) c / 2 in mm, 0 without TOF */
  varint(o, 1);
  f32(o, fwhm_mm);
  double window[2], resolution;
  tl_scanner_energy(s, window, &resolution);
  varint(o, 1); /* eventEnergyBinEdges: one bin, the window */
  bin_edges(o, window, 2);
  varint(o, 1); /* energyResolutionAt511 */
  f32(o, resolution);
  zigzag(o, 0); /* singlesHistogramLevel: none */
  varint(o, 0); /* singlesHistogramEnergyBinEdges */
  zigzag(o, POLICY_NONE); /* singleEventPolicy */
  /* how multiples were treated is not known to Tomolab: "other" */
  zigzag(o, POLICY_OTHER); /* promptEventPolicy */
  zigzag(o, lm->delayed && lm->n_delayed ? POLICY_OTHER : POLICY_NONE); /* delayedEventPolicy */
  zigzag(o, POLICY_NONE); /* tripleEventPolicy */
  zigzag(o, POLICY_NONE); /* quadrupleEventPolicy */
  /* detectionEfficiencies: none known (empty tables), calibration factor 1 */
  string(o, "");
  f32(o, 1.0);
  varint(o, 0);
  varint(o, 0);
  varint(o, 0);
  varint(o, 0); /* Header.exam: null */
}

/* A ListOfCoincidenceEvents as promptEvents[0][0] (one module type). */
static void coincidences(Sink *o, const TlEvent *ev, guint64 n, guint tof_bins) {
  varint(o, 1);
  varint(o, 1);
  varint(o, n);
  gint32 mid = tof_bins ? (gint32)(tof_bins - 1) / 2 : 0;
  for (guint64 i = 0; i < n; i++) {
    varint(o, ev[i].a); /* detection bin = crystal id: one energy bin, module-major ids */
    varint(o, ev[i].b);
    varint(o, (guint64)(ev[i].tof_bin + mid));
  }
}

static gboolean event_block(Sink *o, const TlListmode *lm, const TlPetsirdBlock *b,
                            guint64 first_p, guint64 first_d, GError **error) {
  varint(o, 1); /* a batch of one TimeBlock */
  varint(o, 0); /* option EventTimeBlock */
  varint(o, b->start_ms);
  varint(o, b->stop_ms);
  varint(o, 0); /* singleEvents */
  coincidences(o, lm->events + first_p, b->prompts, lm->has_tof ? lm->scanner->tof_bins : 0);
  if (lm->delayed && lm->n_delayed)
    coincidences(o, lm->delayed + first_d, b->delayeds, lm->has_tof ? lm->scanner->tof_bins : 0);
  else
    varint(o, 0); /* delayedEvents: none recorded */
  varint(o, 0); /* tripleEvents */
  varint(o, 0); /* quadrupleEvents */
  return o->buf->len < BUF_BYTES || sink_flush(o, FALSE, error);
}

gboolean tl_petsird_save(const TlListmode *lm, const TlPetsirdBlock *blocks, guint n_blocks,
                         const char *path, GError **error) {
  if (!check(lm, blocks, n_blocks, path, error)) return FALSE;
  TlPetsirdBlock whole = {0, 0, lm->n_events, lm->delayed ? lm->n_delayed : 0};
  if (!blocks) {
    if (!ms_of(lm->start_s, "start_s", path, &whole.start_ms, error) ||
        !ms_of(lm->start_s + lm->duration_s, "start_s + duration_s", path, &whole.stop_ms, error))
      return FALSE;
    if (whole.stop_ms < whole.start_ms) whole.stop_ms = whole.start_ms;
    blocks = &whole;
    n_blocks = 1;
  }
  Modules g = {0};
  choose_modules(lm->scanner, &g);
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) {
    modules_clear(&g);
    return FALSE;
  }
  Sink o = {f, NULL, g_byte_array_sized_new(BUF_BYTES + 4096), FALSE};
  if (g_str_has_suffix(path, ".gz") || g_str_has_suffix(path, ".GZ"))
    o.z = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1));
  put(&o, "yardl", 5);
  guint32 version = GUINT32_TO_LE(1);
  put(&o, &version, 4);
  string(&o, tl_petsird_schema);
  header(&o, lm, &g);
  gboolean ok = TRUE;
  guint64 p = 0, d = 0;
  for (guint k = 0; ok && k < n_blocks; k++) {
    ok = event_block(&o, lm, &blocks[k], p, d, error);
    p += blocks[k].prompts;
    d += blocks[k].delayeds;
  }
  if (ok) {
    varint(&o, 0); /* the stream's end */
    ok = sink_flush(&o, TRUE, error);
  }
  modules_clear(&g);
  g_byte_array_unref(o.buf);
  g_clear_object(&o.z);
  if (!ok || o.failed) {
    int e = errno;
    tl_file_abort(f, &tmp);
    if (ok)
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    else
      g_prefix_error(error, "'%s': ", path);
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}
