/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD reader. The model's meaning (ETSI PETSIRD v0.10.0, the model/ YAML files):
 * - a detection bin of module type t is energy + (element + module x elements) x energy bins;
 * - a crystal's position is its box's centre moved by the element's, then the module's rigid
 *   transformation (3 x 4, row-major, applied to column vectors);
 * - promptEvents[m0][m1] (m1 <= m0) holds events whose first detection is of type m0, the
 *   second of m1; tofIdx indexes tofBinEdges[m0][m1], edges of (t1 - t2) c / 2 in mm, which is
 *   Tomolab's TOF coordinate along first -> second (docs/formats.md);
 * - time intervals are in ms.
 * PETSIRD's reference generator writes one more promptEvents row than there are module types
 * (a copy of the last); its reference reader reads rows m0 < module types only, and so does this
 * one, counting the extra rows in the description. */
#include "tl-format-petsird.h"
#include "tl-yardl.h"
#include "tl-error.h"
#include "image/tl-file.h"
#include <gio/gio.h>
#include <math.h>
#include <string.h>

#define MAX_POSITION_MM 1e5
#define C_MM_PER_PS 0.299792458 /* speed of light */

void tl_petsird_info_free(TlPetsirdInfo *info) {
  if (!info) return;
  g_free(info->scanner);
  g_free(info->subject);
  if (info->block_prompts) g_array_unref(info->block_prompts);
  if (info->blocks) g_array_unref(info->blocks);
  g_free(info);
}

/* ---- the bytes: plain or gzipped ---- */

static gboolean is_gzip(const guint8 *p, gsize n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

static GBytes *read_bytes(const char *path, GError **error) {
  if (!tl_file_check_input(path, "PETSIRD file", error)) return NULL;
  g_autoptr(GFile) file = g_file_new_for_path(path);
  g_autoptr(GFileInputStream) in = g_file_read(file, NULL, error);
  if (!in) return NULL;
  guint8 magic[2] = {0, 0};
  gssize got = g_input_stream_read(G_INPUT_STREAM(in), magic, 2, NULL, error);
  if (got < 0 || !g_seekable_seek(G_SEEKABLE(in), 0, G_SEEK_SET, NULL, error)) return NULL;
  g_autoptr(GInputStream) src = NULL;
  if (is_gzip(magic, (gsize)got)) {
    g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    src = g_converter_input_stream_new(G_INPUT_STREAM(in), G_CONVERTER(z));
  } else {
    src = g_object_ref(G_INPUT_STREAM(in));
  }
  g_autoptr(GByteArray) buf = g_byte_array_new();
  guint8 chunk[1 << 16];
  while (TRUE) {
    gssize n = g_input_stream_read(src, chunk, sizeof chunk, NULL, error);
    if (n < 0) {
      g_prefix_error(error, "%s: ", path);
      return NULL;
    }
    if (n == 0) break;
    if (buf->len + (guint64)n > TL_PETSIRD_MAX_BYTES) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: more than %" G_GUINT64_FORMAT
                  " bytes of data (uncompressed); larger files are not read", path,
                  (guint64)TL_PETSIRD_MAX_BYTES);
      return NULL;
    }
    g_byte_array_append(buf, chunk, (guint)n);
  }
  return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

/* ---- the header: scanner geometry, TOF and energy bins ---- */

typedef struct {
  GBytes *bytes;
  TlYardlReader *r;
  TlYardlValue *header;
  const char *path;
  guint nmt;
  guint modules[TL_PETSIRD_MAX_MODULE_TYPES], elements[TL_PETSIRD_MAX_MODULE_TYPES];
  guint energy_bins[TL_PETSIRD_MAX_MODULE_TYPES], offset[TL_PETSIRD_MAX_MODULE_TYPES];
  const double *module_tf[TL_PETSIRD_MAX_MODULE_TYPES], *element_tf[TL_PETSIRD_MAX_MODULE_TYPES];
  const double *box[TL_PETSIRD_MAX_MODULE_TYPES];
  const double *energy_edges[TL_PETSIRD_MAX_MODULE_TYPES];
  const double *tof_edges[TL_PETSIRD_MAX_MODULE_TYPES][TL_PETSIRD_MAX_MODULE_TYPES];
  guint tof_bins[TL_PETSIRD_MAX_MODULE_TYPES][TL_PETSIRD_MAX_MODULE_TYPES];
  guint n_crystals;
  gboolean uniform_tof;
  guint tof_n;       /* the uniform binning: bins, width (mm) */
  double tof_w;
} Petsird;

static void petsird_clear(Petsird *p) {
  tl_yardl_value_free(p->header);
  tl_yardl_reader_free(p->r);
  if (p->bytes) g_bytes_unref(p->bytes);
}

static gboolean missing(const Petsird *p, const char *field, GError **error) {
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: header field %s is missing or not as "
              "PETSIRD v0.10.0 defines it", p->path, field);
  return FALSE;
}

/* BinEdges.edges of a BinEdges value: at least 2, finite, increasing. */
static const double *bin_edges(const Petsird *p, const TlYardlValue *v, const char *field,
                               guint *bins, GError **error) {
  guint64 n;
  const double *e = tl_yardl_numbers(tl_yardl_field(v, "edges"), &n);
  if (!e || n < 2 || n > (1u << 20)) return missing(p, field, error), NULL;
  for (guint64 i = 0; i < n; i++)
    if (!isfinite(e[i]) || (i && e[i] <= e[i - 1])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %s: edge %" G_GUINT64_FORMAT " is %g "
                  "(expected finite edges, increasing)", p->path, field, i, e[i]);
      return NULL;
    }
  *bins = (guint)(n - 1);
  return e;
}

static gboolean parse_scanner(Petsird *p, GError **error) {
  const TlYardlValue *sc = tl_yardl_field(p->header, "scanner");
  const TlYardlValue *geo = tl_yardl_field(sc, "scannerGeometry");
  const TlYardlValue *rms = tl_yardl_field(geo, "replicatedModules");
  if (!rms || !rms->kids) return missing(p, "scanner.scannerGeometry.replicatedModules", error);
  if (rms->count == 0 || rms->count > TL_PETSIRD_MAX_MODULE_TYPES) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: scanner.scannerGeometry.replicatedModules: "
                "%" G_GUINT64_FORMAT " module types (expected 1 to %d)", p->path, rms->count,
                TL_PETSIRD_MAX_MODULE_TYPES);
    return FALSE;
  }
  p->nmt = (guint)rms->count;
  guint64 total = 0;
  for (guint t = 0; t < p->nmt; t++) {
    const TlYardlValue *rm = tl_yardl_kid(rms, t);
    const TlYardlValue *det = tl_yardl_field(tl_yardl_field(rm, "object"), "detectingElements");
    guint64 nm, ne, nb;
    p->module_tf[t] = tl_yardl_numbers(tl_yardl_field(rm, "transforms"), &nm);
    p->element_tf[t] = tl_yardl_numbers(tl_yardl_field(det, "transforms"), &ne);
    p->box[t] = tl_yardl_numbers(tl_yardl_field(det, "object"), &nb);
    if (!p->module_tf[t] || !p->element_tf[t] || !p->box[t] || nm % 12 || ne % 12 || nb < 24)
      return missing(p, "replicatedModules[].(transforms, object.detectingElements)", error);
    p->modules[t] = (guint)MIN(nm / 12, G_MAXUINT);
    p->elements[t] = (guint)MIN(ne / 12, G_MAXUINT);
    p->offset[t] = (guint)total;
    total += (guint64)p->modules[t] * p->elements[t];
    if (total > TL_SCANNER_MAX_CRYSTALS || p->modules[t] == 0 || p->elements[t] == 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: module type %u: %u modules of %u "
                  "detecting elements (expected at least one each, %u crystals in all at most)",
                  p->path, t, p->modules[t], p->elements[t], TL_SCANNER_MAX_CRYSTALS);
      return FALSE;
    }
  }
  p->n_crystals = (guint)total;
  const TlYardlValue *ee = tl_yardl_field(sc, "eventEnergyBinEdges");
  const TlYardlValue *tof = tl_yardl_field(sc, "tofBinEdges");
  if (!ee || ee->n_kids != p->nmt) return missing(p, "scanner.eventEnergyBinEdges (one per module type)", error);
  if (!tof || tof->n_kids < p->nmt) return missing(p, "scanner.tofBinEdges (a row per module type)", error);
  for (guint t = 0; t < p->nmt; t++) {
    if (!(p->energy_edges[t] = bin_edges(p, tl_yardl_kid(ee, t), "scanner.eventEnergyBinEdges",
                                         &p->energy_bins[t], error)))
      return FALSE;
    const TlYardlValue *row = tl_yardl_kid(tof, t);
    if (!row || row->n_kids < t + 1) return missing(p, "scanner.tofBinEdges (row t has t + 1 entries)", error);
    for (guint u = 0; u <= t; u++)
      if (!(p->tof_edges[t][u] = bin_edges(p, tl_yardl_kid(row, u), "scanner.tofBinEdges",
                                           &p->tof_bins[t][u], error)))
        return FALSE;
    if ((guint64)p->modules[t] * p->elements[t] * p->energy_bins[t] > G_MAXUINT32) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: module type %u has more detection bins "
                  "than a uint32 numbers", p->path, t);
      return FALSE;
    }
  }
  /* one TOF binning for every pair: odd, equal widths, symmetric about 0 */
  const double *e0 = p->tof_edges[0][0];
  guint n0 = p->tof_bins[0][0];
  double w = (e0[n0] - e0[0]) / n0;
  gboolean uni = n0 % 2 == 1;
  for (guint i = 0; uni && i <= n0; i++) uni = fabs(e0[i] - (e0[0] + i * w)) <= 1e-4 * w;
  uni = uni && fabs(e0[0] + e0[n0]) <= 1e-4 * w;
  for (guint t = 0; uni && t < p->nmt; t++)
    for (guint u = 0; uni && u <= t; u++) {
      uni = p->tof_bins[t][u] == n0;
      for (guint i = 0; uni && i <= n0; i++) uni = fabs(p->tof_edges[t][u][i] - e0[i]) <= 1e-4 * w;
    }
  p->uniform_tof = uni;
  p->tof_n = n0;
  p->tof_w = w;
  return TRUE;
}

static gboolean petsird_open(Petsird *p, const char *path, GError **error) {
  p->path = path;
  if (!(p->bytes = read_bytes(path, error))) return FALSE;
  gsize n;
  const guint8 *d = g_bytes_get_data(p->bytes, &n);
  if (!(p->r = tl_yardl_reader_new(d ? d : (const guint8 *)"", n, path, error))) return FALSE;
  if (strcmp(tl_yardl_reader_protocol(p->r), "PETSIRD") != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: yardl protocol '%s' (expected PETSIRD)",
                path, tl_yardl_reader_protocol(p->r));
    return FALSE;
  }
  if (!(p->header = tl_yardl_read_value(p->r, "header", error))) return FALSE;
  return parse_scanner(p, error);
}

/* ---- events ---- */

/* Crystal id of detection bin `bin` of module type t, its energy bin in *energy. */
static gboolean crystal_of(const Petsird *p, guint t, double bin, guint *id, guint *energy) {
  guint64 b = (guint64)bin, per = (guint64)p->elements[t] * p->energy_bins[t];
  if (bin != (double)b || b / per >= p->modules[t]) return FALSE;
  *energy = (guint)(b % p->energy_bins[t]);
  *id = p->offset[t] + (guint)(b / p->energy_bins[t]);
  return TRUE;
}

/* An energy bin's mid point as PETSIRD's reference reader computes it: in float32, from the
 * float32 edges the file holds. */
static double mid_kev(const double *edges, guint k) {
  return (double)(((float)edges[k] + (float)edges[k + 1]) / 2.0f);
}

/* The events of one LowerTriangularMatrix<ListOfCoincidenceEvents> (rows m0 < module types),
 * checked; kept in `out` when non-NULL. */
static gboolean events(const Petsird *p, const TlYardlValue *m, const char *what, guint64 block,
                       GArray *out, guint64 *count, double energy_sum[2], guint64 *extra,
                       GError **error) {
  if (!m || (!m->kids && m->count)) return missing(p, what, error);
  if (m->count == 0) return TRUE; /* none of this kind */
  if (m->n_kids < p->nmt) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: time block %" G_GUINT64_FORMAT ": %s has "
                "%" G_GUINT64_FORMAT " rows (expected one per module type, %u)", p->path, block,
                what, m->n_kids, p->nmt);
    return FALSE;
  }
  *extra += m->n_kids - p->nmt;
  for (guint t = 0; t < p->nmt; t++) {
    const TlYardlValue *row = tl_yardl_kid(m, t);
    if (!row || row->n_kids < t + 1) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: time block %" G_GUINT64_FORMAT ": %s row "
                  "%u has %" G_GUINT64_FORMAT " lists (expected %u)", p->path, block, what, t,
                  row ? row->n_kids : 0, t + 1);
      return FALSE;
    }
    for (guint u = 0; u <= t; u++) {
      const TlYardlValue *list = tl_yardl_kid(row, u);
      guint64 n;
      const double *ev = tl_yardl_numbers(list, &n);
      if (!list || (list->count && (!ev || n != 3 * list->count))) return missing(p, what, error);
      for (guint64 i = 0; i < list->count; i++) {
        const double *e = ev + 3 * i;
        guint a, b, ea, eb;
        if (!crystal_of(p, t, e[0], &a, &ea) || !crystal_of(p, u, e[1], &b, &eb) ||
            e[2] >= p->tof_bins[t][u] || a == b) {
          g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: time block %" G_GUINT64_FORMAT
                      ": %s[%u][%u] event %" G_GUINT64_FORMAT ": detection bins %.0f, %.0f, "
                      "tofIdx %.0f (expected bins below %u and %u, two crystals, tofIdx below %u)",
                      p->path, block, what, t, u, i, e[0], e[1], e[2],
                      p->modules[t] * p->elements[t] * p->energy_bins[t],
                      p->modules[u] * p->elements[u] * p->energy_bins[u], p->tof_bins[t][u]);
          return FALSE;
        }
        if (energy_sum) {
          energy_sum[0] += mid_kev(p->energy_edges[t], ea);
          energy_sum[1] += mid_kev(p->energy_edges[u], eb);
        }
        if (out) {
          TlEvent te = {a, b, p->uniform_tof ? (gint32)e[2] - (gint32)(p->tof_n - 1) / 2 : 0};
          g_array_append_val(out, te);
        }
      }
      *count += list->count;
    }
  }
  return TRUE;
}

/* Every time block: counts into info, events into prompts/delayed when non-NULL. */
static gboolean read_blocks(Petsird *p, TlPetsirdInfo *info, GArray *prompts, GArray *delayed,
                            GError **error) {
  info->block_prompts = g_array_new(FALSE, FALSE, sizeof(guint64));
  info->blocks = g_array_new(FALSE, FALSE, sizeof(TlPetsirdBlock));
  while (TRUE) {
    g_autoptr(TlYardlValue) tb = NULL;
    if (!tl_yardl_read_item(p->r, "timeBlocks", &tb, error)) return FALSE;
    if (!tb) break;
    guint64 k = info->time_blocks++;
    const char *tag = tl_yardl_union_tag(tb);
    if (!tag || strcmp(tag, "EventTimeBlock") != 0) {
      if (tag && (strcmp(tag, "BedMovementTimeBlock") == 0 || strcmp(tag, "GantryMovementTimeBlock") == 0)) {
        g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "%s: time block %" G_GUINT64_FORMAT
                    " is a %s: moving geometry is not read (every event would be placed wrongly)",
                    p->path, k, tag);
        return FALSE;
      }
      info->other_blocks++;
      continue;
    }
    const TlYardlValue *b = tl_yardl_kid(tb, 0);
    guint64 n;
    const double *ti = tl_yardl_numbers(tl_yardl_field(b, "timeInterval"), &n);
    /* uint32 ms in the model; a schema declaring another type may hold more: refused */
    if (!ti || n != 2 || ti[0] < 0 || ti[1] < ti[0] || ti[1] > G_MAXUINT32)
      return missing(p, "EventTimeBlock.timeInterval", error);
    if (info->event_blocks == 0 || ti[0] < info->first_ms) info->first_ms = (guint64)ti[0];
    if (ti[1] > info->last_ms) info->last_ms = (guint64)ti[1];
    info->event_blocks++;
    guint64 before = info->prompts, before_d = info->delayeds;
    if (!events(p, tl_yardl_field(b, "promptEvents"), "promptEvents", k, prompts, &info->prompts,
                info->energy_sum, &info->extra_rows, error) ||
        !events(p, tl_yardl_field(b, "delayedEvents"), "delayedEvents", k, delayed,
                &info->delayeds, NULL, &info->extra_rows, error))
      return FALSE;
    guint64 in_block = info->prompts - before;
    g_array_append_val(info->block_prompts, in_block);
    TlPetsirdBlock blk = {(guint32)ti[0], (guint32)ti[1], in_block, info->delayeds - before_d};
    g_array_append_val(info->blocks, blk);
  }
  return tl_yardl_reader_finish(p->r, error);
}

static TlPetsirdInfo *info_new(const Petsird *p) {
  TlPetsirdInfo *info = g_new0(TlPetsirdInfo, 1);
  const TlYardlValue *sc = tl_yardl_field(p->header, "scanner");
  info->scanner = g_strdup(tl_yardl_string(tl_yardl_field(sc, "modelName")));
  const TlYardlValue *exam = tl_yardl_kid(tl_yardl_field(p->header, "exam"), 0);
  info->subject = g_strdup(tl_yardl_string(tl_yardl_field(tl_yardl_field(exam, "subject"), "id")));
  info->collimator_field = tl_yardl_reader_has_field(p->r, "ScannerInformation", "collimatorType");
  info->module_types = p->nmt;
  for (guint t = 0; t < p->nmt; t++) {
    info->modules[t] = p->modules[t];
    info->elements[t] = p->elements[t];
    info->energy_bins[t] = p->energy_bins[t];
    info->tof_bins[t] = p->tof_bins[t][t];
  }
  info->n_crystals = p->n_crystals;
  info->uniform_tof = p->uniform_tof;
  return info;
}

TlPetsirdInfo *tl_petsird_scan(const char *path, GError **error) {
  Petsird p = {0};
  g_autoptr(TlPetsirdInfo) info = NULL;
  if (petsird_open(&p, path, error)) {
    info = info_new(&p);
    if (!read_blocks(&p, info, NULL, NULL, error)) g_clear_pointer(&info, tl_petsird_info_free);
  }
  petsird_clear(&p);
  return g_steal_pointer(&info);
}

/* ---- the scanner ---- */

/* x' = M x for a 3 x 4 row-major rigid transformation. */
static void apply(const double *m, const double x[3], double y[3]) {
  for (int i = 0; i < 3; i++) y[i] = m[4 * i] * x[0] + m[4 * i + 1] * x[1] + m[4 * i + 2] * x[2] + m[4 * i + 3];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The axis of the box's longest side in its own frame (0, 1, 2), -1 when no side is longest by
 * 1 % (a cube has no depth direction). */
static int depth_axis(const double *box) {
  double ext[3];
  for (int i = 0; i < 3; i++) {
    double lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
    for (int k = 0; k < 8; k++) lo = MIN(lo, box[3 * k + i]), hi = MAX(hi, box[3 * k + i]);
    ext[i] = hi - lo;
  }
  int d = ext[0] >= ext[1] ? (ext[0] >= ext[2] ? 0 : 2) : (ext[1] >= ext[2] ? 1 : 2);
  for (int i = 0; i < 3; i++)
    if (i != d && ext[i] > 0.99 * ext[d]) return -1;
  return d;
}

/* A crystal's inward normal: its box's depth axis turned by the element's and the module's
 * rotations, on the axis' side (a planar head's crystals far off its centre keep the head's
 * normal); facing the axis when the box has no depth axis or it runs mostly along z. Tomolab's
 * normals (a polygon side's, a head's) thus come back from files it wrote. */
static void crystal_normal(const double *etf, const double *mtf, int axis, const double y[3],
                           double r, float n[3]) {
  double rad[2] = {y[0] / r, y[1] / r};
  if (axis >= 0) {
    double u[3], v[3];
    for (int i = 0; i < 3; i++) u[i] = etf[4 * i + axis]; /* the rotation's column */
    for (int i = 0; i < 3; i++) v[i] = mtf[4 * i] * u[0] + mtf[4 * i + 1] * u[1] + mtf[4 * i + 2] * u[2];
    double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (isfinite(len) && len > 0 && hypot(v[0], v[1]) >= 0.5 * len) {
      double sign = v[0] * rad[0] + v[1] * rad[1] >= 0 ? -1 : 1;
      for (int i = 0; i < 3; i++) n[i] = (float)(sign * v[i] / len);
      return;
    }
  }
  n[0] = (float)-rad[0];
  n[1] = (float)-rad[1];
  n[2] = 0;
}

static TlScanner *make_scanner(const Petsird *p, const TlPetsirdInfo *info, GError **error) {
  g_autoptr(TlScanner) s = g_new0(TlScanner, 1);
  s->name = g_strdup(info->scanner && *info->scanner ? info->scanner : "PETSIRD scanner");
  s->kind = TL_SCANNER_RING;
  s->n_crystals = p->n_crystals;
  s->crystals = g_new0(TlCrystal, p->n_crystals);
  g_autofree double *z = g_new(double, p->n_crystals);
  for (guint t = 0; t < p->nmt; t++) {
    int axis = depth_axis(p->box[t]);
    double c[3] = {0, 0, 0};
    for (int k = 0; k < 8; k++)
      for (int i = 0; i < 3; i++) c[i] += p->box[t][3 * k + i] / 8;
    for (guint m = 0; m < p->modules[t]; m++)
      for (guint e = 0; e < p->elements[t]; e++) {
        double x[3], y[3];
        apply(p->element_tf[t] + 12 * e, c, x);
        apply(p->module_tf[t] + 12 * m, x, y);
        guint id = p->offset[t] + m * p->elements[t] + e;
        double r = hypot(y[0], y[1]);
        for (int i = 0; i < 3; i++)
          if (!isfinite(y[i]) || fabs(y[i]) > MAX_POSITION_MM || r < 1e-3) {
            g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: module type %u, module %u, element "
                        "%u: centre (%g, %g, %g) mm (expected finite, off the axis, within %g mm)",
                        p->path, t, m, e, y[0], y[1], y[2], MAX_POSITION_MM);
            return NULL;
          }
        TlCrystal *k = &s->crystals[id];
        for (int i = 0; i < 3; i++) k->centre[i] = (float)y[i];
        crystal_normal(p->element_tf[t] + 12 * e, p->module_tf[t] + 12 * m, axis, y, r, k->normal);
        k->group = id; /* any two crystals may pair: PETSIRD lists what was detected */
        z[id] = y[2];
      }
  }
  /* rings: the distinct axial positions (1 um apart at least) */
  g_autofree double *zs = g_memdup2(z, sizeof(double) * p->n_crystals);
  qsort(zs, p->n_crystals, sizeof(double), cmp_double);
  guint nz = 0;
  for (guint i = 0; i < p->n_crystals; i++)
    if (nz == 0 || zs[i] - zs[nz - 1] > 1e-3) zs[nz++] = zs[i];
  for (guint i = 0; i < p->n_crystals; i++) {
    guint lo = 0, hi = nz;
    while (hi - lo > 1) {
      guint mid = (lo + hi) / 2;
      if (zs[mid] <= z[i] + 5e-4) lo = mid;
      else hi = mid;
    }
    s->crystals[i].ring = lo;
  }
  s->n_rings = nz;
  s->max_ring_difference = nz - 1;
  /* sizes of the first module type's box, in its own frame: sorted extents (depth the largest) */
  double ext[3];
  for (int i = 0; i < 3; i++) {
    double lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
    for (int k = 0; k < 8; k++) lo = MIN(lo, p->box[0][3 * k + i]), hi = MAX(hi, p->box[0][3 * k + i]);
    ext[i] = hi - lo;
  }
  qsort(ext, 3, sizeof(double), cmp_double);
  s->crystal_size[0] = (float)ext[0];
  s->crystal_size[1] = (float)ext[1];
  s->crystal_size[2] = (float)ext[2];
  if (p->uniform_tof && p->tof_n > 1) {
    s->tof_bins = p->tof_n;
    s->tof_bin_mm = (float)p->tof_w;
    const TlYardlValue *res = tl_yardl_kid(tl_yardl_field(tl_yardl_field(p->header, "scanner"),
                                                         "tofResolution"), 0);
    guint64 n;
    const double *fwhm = tl_yardl_numbers(res, &n);
    /* PETSIRD gives the coincidence timing resolution as a FWHM in mm of (t1 - t2) c / 2 */
    s->tof_fwhm_ps = fwhm && n >= 1 && fwhm[0] > 0 ? (float)(2 * fwhm[0] / C_MM_PER_PS) : 0;
  }
  double lo = G_MAXDOUBLE, hi = 0;
  for (guint t = 0; t < p->nmt; t++) {
    lo = MIN(lo, p->energy_edges[t][0]);
    hi = MAX(hi, p->energy_edges[t][p->energy_bins[t]]);
  }
  if (lo >= 0 && hi <= TL_SCANNER_MAX_ENERGY_KEV) {
    s->energy_window_kev[0] = (float)lo;
    s->energy_window_kev[1] = (float)hi;
    const TlYardlValue *er = tl_yardl_field(tl_yardl_field(p->header, "scanner"), "energyResolutionAt511");
    guint64 n;
    const double *r = tl_yardl_numbers(er, &n);
    s->energy_resolution = r && n >= 1 && r[0] >= 0 && r[0] <= 1 ? (float)r[0] : 0;
    if (s->energy_resolution == 0) tl_scanner_energy_fill(s);
  }
  if (!tl_scanner_validate(s, error)) {
    g_prefix_error(error, "%s: ", p->path);
    return NULL;
  }
  return g_steal_pointer(&s);
}

TlListmode *tl_petsird_load(const char *path, TlPetsirdInfo **info_out, GError **error) {
  Petsird p = {0};
  g_autoptr(TlPetsirdInfo) info = NULL;
  g_autoptr(GArray) prompts = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  g_autoptr(GArray) delayed = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  TlListmode *lm = NULL;
  if (petsird_open(&p, path, error)) {
    info = info_new(&p);
    TlScanner *s = NULL;
    if (read_blocks(&p, info, prompts, delayed, error) && (s = make_scanner(&p, info, error))) {
      lm = tl_listmode_new(s, 0);
      g_free(lm->events); /* the one placeholder event tl_listmode_new makes */
      lm->n_events = prompts->len;
      lm->events = (TlEvent *)g_array_free(g_steal_pointer(&prompts), FALSE);
      lm->n_delayed = delayed->len;
      lm->delayed = (TlEvent *)g_array_free(g_steal_pointer(&delayed), FALSE);
      lm->has_tof = s->tof_bins > 0;
      lm->start_s = info->first_ms * 1e-3;
      lm->duration_s = (info->last_ms - info->first_ms) * 1e-3;
      g_free(lm->description);
      lm->description = g_strdup_printf(
          "PETSIRD %s, %u module types%s%s", info->scanner ? info->scanner : "",
          info->module_types, p.uniform_tof ? "" : "; TOF not kept: module-type pairs bin it differently",
          info->extra_rows ? "; extra promptEvents rows ignored (reference generator)" : "");
      if (!tl_listmode_validate(lm, path, error)) g_clear_pointer(&lm, tl_listmode_free);
    }
  }
  petsird_clear(&p);
  if (lm && info_out) *info_out = g_steal_pointer(&info);
  return lm;
}

/* ---- the format table's entry ---- */

static guint petsird_probe(const char *path, const guint8 *head, gsize n) {
  static const char sig[] = "\"protocol\":{\"name\":\"PETSIRD\"";
  if (n >= 9 && memcmp(head, "yardl", 5) == 0)
    return g_strstr_len((const char *)head, (gssize)n, sig) ? TL_FORMAT_SURE : TL_FORMAT_LIKELY;
  if (is_gzip(head, n) && tl_format_path_has_extension(path, ".bin.gz .petsird.gz"))
    return TL_FORMAT_LIKELY; /* gzip hides the magic; the extension says what is inside */
  return tl_format_path_has_extension(path, ".petsird") ? TL_FORMAT_EXTENSION : 0;
}

static gboolean petsird_describe(const char *path, GString *out, GError **error) {
  g_autoptr(TlPetsirdInfo) i = tl_petsird_scan(path, error);
  if (!i) return FALSE;
  g_string_append_printf(out, "holds: PET list mode\nmodality: PET\nformat: PETSIRD (yardl binary), "
                         "model v0.10.0%s\nscanner: %s, %u crystals in %u module types\n",
                         i->collimator_field ? " + collimatorType (development model)" : "",
                         i->scanner ? i->scanner : "", i->n_crystals, i->module_types);
  for (guint t = 0; t < i->module_types; t++)
    g_string_append_printf(out, "module type %u: %u modules x %u detecting elements, %u energy "
                           "bins, %u TOF bins\n", t, i->modules[t], i->elements[t],
                           i->energy_bins[t], i->tof_bins[t]);
  g_string_append_printf(out, "TOF: %s\n", i->uniform_tof && i->tof_bins[0] > 1 ? "yes"
                         : i->uniform_tof ? "no" : "not kept (module-type pairs bin it differently)");
  if (i->subject) g_string_append_printf(out, "subject: %s\n", i->subject);
  g_string_append_printf(out, "time blocks: %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " with events"
                         ", %" G_GUINT64_FORMAT " of other kinds), %" G_GUINT64_FORMAT "..%"
                         G_GUINT64_FORMAT " ms\nprompts: %" G_GUINT64_FORMAT "\ndelayeds: %"
                         G_GUINT64_FORMAT "\n", i->time_blocks, i->event_blocks, i->other_blocks,
                         i->first_ms, i->last_ms, i->prompts, i->delayeds);
  if (i->prompts)
    g_string_append_printf(out, "mean energy: %.10g keV (first detection), %.10g keV (second)\n",
                           i->energy_sum[0] / (double)i->prompts, i->energy_sum[1] / (double)i->prompts);
  if (i->extra_rows)
    g_string_append_printf(out, "note: %" G_GUINT64_FORMAT " event-matrix rows beyond the module "
                           "types ignored (PETSIRD's reference generator writes them)\n", i->extra_rows);
  return TRUE;
}

static gpointer petsird_load_any(const char *path, GError **error) {
  return tl_petsird_load(path, NULL, error);
}

static gboolean petsird_save_any(gconstpointer data, const char *path, GError **error) {
  return tl_petsird_save(data, NULL, 0, path, error);
}

const TlFormatClass tl_format_petsird = {
    .name = "petsird",
    .summary = "PETSIRD list mode (ETSI raw-data standard, yardl binary, optionally gzipped)",
    .kind = TL_DATA_PET_LISTMODE,
    .extensions = ".petsird .bin .bin.gz .petsird.gz",
    .probe = petsird_probe,
    .describe = petsird_describe,
    .load = petsird_load_any,
    .save = petsird_save_any,
};
