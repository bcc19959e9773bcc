/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The format table: one line per format (each lives in the module of the data it holds), and
 * opening any file by its content (tl-formats.h). */
#include "dataset/tl-formats.h"
#include "image/tl-image.h"
#include "image/tl-file.h"
#include "image/tl-dicom.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/scanner/tl-scanner.h"
#include "pet/data/tl-format-mmr.h"
#include "pet/data/tl-format-castor.h"
#include "pet/data/tl-format-petsird.h"
#include "pet/correct/tl-norm.h"
#include "ct/tl-ct-data.h"
#include "image/tl-interfile.h"
#include "image/tl-metaimage.h"
#include "pet/data/tl-sinogram.h"
#include "ct/tl-ct-formats.h"
#include <string.h>

/* The image formats are image/'s list (tl_image_formats(), the one image loader's), first. */
static const TlFormatClass *const others[] = {
    /* PET */
    &tl_format_tlm,
    &tl_format_scanner,
    &tl_format_stir_sino,
    &tl_format_mmr,
    &tl_format_castor,
    &tl_format_castor_scanner,
    &tl_format_petsird,
    &tl_format_norm,
    /* CT */
    &tl_format_tlct,
    &tl_format_dxchange,
    &tl_format_tiff_stack,
    NULL,
};

static const TlFormatClass *const *table(void) {
  static const TlFormatClass **t;
  if (g_once_init_enter(&t)) {
    GPtrArray *a = g_ptr_array_new();
    for (const TlFormatClass *const *f = tl_image_formats(); *f; f++) g_ptr_array_add(a, (gpointer)*f);
    for (const TlFormatClass *const *f = others; *f; f++) g_ptr_array_add(a, (gpointer)*f);
    g_ptr_array_add(a, NULL);
    g_once_init_leave(&t, (const TlFormatClass **)g_ptr_array_free(a, FALSE)); /* kept for good */
  }
  return t;
}

const TlFormatClass *const *tl_formats(void) { return table(); }

const TlFormatClass *tl_format_find(const char *name) {
  const TlFormatClass *const *formats = table();
  for (guint i = 0; formats[i]; i++)
    if (g_ascii_strcasecmp(formats[i]->name, name) == 0) return formats[i];
  return NULL;
}

const TlFormatClass *tl_format_detect(const char *path, GError **error) {
  return tl_format_detect_in(table(), path, error);
}

const TlFormatClass *tl_format_for_output(const char *path, TlDataKind kind, const char *name,
                                          GError **error) {
  return tl_format_for_output_in(table(), path, kind, name, error);
}

gpointer tl_format_load_any(const char *path, TlDataKind *kind, const TlFormatClass **format,
                            GError **error) {
  const TlFormatClass *f = tl_format_detect(path, error);
  if (!f) return NULL;
  gpointer data = f->load(path, error);
  if (!data) return NULL;
  if (kind) *kind = f->kind;
  if (format) *format = f;
  return data;
}

gpointer tl_format_load_kind(const char *path, TlDataKind kind, GError **error) {
  const TlFormatClass *f = tl_format_detect(path, error);
  if (!f) return NULL;
  if (f->kind != kind) {
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s' holds %s (%s format), expected %s", q,
                tl_data_kind_name(f->kind), f->name, tl_data_kind_name(kind));
    return NULL;
  }
  return f->load(path, error);
}

gboolean tl_format_save(const TlFormatClass *format, gconstpointer data, const char *path,
                        GError **error) {
  if (!format->save) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': the %s format is read only", path,
                format->name);
    return FALSE;
  }
  return format->save(data, path, error);
}

char *tl_formats_patterns(TlDataKind kind, gboolean write) {
  const TlFormatClass *const *formats = table();
  GString *s = g_string_new(NULL);
  for (guint i = 0; formats[i]; i++) {
    const TlFormatClass *f = formats[i];
    if ((kind != TL_DATA_N_KINDS && f->kind != kind) || (write ? !f->save : !f->load)) continue;
    g_auto(GStrv) exts = g_strsplit(f->extensions, " ", -1);
    for (guint e = 0; exts[e]; e++) {
      g_autofree char *pat = g_strconcat("*", exts[e], NULL);
      if (!exts[e][0] || strstr(s->str, pat)) continue; /* ".img" also matches ".img.gz": fine */
      g_string_append_printf(s, "%s%s", s->len ? ";" : "", pat);
    }
  }
  return g_string_free(s, FALSE);
}

gboolean tl_formats_known_extension(const char *path) {
  const TlFormatClass *const *formats = table();
  for (guint i = 0; formats[i]; i++)
    if (formats[i]->load && tl_format_path_has_extension(path, formats[i]->extensions)) return TRUE;
  return FALSE;
}

void tl_data_free(TlDataKind kind, gpointer data) {
  if (!data) return;
  switch (kind) {
  case TL_DATA_IMAGE: tl_image_free(data); break;
  case TL_DATA_PET_LISTMODE: tl_listmode_free(data); break;
  case TL_DATA_CT: tl_ct_data_free(data); break;
  case TL_DATA_SCANNER: tl_scanner_free(data); break;
  case TL_DATA_PET_NORM: tl_norm_free(data); break;
  case TL_DATA_PET_SINOGRAM: tl_sinogram_free(data); break;
  default: g_assert_not_reached();
  }
}

static void describe_grid(GString *out, const char *what, const TlImageGrid *g) {
  g_string_append_printf(out, "%s: %u x %u x %u voxels of %g x %g x %g mm, first voxel centre "
                         "(%g, %g, %g) mm\n", what, g->dims[0], g->dims[1], g->dims[2],
                         g->voxel_mm[0], g->voxel_mm[1], g->voxel_mm[2], g->origin_mm[0],
                         g->origin_mm[1], g->origin_mm[2]);
}

static void describe_scanner(GString *out, const TlScanner *s) {
  g_string_append_printf(out, "scanner: %s, %u crystals, %u rings, max ring difference %u\n",
                         s->name ? s->name : "(unnamed)", s->n_crystals, s->n_rings,
                         s->max_ring_difference);
  if (s->tof_bins)
    g_string_append_printf(out, "TOF: %u bins of %g mm, %g ps FWHM\n", s->tof_bins,
                           s->tof_bin_mm, s->tof_fwhm_ps);
  else
    g_string_append(out, "TOF: no\n");
  double w[2], r;
  tl_scanner_energy(s, w, &r);
  g_string_append_printf(out, "energy: window %g-%g keV, resolution %g %% FWHM at 511 keV\n",
                         w[0], w[1], 100 * r);
}

void tl_data_describe(TlDataKind kind, gconstpointer data, GString *out) {
  g_string_append_printf(out, "holds: %s\n", tl_data_kind_name(kind));
  switch (kind) {
  case TL_DATA_IMAGE: {
    const TlImage *im = data;
    describe_grid(out, "grid", &im->grid);
    guint64 n = tl_image_grid_n_voxels(&im->grid);
    double mn = G_MAXDOUBLE, mx = -G_MAXDOUBLE;
    for (guint64 i = 0; i < n; i++) mn = MIN(mn, im->data[i]), mx = MAX(mx, im->data[i]);
    g_string_append_printf(out, "values: min %g, max %g, sum %g\nunit: %s\n", mn, mx,
                           tl_image_sum(im), tl_image_unit(im));
    break;
  }
  case TL_DATA_PET_LISTMODE: {
    const TlListmode *lm = data;
    g_string_append_printf(out, "modality: PET\nevents: %" G_GUINT64_FORMAT " prompts\n",
                           lm->n_events);
    if (lm->n_delayed)
      g_string_append_printf(out, "delayeds: %" G_GUINT64_FORMAT "\n", lm->n_delayed);
    guint64 tags[TL_TAG_N];
    if (tl_listmode_tag_counts(lm, tags))
      g_string_append_printf(out, "tags (simulation truth): %" G_GUINT64_FORMAT " trues, %"
                             G_GUINT64_FORMAT " scattered, %" G_GUINT64_FORMAT " randoms\n",
                             tags[TL_TAG_TRUE], tags[TL_TAG_SCATTERED], tags[TL_TAG_RANDOM]);
    if (lm->duration_s > 0)
      g_string_append_printf(out, "time: %g s from %g s\n", lm->duration_s, lm->start_s);
    if (lm->singles) {
      double sum = 0;
      for (guint i = 0; i < lm->scanner->n_crystals; i++) sum += lm->singles[i];
      g_string_append_printf(out, "singles: %u crystals, %.6g per second in all (coincidence "
                             "window %g ns)\n", lm->scanner->n_crystals, sum,
                             lm->coincidence_window_ns);
    }
    describe_scanner(out, lm->scanner);
    if (lm->description) g_string_append_printf(out, "description: %s\n", lm->description);
    break;
  }
  case TL_DATA_CT: {
    const TlCtData *d = data;
    g_string_append_printf(out, "modality: CT (%s beam)\nviews: %u of %u x %u pixels\n",
                           d->geometry->beam == TL_CT_CONE ? "cone" : "parallel",
                           d->geometry->n_views, d->geometry->det_u, d->geometry->det_v);
    if (d->has_grid) describe_grid(out, "suggested grid", &d->grid);
    if (d->description) g_string_append_printf(out, "description: %s\n", d->description);
    break;
  }
  case TL_DATA_SCANNER: describe_scanner(out, data); break;
  case TL_DATA_PET_NORM: tl_norm_describe(data, out); break;
  case TL_DATA_PET_SINOGRAM: tl_sinogram_describe(data, out); break;
  default: g_assert_not_reached();
  }
}

gboolean tl_format_describe_file(const char *path, GString *out, GError **error) {
  const TlFormatClass *f = tl_format_detect(path, error);
  if (!f) return FALSE;
  g_string_append_printf(out, "file: %s\nformat: %s (%s)\n", path, f->name, f->summary);
  if (f->describe) return f->describe(path, out, error);
  gpointer data = f->load(path, error);
  if (!data) return FALSE;
  tl_data_describe(f->kind, data, out);
  tl_data_free(f->kind, data);
  return TRUE;
}
