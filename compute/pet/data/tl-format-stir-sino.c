/* SPDX-License-Identifier: GPL-3.0-or-later */
/* STIR Interfile projection data (.hs + .s) into TlSinogram (tl-sinogram.h). Keys as STIR's
 * InterfilePDFSHeader reads them (learned from its documentation and example headers):
 * "matrix axis label [k]" names the axes ([4] segment, [1] tangential coordinate, [2]/[3] view
 * and axial coordinate in either order: SegmentViewAxialTangPos or SegmentAxialViewTangPos),
 * "matrix size" of the axial axis a list per segment, the ring differences per segment as
 * lists in the file's segment order, and the "Scanner parameters" block. */
#include "tl-sinogram.h"
#include "image/tl-interfile.h"
#include "image/tl-file.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* Scanners STIR knows by name (its Scanner.cxx table, values as published there): used when a
 * header names the scanner without a "Scanner parameters" block; keys in the header override.
 * mm and degrees; "|" separates the names of one scanner. */
static const struct {
  const char *names;
  guint rings, detectors;
  double inner_radius_mm, doi_mm, ring_spacing_mm, bin_size_mm, view_offset_deg;
} known[] = {
    {"ecat 962|ecat hr+", 32, 576, 412.0, 7.0, 4.85, 2.25, 0},
    {"ecat exact 3d|exact 3d|ecat hr++|ecat 966", 48, 576, 412.0, 7.0, 4.85, 2.25, 0},
    {"siemens mmr|mmr|2008", 64, 504, 328.0, 7.0, 4.0625, 2.08626, 0},
    {"siemens mct|mct|2011", 55, 672, 421.0, 7.0, 4.054, 2.005, 0},
    {"hrrt", 104, 576, 234.765, 7.0, 2.4375, 1.21875, 0},
    {"prt-1|rpt", 16, 384, 373.0, 7.0, 6.75, 3.1088, 0},
    {"ge discovery 690|discovery 690|ge discovery 710|discovery 710", 24, 576, 405.1, 9.4, 6.54,
     2.1306, -5.021},
    {"ge discovery mi 4 rings|discovery mi4", 36, 544, 371.1, 9.4, 5.52296, 2.206, -4.399},
};

static gint known_scanner(const char *name) {
  if (!name) return -1;
  g_autofree char *n = g_ascii_strdown(name, -1);
  g_strstrip(n);
  for (guint i = 0; i < G_N_ELEMENTS(known); i++) {
    g_auto(GStrv) names = g_strsplit(known[i].names, "|", -1);
    if (g_strv_contains((const char *const *)names, n)) return (gint)i;
  }
  return -1;
}

static TlSinogram *load(const char *path, GError **error) {
  g_autoptr(TlInterfile) h = tl_interfile_load(path, error);
  if (!h) return NULL;
  if (!tl_interfile_get(h, "interfile"))
    return tl_interfile_fail(h, "INTERFILE", "the '!INTERFILE :=' first line", error), NULL;
  gint64 ndim;
  if (!tl_interfile_int(h, "number of dimensions", TRUE, 4, 4, 5, &ndim, error)) return NULL;
  gint64 tof = 1;
  if (!tl_interfile_int(h, "number of tof time bins", FALSE, 1, 0, 1000000, &tof, error))
    return NULL;
  gint64 tof_mash = 0; /* STIR's "%TOF mashing factor": kept for info */
  if (!tl_interfile_int(h, "tof mashing factor", FALSE, 0, 0, 1000000, &tof_mash, error))
    return NULL;
  if (ndim == 5 || tof > 1)
    return tl_interfile_fail(h, ndim == 5 ? "number of dimensions" : "number of TOF time bins",
                             "non-TOF data (TOF projection data are not read yet)", error), NULL;
  /* which axis is which */
  int ax_seg = 0, ax_view = 0, ax_axial = 0, ax_tang = 0;
  for (int k = 1; k <= 4; k++) {
    g_autofree char *key = g_strdup_printf("matrix axis label[%d]", k);
    const char *l = tl_interfile_get(h, key);
    if (!l) return tl_interfile_fail(h, key, "segment, view, axial coordinate or tangential "
                                     "coordinate", error), NULL;
    g_autofree char *n = tl_interfile_normalise_key(l);
    int *slot = g_str_equal(n, "segment") ? &ax_seg : g_str_equal(n, "view") ? &ax_view
                : g_str_equal(n, "axial coordinate") ? &ax_axial
                : g_str_equal(n, "tangential coordinate") ? &ax_tang : NULL;
    if (!slot || *slot)
      return tl_interfile_fail(h, key, "each of segment, view, axial coordinate, tangential "
                               "coordinate once", error), NULL;
    *slot = k;
  }
  if (ax_seg != 4 || ax_tang != 1)
    return tl_interfile_fail(h, "matrix axis label[4]", "segment as axis [4] and tangential "
                             "coordinate as axis [1]", error), NULL;
  g_autoptr(TlSinogram) s = g_new0(TlSinogram, 1);
  s->tof_mash = (guint)tof_mash;
  gboolean view_major = ax_view == 3; /* [seg][view][axial][tang] */
  gint64 nseg, nview, ntang;
  g_autofree char *k_seg = g_strdup_printf("matrix size[%d]", ax_seg);
  g_autofree char *k_view = g_strdup_printf("matrix size[%d]", ax_view);
  g_autofree char *k_ax = g_strdup_printf("matrix size[%d]", ax_axial);
  g_autofree char *k_tang = g_strdup_printf("matrix size[%d]", ax_tang);
  if (!tl_interfile_int(h, k_seg, TRUE, 1, 1, TL_SINOGRAM_MAX_SEGMENTS, &nseg, error) ||
      !tl_interfile_int(h, k_view, TRUE, 1, 1, TL_SINOGRAM_MAX_DETECTORS / 2, &nview, error) ||
      !tl_interfile_int(h, k_tang, TRUE, 1, 1, TL_SINOGRAM_MAX_DETECTORS, &ntang, error))
    return NULL;
  g_autofree gint64 *nax = NULL, *lo = NULL, *hi = NULL;
  guint n1, n2, n3;
  if (!tl_interfile_int_list(h, k_ax, TL_SINOGRAM_MAX_SEGMENTS, 1, 2 * TL_SINOGRAM_MAX_RINGS,
                             &nax, &n1, error) ||
      !tl_interfile_int_list(h, "minimum ring difference per segment", TL_SINOGRAM_MAX_SEGMENTS,
                             -(gint64)TL_SINOGRAM_MAX_RINGS, TL_SINOGRAM_MAX_RINGS, &lo, &n2,
                             error) ||
      !tl_interfile_int_list(h, "maximum ring difference per segment", TL_SINOGRAM_MAX_SEGMENTS,
                             -(gint64)TL_SINOGRAM_MAX_RINGS, TL_SINOGRAM_MAX_RINGS, &hi, &n3,
                             error))
    return NULL;
  g_autofree char *nseg_exp = g_strdup_printf("a list of %" G_GINT64_FORMAT " entries, one per "
                                              "segment (%s)", nseg, k_seg);
  if (n1 != nseg) return tl_interfile_fail(h, k_ax, nseg_exp, error), NULL;
  if (n2 != nseg)
    return tl_interfile_fail(h, "minimum ring difference per segment", nseg_exp, error), NULL;
  if (n3 != nseg)
    return tl_interfile_fail(h, "maximum ring difference per segment", nseg_exp, error), NULL;
  s->n_segments = (guint)nseg;
  s->n_axial = g_new(guint, nseg);
  s->min_ring_difference = g_new(gint, nseg);
  s->max_ring_difference = g_new(gint, nseg);
  for (gint64 i = 0; i < nseg; i++) {
    s->n_axial[i] = (guint)nax[i];
    s->min_ring_difference[i] = (gint)lo[i];
    s->max_ring_difference[i] = (gint)hi[i];
  }
  s->n_views = (guint)nview;
  s->n_tangential = (guint)ntang;
  const char *corr = tl_interfile_get(h, "applied corrections");
  if (corr) {
    g_autofree char *c = g_ascii_strdown(corr, -1);
    s->arc_corrected = strstr(c, "arc correction") || strstr(c, "arc-correction");
  }
  const char *name = tl_interfile_get(h, "originating system");
  if (!name || !*name) name = tl_interfile_get(h, "scanner type");
  s->name = g_strdup(name ? name : "");
  gint64 rings, dets;
  double d_cm, doi_cm, rs_cm, bin_cm, vo;
  gint k = known_scanner(tl_interfile_get(h, "originating system"));
  if (k < 0) k = known_scanner(tl_interfile_get(h, "scanner type"));
  if (k < 0 && !tl_interfile_get(h, "number of rings")) {
    GString *names = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(known); i++)
      g_string_append_printf(names, "%s%s", i ? ", " : "", known[i].names);
    g_autofree char *exp = g_strdup_printf("a value: the 'Scanner parameters' block, or an "
                                           "'originating system' Tomolab knows (%s)", names->str);
    g_string_free(names, TRUE);
    return tl_interfile_fail(h, "number of rings", exp, error), NULL;
  }
  gboolean req = k < 0;
  if (!tl_interfile_int(h, "number of rings", req, req ? 1 : known[k].rings, 1,
                        TL_SINOGRAM_MAX_RINGS, &rings, error) ||
      !tl_interfile_int(h, "number of detectors per ring", req, req ? 4 : known[k].detectors, 4,
                        TL_SINOGRAM_MAX_DETECTORS, &dets, error) ||
      !tl_interfile_double(h, "inner ring diameter (cm)", req,
                           req ? 0 : known[k].inner_radius_mm / 5, TRUE, &d_cm, error) ||
      !tl_interfile_double(h, "average depth of interaction (cm)", FALSE,
                           req ? 0 : known[k].doi_mm / 10, FALSE, &doi_cm, error) ||
      !tl_interfile_double(h, "distance between rings (cm)", req,
                           req ? 0 : known[k].ring_spacing_mm / 10, TRUE, &rs_cm, error) ||
      !tl_interfile_double(h, "default bin size (cm)", FALSE, req ? 0 : known[k].bin_size_mm / 10,
                           FALSE, &bin_cm, error) ||
      !tl_interfile_double(h, "view offset (degrees)", FALSE,
                           req ? 0 : known[k].view_offset_deg, FALSE, &vo, error))
    return NULL;
  if (doi_cm < 0)
    return tl_interfile_fail(h, "average depth of interaction (cm)", "a number >= 0", error),
           NULL;
  if (bin_cm < 0)
    return tl_interfile_fail(h, "default bin size (cm)", "a number >= 0", error), NULL;
  if (dets % 2)
    return tl_interfile_fail(h, "number of detectors per ring", "an even number", error), NULL;
  s->n_rings = (guint)rings;
  s->n_detectors = (guint)dets;
  s->inner_radius_mm = 5.0 * d_cm;
  s->doi_mm = 10.0 * doi_cm;
  s->ring_spacing_mm = 10.0 * rs_cm;
  s->bin_size_mm = 10.0 * bin_cm;
  s->view_offset_deg = vo;
  /* block gaps: STIR models them as virtual crystals of the scanners it knows, not in keys */
  const TlCylinder *cyl = tl_cylinder_find(tl_interfile_get(h, "scanner type"), s->n_rings, s->n_detectors);
  if (!cyl) cyl = tl_cylinder_find(tl_interfile_get(h, "originating system"), s->n_rings, s->n_detectors);
  s->block_positions = cyl ? cyl->block_positions : 0;
  /* counts bounded before the product: each factor is, so the sum cannot overflow */
  guint64 total = 0;
  for (guint i = 0; i < s->n_segments; i++)
    total += (guint64)s->n_axial[i] * s->n_views * s->n_tangential;
  s->n_bins = total;
  if (!tl_sinogram_validate(s, path, error)) return NULL;
  TlInterfileSample fmt;
  if (!tl_interfile_sample_format(h, &fmt, error)) return NULL;
  float *raw = tl_interfile_read_data(h, path, &fmt, s->n_bins, error);
  if (!raw) return NULL;
  if (view_major) {
    s->data = raw;
  } else { /* [seg][axial][view][tang] -> [seg][view][axial][tang] */
    s->data = g_new(float, MAX(s->n_bins, 1));
    guint nv = s->n_views, nt = s->n_tangential;
    for (guint i = 0; i < s->n_segments; i++) {
      guint64 off = tl_sinogram_segment_offset(s, i);
      guint na = s->n_axial[i];
      for (guint a = 0; a < na; a++)
        for (guint v = 0; v < nv; v++)
          memcpy(s->data + off + ((guint64)v * na + a) * nt,
                 raw + off + ((guint64)a * nv + v) * nt, sizeof(float) * nt);
    }
    g_free(raw);
  }
  return g_steal_pointer(&s);
}

TlSinogram *tl_sinogram_load(const char *path, GError **error) { return load(path, error); }

static void append_list(GString *s, const char *key, guint n, const gint *vi, const guint *vu) {
  g_string_append_printf(s, "%s := {", key);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(s, "%s%d", i ? "," : "", vi ? vi[i] : (gint)vu[i]);
  g_string_append(s, "}\n");
}

/* The header of `s` naming `data_name` (float32 little endian, STIR 4 keys). */
static char *stir_header_text(gconstpointer data, const char *data_name) {
  const TlSinogram *s = data;
  GString *t = g_string_new("!INTERFILE  :=\n!imaging modality := PT\n");
  g_string_append_printf(t, "name of data file := %s\n", data_name);
  g_string_append_printf(t, "originating system := %s\n", s->name && *s->name ? s->name : "userdefined");
  g_string_append(t, "!version of keys := STIR4.0\n!GENERAL DATA :=\n!GENERAL IMAGE DATA :=\n"
                     "!type of data := PET\nimagedata byte order := LITTLEENDIAN\n"
                     "!PET STUDY (General) :=\n!PET data type := Emission\n");
  g_string_append_printf(t, "applied corrections := {%s}\n", s->arc_corrected ? "arc correction" : "None");
  g_string_append(t, "!number format := float\n!number of bytes per pixel := 4\n"
                     "number of dimensions := 4\nmatrix axis label [4] := segment\n");
  g_string_append_printf(t, "!matrix size [4] := %u\nmatrix axis label [3] := view\n"
                         "!matrix size [3] := %u\nmatrix axis label [2] := axial coordinate\n",
                         s->n_segments, s->n_views);
  append_list(t, "!matrix size [2]", s->n_segments, NULL, s->n_axial);
  g_string_append_printf(t, "matrix axis label [1] := tangential coordinate\n"
                         "!matrix size [1] := %u\n", s->n_tangential);
  append_list(t, "minimum ring difference per segment", s->n_segments, s->min_ring_difference, NULL);
  append_list(t, "maximum ring difference per segment", s->n_segments, s->max_ring_difference, NULL);
  char d[32], doi[32], rs[32], bs[32], vo[32];
  /* mm to cm rounded to 12 significant digits (nm), as STIR writes them: 2.08626 mm / 10 is
   * 0.20862599999999998 in shortest round-trip form */
  g_ascii_formatd(d, sizeof d, "%.12g", 2 * s->inner_radius_mm / 10);
  g_ascii_formatd(doi, sizeof doi, "%.12g", s->doi_mm / 10);
  g_ascii_formatd(rs, sizeof rs, "%.12g", s->ring_spacing_mm / 10);
  g_ascii_formatd(bs, sizeof bs, "%.12g", s->bin_size_mm / 10);
  tl_format_double(vo, s->view_offset_deg);
  g_string_append_printf(t, "number of time frames := 1\nScanner parameters :=\n"
                         "Scanner type := %s\nNumber of rings := %u\n"
                         "Number of detectors per ring := %u\nInner ring diameter (cm) := %s\n"
                         "Average depth of interaction (cm) := %s\n"
                         "Distance between rings (cm) := %s\nDefault bin size (cm) := %s\n"
                         "View offset (degrees) := %s\n"
                         "Maximum number of non-arc-corrected bins := %u\n"
                         "Default number of arc-corrected bins := %u\n",
                         s->name && *s->name ? s->name : "userdefined", s->n_rings,
                         s->n_detectors, d, doi, rs, bs, vo, s->n_tangential, s->n_tangential);
  /* the blocks as STIR's Scanner.cxx counts them: the gap is its virtual crystal */
  if (s->block_positions)
    g_string_append_printf(t, "Number of crystals per block in transaxial direction := %u\n",
                           s->block_positions);
  g_string_append(t, "End scanner parameters :=\n");
  if (s->tof_mash) g_string_append_printf(t, "%%TOF mashing factor := %u\n", s->tof_mash);
  g_string_append(t, "data offset in bytes[1] := 0\n"
                     "!END OF INTERFILE :=\n");
  return g_string_free(t, FALSE);
}

gboolean tl_sinogram_save(const TlSinogram *s, const char *path, GError **error) {
  if (!tl_sinogram_validate(s, path, error)) return FALSE;
  if (!tl_format_path_has_extension(path, ".hs")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "'%s': STIR projection data headers are named *.hs (the data go to *.s)", path);
    return FALSE;
  }
  /* X.hs -> X.s, through X~1.s: the header's rename is the commit (image/tl-file.h,
   * "Two-file outputs") */
  g_autofree char *named_now = tl_interfile_data_path(path);
  g_autofree char *data_path = tl_file_pair_next_data(path, ".s", named_now);
  g_autofree char *tmp = NULL;
  FILE *f = tl_file_begin(data_path, &tmp, error);
  if (!f) return FALSE;
  gboolean ok = TRUE;
  for (guint64 i = 0; i < s->n_bins && ok; i++) {
    guint32 u;
    memcpy(&u, &s->data[i], 4);
    u = GUINT32_TO_LE(u);
    ok = fwrite(&u, 4, 1, f) == 1;
  }
  if (!ok) {
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write STIR projection data '%s'", data_path);
    return FALSE;
  }
  if (!tl_file_commit(f, &tmp, data_path, error)) return FALSE;
  return tl_file_pair_commit(path, ".s", data_path, stir_header_text, s, error);
}

/* "!INTERFILE" and a segment / tangential axis; Siemens list-mode headers score 0. */
static guint stir_probe(const char *path, const guint8 *head, gsize n) {
  if (!tl_format_head_starts_with(head, n, "!INTERFILE")) return 0;
  g_autofree char *s = tl_interfile_squash(head, n);
  if (strstr(s, "sms-mi") || strstr(s, "listmode") || strstr(s, "list mode")) return 0;
  if (strstr(s, ":=segment") && strstr(s, ":=tangentialcoordinate")) return TL_FORMAT_SURE;
  if (strstr(s, "tangentialcoordinate") || strstr(s, "ringdifferencepersegment"))
    return TL_FORMAT_LIKELY;
  return tl_format_path_has_extension(path, ".hs") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer stir_load(const char *path, GError **error) { return tl_sinogram_load(path, error); }

static gboolean stir_save(gconstpointer data, const char *path, GError **error) {
  return tl_sinogram_save(data, path, error);
}

static char **stir_companions(const char *path, gboolean writing) {
  return tl_interfile_companions(path, writing, ".s");
}

const TlFormatClass tl_format_stir_sino = {
    .name = "stir",
    .summary = "STIR Interfile projection data (.hs + .s; segments, span, view mashing)",
    .kind = TL_DATA_PET_SINOGRAM,
    .extensions = ".hs",
    .probe = stir_probe,
    .load = stir_load,
    .save = stir_save,
    .companions = stir_companions,
};
