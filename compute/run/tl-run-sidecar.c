/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The provenance sidecar (tl-run-sidecar.h): written by hand with JSON string escaping (json-glib
 * is no dependency), and read back only for its run part, through tl-json.h. */
#include "tl-run-sidecar.h"
#include "image/tl-file.h"
#include "tl-json.h"
#include "tl-error.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

char *tl_run_sidecar_path(const char *image_path) {
  g_autofree char *dir = g_path_get_dirname(image_path);
  g_autofree char *base = g_path_get_basename(image_path);
  gsize n = strlen(base);
  if (n > 7 && g_str_has_suffix(base, ".nii.gz")) base[n - 7] = 0;
  else {
    char *dot = strrchr(base, '.');
    if (dot && dot != base) *dot = 0;
  }
  g_autofree char *name = g_strconcat(base, ".json", NULL);
  return g_str_equal(dir, ".") && !g_str_has_prefix(image_path, "./")
             ? g_steal_pointer(&name)
             : g_build_filename(dir, name, NULL);
}

char *tl_run_file_sha256(const char *path, GError **error) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: cannot read it for its SHA-256: %s", path,
                g_strerror(errno));
    return NULL;
  }
  GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
  guchar buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) g_checksum_update(c, buf, n);
  gboolean failed = ferror(f);
  fclose(f);
  char *hex = failed ? NULL : g_strdup(g_checksum_get_string(c));
  g_checksum_free(c);
  if (failed)
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error while computing its SHA-256", path);
  return hex;
}

/* RFC 8259 string: quote, backslash and control characters escaped; UTF-8 passes through. */
static void json_string(GString *o, const char *s_in) {
  /* JSON is UTF-8: a file name that is not shows its bad bytes as U+FFFD */
  g_autofree char *valid = g_utf8_validate(s_in, -1, NULL) ? NULL : g_utf8_make_valid(s_in, -1);
  const char *s = valid ? valid : s_in;
  g_string_append_c(o, '"');
  for (const guchar *p = (const guchar *)s; *p; p++) {
    switch (*p) {
    case '"': g_string_append(o, "\\\""); break;
    case '\\': g_string_append(o, "\\\\"); break;
    case '\n': g_string_append(o, "\\n"); break;
    case '\r': g_string_append(o, "\\r"); break;
    case '\t': g_string_append(o, "\\t"); break;
    default:
      if (*p < 0x20) g_string_append_printf(o, "\\u%04x", *p);
      else g_string_append_c(o, (char)*p);
    }
  }
  g_string_append_c(o, '"');
}

static void json_number(GString *o, double v) {
  char buf[32];
  tl_format_double(buf, isfinite(v) ? v : 0);
  g_string_append(o, buf);
}

static void member(GString *o, const char *key, const char *value) {
  g_string_append(o, "  ");
  json_string(o, key);
  g_string_append(o, ": ");
  json_string(o, value);
  g_string_append(o, ",\n");
}

/* The method's parameters as BIDS-PET lists them: labels, units, values. */
typedef struct {
  GPtrArray *labels, *units;
  GArray *values;
} Params;

static void param(Params *p, const char *label, const char *unit, double v) {
  g_ptr_array_add(p->labels, (gpointer)label);
  g_ptr_array_add(p->units, (gpointer)unit);
  g_array_append_val(p->values, v);
}

static char *basename_of(const char *path) { return g_path_get_basename(path); }

char *tl_run_sidecar_json(const TlRunSpec *s, const char *device, const char *units,
                          GError **error) {
  return tl_run_sidecar_json_notes(s, device, units, NULL, error);
}

char *tl_run_sidecar_json_notes(const TlRunSpec *s, const char *device, const char *units,
                                const char *const *notes, GError **error) {
  gboolean ct = s->modality == TL_RUN_CT;
  const char *algo = tl_run_spec_algorithm(s);
  gboolean fdk = tl_run_algorithm_direct(algo);
  GString *o = g_string_new("{\n");
  g_autofree char *method = g_ascii_strup(algo, -1);
  member(o, "ReconMethodName", method);
  g_autofree char *impl = g_strdup_printf("Tomolab %s", tl_run_version());
  member(o, "ReconMethodImplementationVersion", impl);

  Params p = {g_ptr_array_new(), g_ptr_array_new(), g_array_new(FALSE, FALSE, sizeof(double))};
  if (!fdk) {
    param(&p, "iterations", "none", tl_run_spec_iterations(s));
    param(&p, "subsets", "none", tl_run_spec_subsets(s));
  }
  if (s->prior) {
    param(&p, "beta", "none", s->beta);
    if (g_str_equal(s->prior, "rdp")) param(&p, "gamma", "none", s->gamma);
    if (g_str_equal(s->prior, "rdp") || g_str_equal(s->prior, "tv"))
      param(&p, "epsilon", "none", s->epsilon);
  }
  if (g_str_equal(algo, "bsrem") || g_str_equal(algo, "sirt") || g_str_equal(algo, "os-sart"))
    param(&p, "relaxation", "none", s->relaxation);
  if (!ct && g_str_equal(tl_run_spec_projector(s), "tor"))
    param(&p, "tube FWHM", "mm", s->tor_fwhm_mm);
  if (!ct && s->tof) param(&p, "TOF kernel truncation", "sigma", s->tof_nsigma);
  const char *names[] = {"ReconMethodParameterLabels", "ReconMethodParameterUnits"};
  GPtrArray *lists[] = {p.labels, p.units};
  for (int l = 0; l < 2; l++) {
    g_string_append_printf(o, "  \"%s\": [", names[l]);
    for (guint i = 0; i < lists[l]->len; i++) {
      if (i) g_string_append(o, ", ");
      json_string(o, g_ptr_array_index(lists[l], i));
    }
    g_string_append(o, "],\n");
  }
  g_string_append(o, "  \"ReconMethodParameterValues\": [");
  for (guint i = 0; i < p.values->len; i++) {
    if (i) g_string_append(o, ", ");
    json_number(o, g_array_index(p.values, double, i));
  }
  g_string_append(o, "],\n");
  g_ptr_array_free(p.labels, TRUE);
  g_ptr_array_free(p.units, TRUE);
  g_array_free(p.values, TRUE);

  /* filters: CT's FDK ramp window, PET's post or inter-iteration filter */
  g_autofree char *ftype = NULL;
  double fsize = 0;
  if (ct && fdk) {
    ftype = g_strdup_printf("ramp (%s window)", tl_ct_filter_name(s->fdk_filter));
  } else if (s->filter.kind == TL_FILTER_GAUSS) {
    ftype = g_strdup(s->filter_every ? "Gaussian, between iterations" : "Gaussian");
    fsize = s->filter.fwhm_mm;
  } else if (s->filter.kind == TL_FILTER_METZ) {
    ftype = g_strdup_printf("Metz, power %u%s", s->filter.power,
                            s->filter_every ? ", between iterations" : "");
    fsize = s->filter.fwhm_mm;
  } else if (s->filter.kind == TL_FILTER_MEDIAN3 || s->filter.kind == TL_FILTER_MEDIAN5) {
    int w = s->filter.kind == TL_FILTER_MEDIAN3 ? 3 : 5;
    ftype = g_strdup_printf("median %dx%dx%d voxels%s", w, w, w,
                            s->filter_every ? ", between iterations" : "");
  } else {
    ftype = g_strdup("none");
  }
  member(o, "ReconFilterType", ftype);
  g_string_append(o, "  \"ReconFilterSize\": ");
  json_number(o, fsize);
  g_string_append(o, ",\n");

  g_autofree char *ac = NULL, *sc = NULL, *rc = NULL;
  if (s->attenuation) {
    g_autofree char *b = basename_of(s->attenuation);
    ac = g_strdup_printf("mu-map %s (mm^-1) in the system model", b);
  }
  if (s->scatter == TL_RUN_SCATTER_SSS)
    sc = g_strdup_printf("single scatter simulation, tail fitted, %u rounds%s", s->scatter_rounds,
                         s->scatter_restart ? ", the last restarted from the uniform image" : "");
  else if (s->scatter == TL_RUN_SCATTER_FILE) {
    g_autofree char *b = basename_of(s->scatter_file);
    sc = g_strdup_printf("scatter estimate from %s", b);
  }
  if (s->randoms == TL_RUN_RANDOMS_DELAYEDS)
    rc = g_strdup("DLYD (delayed coincidences, fan-sum variance reduction)");
  else if (s->randoms == TL_RUN_RANDOMS_SINGLES)
    rc = g_strdup("singles rates (2 tau S_i S_j T)");
  else if (s->randoms == TL_RUN_RANDOMS_FILE) {
    g_autofree char *b = basename_of(s->randoms_file);
    rc = g_strdup_printf("randoms estimate from %s", b);
  }
  member(o, "AttenuationCorrection", ac ? ac : "none");
  member(o, "ScatterCorrectionMethod", sc ? sc : "none");
  member(o, "RandomsCorrectionMethod", rc ? rc : "none");
  member(o, "Units", units && *units ? units : "arbitrary");
  member(o, "TomolabVersion", tl_run_version());
  member(o, "Device", device ? device : "unknown");

  /* every input with its bytes' SHA-256 */
  struct {
    const char *key, *path;
  } in[] = {{"data", s->data},           {"attenuation", s->attenuation},
            {"norm", s->norm},           {"randoms-file", s->randoms_file},
            {"scatter-file", s->scatter_file}, {"truth", s->truth},
            {"start", s->start},         {"resume", s->resume},
            {"kappa", s->kappa},         {"sensitivity", s->sensitivity}};
  g_string_append(o, "  \"TomolabInputs\": [");
  gboolean first = TRUE;
  GPtrArray *all = g_ptr_array_new_with_free_func(g_free);
  for (gsize i = 0; i < G_N_ELEMENTS(in); i++)
    if (in[i].path) {
      g_ptr_array_add(all, g_strdup(in[i].key));
      g_ptr_array_add(all, g_strdup(in[i].path));
    }
  for (guint i = 0; s->kernels && s->kernels[i]; i++) {
    const char *eq = strchr(s->kernels[i], '=');
    g_ptr_array_add(all, g_strdup_printf("kernel %.*s", (int)(eq - s->kernels[i]), s->kernels[i]));
    g_ptr_array_add(all, g_strdup(eq + 1));
  }
  for (guint i = 0; i + 1 < all->len; i += 2) {
    const char *path = g_ptr_array_index(all, i + 1);
    char *hash = tl_run_file_sha256(path, error);
    if (!hash) {
      g_ptr_array_free(all, TRUE);
      g_string_free(o, TRUE);
      return NULL;
    }
    g_string_append(o, first ? "\n    {" : ",\n    {");
    first = FALSE;
    g_string_append(o, "\"key\": ");
    json_string(o, g_ptr_array_index(all, i));
    g_string_append(o, ", \"path\": ");
    json_string(o, path);
    g_string_append_printf(o, ", \"sha256\": \"%s\"}", hash);
    g_free(hash);
  }
  g_ptr_array_free(all, TRUE);
  g_string_append(o, first ? "],\n" : "\n  ],\n");

  /* the run with its defaults resolved (algorithm, projector, counts): a rerun then does what
   * this run did even if a later version changes a default */
  g_autoptr(TlRunSpec) r = tl_run_spec_copy(s);
  char n1[16], n2[16];
  g_snprintf(n1, sizeof n1, "%u", tl_run_spec_iterations(s));
  g_snprintf(n2, sizeof n2, "%u", tl_run_spec_subsets(s));
  if (!tl_run_spec_set(r, "algorithm", tl_run_spec_algorithm(s), error) ||
      !tl_run_spec_set(r, "projector", tl_run_spec_projector(s), error) ||
      !tl_run_spec_set(r, "iterations", n1, error) || !tl_run_spec_set(r, "subsets", n2, error)) {
    g_string_free(o, TRUE);
    return NULL;
  }
  if (notes && notes[0]) { /* what the run found or decided (a searched centre) */
    g_string_append(o, "  \"TomolabNotes\": [");
    for (guint i = 0; notes[i]; i++) {
      if (i) g_string_append(o, ", ");
      json_string(o, notes[i]);
    }
    g_string_append(o, "],\n");
  }
  g_string_append(o, "  \"TomolabRun\": {");
  first = TRUE;
  for (const TlRunKeyInfo *k = tl_run_keys(); k->key; k++) {
    g_autofree char *v = tl_run_spec_get(r, k->key);
    g_string_append(o, first ? "\n    " : ",\n    ");
    first = FALSE;
    json_string(o, k->key);
    g_string_append(o, ": ");
    json_string(o, v);
  }
  g_string_append(o, "\n  }\n}\n");
  return g_string_free(o, FALSE);
}

gboolean tl_run_sidecar_write(const char *image_path, const TlRunSpec *s, const char *device,
                              const char *units, GError **error) {
  return tl_run_sidecar_write_notes(image_path, s, device, units, NULL, error);
}

gboolean tl_run_sidecar_write_notes(const char *image_path, const TlRunSpec *s,
                                    const char *device, const char *units,
                                    const char *const *notes, GError **error) {
  g_autofree char *json = tl_run_sidecar_json_notes(s, device, units, notes, error);
  g_autofree char *path = tl_run_sidecar_path(image_path);
  return json && tl_file_write_text(path, json, error);
}

TlRunSpec *tl_run_spec_with_centre(const TlRunSpec *s, double centre, double metric,
                                   char **note) {
  TlRunSpec *r = tl_run_spec_copy(s);
  char c[32];
  tl_format_double(c, centre);
  g_free(r->centre);
  r->centre = g_strdup(c);
  *note = g_strdup_printf("centre = %s was searched (the sharpest middle slice, sharpness %.6g; "
                          "the run asked for %s): a rerun from this sidecar uses the column "
                          "found", c, metric, s->centre ? s->centre : "the file's geometry, "
                          "which stores none");
  return r;
}

/* ---- reading the run part back: the text through core's JSON reader (tl-json.h), whose
 * errors name the file and byte; then the run object, key by key ---- */

static gboolean run_fail(GError **error, const char *source, const char *what) {
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %s", source, what);
  return FALSE;
}

gboolean tl_run_sidecar_read_run(TlRunSpec *s, const char *json, const char *source,
                                 GError **error) {
  /* a repeated member (TomolabRun itself or one of its keys) is refused by the reader */
  g_autoptr(TlJson) doc = tl_json_parse(json, strlen(json), source, error);
  if (!doc) return FALSE;
  if (doc->kind != TL_JSON_OBJECT) return run_fail(error, source, "expected a JSON object");
  const TlJson *run = tl_json_get(doc, "TomolabRun");
  if (!run) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: no \"TomolabRun\" object: not a Tomolab sidecar (a run file is key = value "
                "lines or a sidecar written by tomolab-cli recon)", source);
    return FALSE;
  }
  if (run->kind != TL_JSON_OBJECT) return run_fail(error, source, "TomolabRun: expected an object");
  /* in the file's order: a later key may depend on an earlier one (tl_run_spec_set) */
  for (guint i = 0; i < run->n; i++) {
    const char *key = run->keys[i], *value = tl_json_string(run->items[i]);
    if (!value) {
      g_autofree char *q = tl_text_quote(key, -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: TomolabRun: key '%s': every value is a string", source, q);
      return FALSE;
    }
    GError *e = NULL;
    if (!tl_run_spec_set(s, key, value, &e)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: TomolabRun: %s", source, e->message);
      g_error_free(e);
      return FALSE;
    }
  }
  return TRUE;
}
