/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TIFF stacks of projections (tl-ct-formats.h): a multi-page TIFF read through libtiff, one
 * page per view, and the small "<file>.tlgeom" sidecar that says what the pages hold and how
 * they were taken. Counts are normalised as Data Exchange's (tl-format-dxchange.c):
 * p = -log((I - D) / (W - D)), W, D the per-pixel means of the flat / dark pages, the
 * transmission clamped below at TL_DXCHANGE_MIN_TRANSMISSION. */
#include "tl-ct-formats.h"
#include "image/tl-file.h"
#include "image/tl-datafile.h"
#include "image/tl-format.h"
#include <math.h>
#include <string.h>
#include <tiffio.h>

#define TL_TIFF_MAGIC "tomolab-tiff-stack"
#define TL_TIFF_MAX_SIDECAR (64 * 1024)

void tl_ct_tiff_sidecar_clear(TlTiffSidecar *s) {
  g_clear_pointer(&s->flat, g_free);
  g_clear_pointer(&s->dark, g_free);
}

static gboolean sc_fail(GError **error, const char *src, guint line, const char *key,
                        const char *value, const char *expected) {
  g_autofree char *q = tl_text_quote(value, -1, 60);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': value '%s', expected %s", src,
              line, key, q, expected);
  return FALSE;
}

gboolean tl_ct_tiff_sidecar_parse(const char *text, gsize len, const char *src,
                                  TlTiffSidecar *out, GError **error) {
  *out = (TlTiffSidecar){.beam = TL_CT_PARALLEL, .centre_u = NAN, .values = TL_TIFF_COUNTS};
  if (len > TL_TIFF_MAX_SIDECAR) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %" G_GSIZE_FORMAT " bytes, more than the "
                "%u a sidecar may hold", src, len, TL_TIFF_MAX_SIDECAR);
    return FALSE;
  }
  if (!tl_text_check(src, text, len, 1, error)) return FALSE;
  g_autofree char *copy = g_strndup(text, len);
  g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
  gboolean magic = FALSE, angles = FALSE, pixel = FALSE, sid = FALSE, sdd = FALSE;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  gboolean ok = TRUE;
  for (guint i = 0; lines[i] && ok; i++) {
    guint line = i + 1;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(lines[i], &key, &value, &bad)) {
      if (!bad) continue;
      g_autofree char *q = tl_text_quote(lines[i], -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value', found '%s'",
                  src, line, q);
      ok = FALSE;
      break;
    }
    if (!tl_kv_once(keys_seen, src, key, line, error)) {
      ok = FALSE;
      break;
    }
    double d[2];
    if (strcmp(key, TL_TIFF_MAGIC) == 0) {
      if (strcmp(value, "1") != 0) ok = sc_fail(error, src, line, key, value, "1");
      magic = TRUE;
    } else if (strcmp(key, "beam") == 0) {
      if (strcmp(value, "parallel") == 0) out->beam = TL_CT_PARALLEL;
      else if (strcmp(value, "cone") == 0) out->beam = TL_CT_CONE;
      else ok = sc_fail(error, src, line, key, value, "parallel or cone");
    } else if (strcmp(key, "angles") == 0) {
      ok = tl_kv_doubles(src, line, key, value, 2, d, error);
      if (ok && (!isfinite(d[0]) || !isfinite(d[1]) || fabs(d[0]) > 1e6 || !(d[1] != 0) ||
                 fabs(d[1]) > 1e6))
        ok = sc_fail(error, src, line, key, value, "a finite start and a non-zero arc in degrees");
      out->start_deg = d[0], out->arc_deg = d[1], angles = TRUE;
    } else if (strcmp(key, "pixel_mm") == 0) {
      ok = tl_kv_doubles(src, line, key, value, 2, d, error);
      if (ok && !(d[0] > 0 && d[1] > 0 && d[0] < 1e6 && d[1] < 1e6))
        ok = sc_fail(error, src, line, key, value, "two sizes in (0, 1e6) mm");
      out->pixel_mm[0] = d[0], out->pixel_mm[1] = d[1], pixel = TRUE;
    } else if (strcmp(key, "centre_u") == 0) {
      ok = tl_kv_doubles(src, line, key, value, 1, d, error);
      if (ok && !(fabs(d[0]) < 1e6)) ok = sc_fail(error, src, line, key, value, "a column index");
      out->centre_u = d[0];
    } else if (strcmp(key, "sid_mm") == 0 || strcmp(key, "sdd_mm") == 0) {
      ok = tl_kv_doubles(src, line, key, value, 1, d, error);
      if (ok && !(d[0] > 0 && d[0] < 1e7))
        ok = sc_fail(error, src, line, key, value, "a distance in (0, 1e7) mm");
      if (key[1] == 'i') out->sid_mm = d[0], sid = TRUE;
      else out->sdd_mm = d[0], sdd = TRUE;
    } else if (strcmp(key, "values") == 0) {
      if (strcmp(value, "counts") == 0) out->values = TL_TIFF_COUNTS;
      else if (strcmp(value, "transmission") == 0) out->values = TL_TIFF_TRANSMISSION;
      else if (strcmp(value, "line-integrals") == 0) out->values = TL_TIFF_LINE_INTEGRALS;
      else ok = sc_fail(error, src, line, key, value, "counts, transmission or line-integrals");
    } else if (strcmp(key, "flat") == 0 || strcmp(key, "dark") == 0) {
      char **slot = key[0] == 'f' ? &out->flat : &out->dark;
      if (!*value || strchr(value, '/') || strcmp(value, "..") == 0 || *slot)
        ok = sc_fail(error, src, line, key, value,
                     "once, a file name in the sidecar's folder (no '/')");
      else *slot = g_strdup(value);
    } else {
      ok = sc_fail(error, src, line, key, value, "a known key (tomolab-tiff-stack, beam, angles, "
                   "pixel_mm, centre_u, sid_mm, sdd_mm, values, flat, dark)");
    }
  }
  const char *missing = !ok ? NULL : !magic ? TL_TIFF_MAGIC " = 1" : !angles ? "angles"
                      : !pixel ? "pixel_mm" : out->beam == TL_CT_CONE && !sid ? "sid_mm"
                      : out->beam == TL_CT_CONE && !sdd ? "sdd_mm"
                      : out->values == TL_TIFF_COUNTS && !out->flat ? "flat (values = counts)"
                                                                   : NULL;
  if (ok && missing) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key '%s' missing", src, missing);
    ok = FALSE;
  }
  if (ok && out->beam == TL_CT_CONE && !(out->sdd_mm > out->sid_mm)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: sdd_mm %g must exceed sid_mm %g", src,
                out->sdd_mm, out->sid_mm);
    ok = FALSE;
  }
  if (!ok) tl_ct_tiff_sidecar_clear(out);
  return ok;
}

/* --- pages --- */

/* libtiff reports through process-wide handlers (stderr by default) and, for a directory
 * chain cut short, only reports: it then counts fewer pages. So its first error or warning
 * of this thread is kept and turns the read into a GError. */
static _Thread_local char tiff_message[256];

static void tiff_record(const char *module, const char *fmt, va_list ap) {
  if (tiff_message[0]) return;
  char what[200];
  g_vsnprintf(what, sizeof what, fmt, ap);
  g_snprintf(tiff_message, sizeof tiff_message, "%s: %s", module ? module : "libtiff", what);
}

static void tiff_quiet(void) {
  TIFFSetErrorHandler(tiff_record);
  TIFFSetWarningHandler(tiff_record);
  tiff_message[0] = 0;
}

static gboolean tf_fail(GError **error, const char *path, guint page, const char *key,
                        const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static gboolean tf_fail(GError **error, const char *path, guint page, const char *key,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': TIFF page %u: %s: %s", path, page, key,
              what);
  return FALSE;
}

/* Every page of a TIFF as float: *n pages of *w x *h (w, h fixed by the caller when non-zero). */
static float *read_pages(const char *path, guint *n, guint *w, guint *h, GError **error) {
  if (!tl_file_check_input(path, "TIFF file", error)) return NULL;
  tiff_quiet();
  TIFF *t = TIFFOpen(path, "r");
  if (!t) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': libtiff cannot open it as a TIFF", path);
    return NULL;
  }
  guint pages = TIFFNumberOfDirectories(t);
  if (tiff_message[0]) {
    g_autofree char *q = tl_text_quote(tiff_message, -1, 200);
    tf_fail(error, path, 0, "directories", "libtiff: %s (truncated or damaged file)", q);
    TIFFClose(t);
    return NULL;
  }
  if (pages < 1 || pages > TL_DXCHANGE_MAX_DIM) {
    tf_fail(error, path, 0, "pages", "%u, expected 1 .. %u", pages, TL_DXCHANGE_MAX_DIM);
    TIFFClose(t);
    return NULL;
  }
  float *out = NULL;
  gsize done = 0;
  gboolean ok = TRUE;
  for (guint p = 0; p < pages && ok; p++) {
    guint32 pw = 0, ph = 0;
    guint16 bits = 1, spp = 1, fmt = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
    if (!TIFFSetDirectory(t, (tdir_t)p)) {
      ok = tf_fail(error, path, p, "directory", "unreadable (truncated file?)");
      break;
    }
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &pw);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &ph);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    if (pw < 1 || ph < 1 || pw > TL_DXCHANGE_MAX_DIM || ph > TL_DXCHANGE_MAX_DIM) {
      ok = tf_fail(error, path, p, "ImageWidth x ImageLength", "%u x %u, expected 1 .. %u each",
                   pw, ph, TL_DXCHANGE_MAX_DIM);
      break;
    }
    if (p == 0 && !*w) *w = pw, *h = ph;
    if (pw != *w || ph != *h) {
      ok = tf_fail(error, path, p, "ImageWidth x ImageLength", "%u x %u, expected %u x %u", pw, ph,
                   *w, *h);
      break;
    }
    if ((guint64)pw * ph * pages > TL_DXCHANGE_MAX_VALUES) {
      ok = tf_fail(error, path, p, "size", "%u x %u x %u pages, more than %llu values", pw, ph,
                   pages, (unsigned long long)TL_DXCHANGE_MAX_VALUES);
      break;
    }
    gboolean known = spp == 1 && ((fmt == SAMPLEFORMAT_UINT && (bits == 8 || bits == 16)) ||
                                  (fmt == SAMPLEFORMAT_INT && bits == 16) ||
                                  (fmt == SAMPLEFORMAT_IEEEFP && bits == 32));
    if (!known || TIFFIsTiled(t)) {
      ok = tf_fail(error, path, p, "SampleFormat, BitsPerSample, SamplesPerPixel",
                   "%u, %u, %u%s; expected one greyscale sample of uint8, uint16, int16 or "
                   "float32 in strips", fmt, bits, spp, TIFFIsTiled(t) ? " (tiled)" : "");
      break;
    }
    if (!out) out = g_try_new(float, (gsize)pw * ph * pages);
    if (!out) {
      ok = tf_fail(error, path, p, "size", "%u x %u x %u values do not fit in memory", pw, ph,
                   pages);
      break;
    }
    tmsize_t line = TIFFScanlineSize(t);
    if (line != (tmsize_t)pw * (bits / 8)) {
      ok = tf_fail(error, path, p, "scanline", "%lld bytes, expected %u", (long long)line,
                   pw * (bits / 8));
      break;
    }
    g_autofree guint8 *buf = g_malloc(line);
    for (guint32 r = 0; r < ph && ok; r++) {
      if (TIFFReadScanline(t, buf, r, 0) < 0) {
        ok = tf_fail(error, path, p, "row", "%u unreadable (truncated or damaged strip)", r);
        break;
      }
      float *dst = out + done;
      for (guint32 x = 0; x < pw; x++) {
        float v;
        if (bits == 8) v = buf[x];
        else if (bits == 16) {
          guint16 u;
          memcpy(&u, buf + 2 * x, 2);
          v = fmt == SAMPLEFORMAT_INT ? (float)(gint16)u : (float)u;
        } else memcpy(&v, buf + 4 * x, 4);
        if (!isfinite(v)) {
          ok = tf_fail(error, path, p, "pixel", "(%u, %u) is %g, expected a finite value", x, r,
                       v);
          break;
        }
        dst[x] = v;
      }
      done += pw;
    }
  }
  if (ok && tiff_message[0]) {
    g_autofree char *q = tl_text_quote(tiff_message, -1, 200);
    ok = tf_fail(error, path, pages - 1, "data", "libtiff: %s", q);
  }
  TIFFClose(t);
  if (!ok) {
    g_free(out);
    return NULL;
  }
  *n = pages;
  return out;
}

static double *page_mean(const float *v, guint pages, gsize pixels) {
  double *m = g_new0(double, pixels);
  for (guint k = 0; k < pages; k++)
    for (gsize i = 0; i < pixels; i++) m[i] += v[k * pixels + i];
  for (gsize i = 0; i < pixels; i++) m[i] /= pages;
  return m;
}

TlCtData *tl_ct_tiff_stack_load(const char *path, GError **error) {
  g_autofree char *side = g_strconcat(path, ".tlgeom", NULL);
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_test(side, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': a TIFF projection stack needs its "
                "sidecar '%s' (docs/formats.md)", path, side);
    return NULL;
  }
  GError *e = NULL;
  if (!g_file_get_contents(side, &text, &len, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "'%s': %s", side, e->message);
    g_error_free(e);
    return NULL;
  }
  TlTiffSidecar sc;
  if (!tl_ct_tiff_sidecar_parse(text, len, side, &sc, error)) return NULL;
  guint n = 0, w = 0, h = 0, nf = 0, nd = 0;
  g_autofree float *proj = read_pages(path, &n, &w, &h, error);
  g_autofree float *flat = NULL, *dark = NULL;
  g_autofree char *folder = g_path_get_dirname(side);
  gboolean ok = proj != NULL;
  if (ok && sc.values == TL_TIFF_COUNTS) {
    /* through the one data-file resolver (image/tl-datafile.h): no file outside the folder */
    g_autofree char *fp = tl_datafile_resolve(side, "flat", sc.flat, error);
    ok = fp && (flat = read_pages(fp, &nf, &w, &h, error)) != NULL;
    if (ok && sc.dark) {
      g_autofree char *dp = tl_datafile_resolve(side, "dark", sc.dark, error);
      ok = dp && (dark = read_pages(dp, &nd, &w, &h, error)) != NULL;
    }
  }
  TlCtOrbit o;
  if (sc.beam == TL_CT_CONE) tl_ct_orbit_init_cone(&o, n, sc.sid_mm, sc.sdd_mm, w, h,
                                                   sc.pixel_mm[0], sc.pixel_mm[1]);
  else tl_ct_orbit_init_parallel(&o, n, w, h, sc.pixel_mm[0], sc.pixel_mm[1]);
  o.start_deg = sc.start_deg, o.arc_deg = sc.arc_deg;
  if (!isnan(sc.centre_u)) o.offset_u_mm = (0.5 * (w - 1.0) - sc.centre_u) * sc.pixel_mm[0];
  TlCtGeometry *g = ok ? tl_ct_geometry_new_orbit(&o, error) : NULL;
  if (!g) {
    tl_ct_tiff_sidecar_clear(&sc);
    return NULL;
  }
  g_autoptr(TlCtData) d = tl_ct_data_new(g);
  gsize pixels = (gsize)w * h;
  g_autofree double *wm = flat ? page_mean(flat, nf, pixels) : NULL;
  g_autofree double *dm = dark ? page_mean(dark, nd, pixels) : g_new0(double, pixels);
  guint64 clamped = 0;
  for (guint k = 0; k < n; k++)
    for (gsize i = 0; i < pixels; i++) {
      double v = proj[k * pixels + i];
      if (sc.values == TL_TIFF_LINE_INTEGRALS) {
        d->proj[k * pixels + i] = (float)v;
        continue;
      }
      double t = sc.values == TL_TIFF_TRANSMISSION ? v : (v - dm[i]) / (wm[i] - dm[i]);
      if ((sc.values == TL_TIFF_COUNTS && !(wm[i] - dm[i] > 0)) ||
          !(t >= TL_DXCHANGE_MIN_TRANSMISSION))
        t = TL_DXCHANGE_MIN_TRANSMISSION, clamped++;
      d->proj[k * pixels + i] = (float)-log(t);
    }
  double mag = sc.beam == TL_CT_CONE ? sc.sid_mm / sc.sdd_mm : 1.0;
  d->has_grid = TRUE;
  d->grid = tl_image_grid_centred(w, w, h, (float)(sc.pixel_mm[0] * mag),
                                  (float)(sc.pixel_mm[0] * mag), (float)(sc.pixel_mm[1] * mag));
  static const char *vn[] = {"counts", "transmission", "line integrals"};
  d->description = g_strdup_printf("TIFF stack %s: %u pages of %u x %u (%s)%s; %" G_GUINT64_FORMAT
                                   " values clamped at transmission %g", path, n, w, h,
                                   vn[sc.values], flat ? ", flat/dark normalised" : "", clamped,
                                   TL_DXCHANGE_MIN_TRANSMISSION);
  tl_ct_tiff_sidecar_clear(&sc);
  return g_steal_pointer(&d);
}

/* --- the format table's entry (compute/tl-formats.c) --- */

static guint tiff_probe(const char *path, const guint8 *head, gsize n) {
  gboolean tiff = n >= 4 && ((memcmp(head, "II*\0", 4) == 0) || memcmp(head, "MM\0*", 4) == 0);
  if (!tiff) return 0;
  /* a TIFF is projections only with its sidecar (a stat, not a read) */
  g_autofree char *side = g_strconcat(path, ".tlgeom", NULL);
  return g_file_test(side, G_FILE_TEST_IS_REGULAR) ? TL_FORMAT_SURE : 0;
}

static gpointer tiff_load(const char *path, GError **error) {
  return tl_ct_tiff_stack_load(path, error);
}

/* The sidecar and the flat and dark stacks it names. */
static char **tiff_companions(const char *path, gboolean writing) {
  if (writing) return NULL;
  GPtrArray *v = g_ptr_array_new();
  char *side = g_strconcat(path, ".tlgeom", NULL);
  g_ptr_array_add(v, side);
  g_autofree char *text = NULL;
  gsize len = 0;
  TlTiffSidecar sc;
  if (g_file_get_contents(side, &text, &len, NULL) &&
      tl_ct_tiff_sidecar_parse(text, len, side, &sc, NULL)) {
    const char *names[2] = {sc.flat, sc.dark};
    for (guint i = 0; i < 2; i++) {
      char *p = names[i] ? tl_datafile_resolve(side, i ? "dark" : "flat", names[i], NULL) : NULL;
      if (p) g_ptr_array_add(v, p);
    }
    tl_ct_tiff_sidecar_clear(&sc);
  }
  g_ptr_array_add(v, NULL);
  return (char **)g_ptr_array_free(v, FALSE);
}

const TlFormatClass tl_format_tiff_stack = {
    .name = "tiff-stack",
    .summary = "TIFF stack of projections (one page per view) with a .tlgeom sidecar; read only",
    .kind = TL_DATA_CT,
    .extensions = ".tif .tiff",
    .probe = tiff_probe,
    .load = tiff_load,
    .companions = tiff_companions,
};
