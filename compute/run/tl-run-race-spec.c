/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The race description (tl-run-race-spec.h): one table of keys, read and written by offset. */
#include "tl-run-race-spec.h"
#include "run/tl-run-spec.h"
#include "recon/tl-race.h"
#include "image/tl-file.h"
#include "tl-error.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

typedef enum { K_PATH, K_TEXT, K_LIST, K_COUNT, K_NUMBER, K_BOOL } KeyType;

typedef struct {
  TlRaceKeyInfo info;
  KeyType type;
  gsize offset;
  double min, max; /* counts and numbers */
} Key;

#define OFF(f) offsetof(TlRaceSpec, f)
static const Key keys[] = {
    {{"data", "a file", "none", "PET list mode or a sinogram (the window: its dataset)"},
     K_PATH, OFF(data)},
    {{"algos", "ALGORITHM[:KEY=VALUE,...]; ...", "none",
      "the entrants, ';' between them (keys subsets, projector, prior, beta, gamma, epsilon, "
      "relaxation, tof, tof-nsigma, tor-fwhm, binned, seed, osem-epochs)"},
     K_LIST, OFF(algos)},
    {{"kappa", "none or an image on the grid", "none",
      "every prior's per-voxel weights (run key kappa)"}, K_PATH, OFF(kappa)},
    {{"seed", "0 to 4294967295", "1", "the stochastic entrants' seed (run key seed)"}, K_COUNT,
     OFF(seed), 0, 4294967295.0},
    {{"reference", "an image file", "none",
      "the converged reference: read, or written when reference-algo makes it"},
     K_PATH, OFF(reference)},
    {{"reference-algo", "ALGORITHM[:KEY=VALUE,...]", "none",
      "make the reference: this entrant run to the tolerance"}, K_TEXT, OFF(reference_algo)},
    {{"reference-updates", "1 to 1000000", "1000", "at most this many updates for the reference"},
     K_COUNT, OFF(reference_updates), 1, 1e6},
    {{"tolerance", ">= 0", "1e-07",
      "the reference stops when its objective changes by at most this fraction over a pass of "
      "subsets"}, K_NUMBER, OFF(tolerance), 0, INFINITY},
    {{"object", "none or a mask image", "none", "whole-object mask (default every voxel)"},
     K_PATH, OFF(object)},
    {{"background", "none or a mask image", "none",
      "background mask: the metrics are relative to the reference's mean there"},
     K_PATH, OFF(background)},
    {{"vois", "[NAME=]MASK; ...", "none", "volumes of interest, ';' between them"}, K_LIST,
     OFF(vois)},
    {{"nema", "true | false", "false",
      "the NEMA IEC phantom's spheres as VOIs and its background ROIs as the background"},
     K_BOOL, OFF(nema)},
    {{"updates", "1 to 1000000", "50", "updates (sub-iterations) per entrant"}, K_COUNT,
     OFF(updates), 1, 1e6},
    {{"until-target", "true | false", "false", "an entrant that reached the target stops"},
     K_BOOL, OFF(until_target)},
    {{"objective", "true | false", "false",
      "each entrant's objective after every update (untimed)"}, K_BOOL, OFF(objective)},
    {{"grid", "NXxNYxNZ@V[,VY,VZ]", "auto", "the reference's grid, else the dataset's"}, K_TEXT,
     OFF(grid)},
    {{"device", "an index or a name substring", "auto", "the device"}, K_TEXT, OFF(device)},
    {{"csv", "a file", "none", "every update of every entrant as CSV"}, K_PATH, OFF(csv)},
    {{"randoms", "none | delayeds", "none",
      "every entrant's randoms (run key randoms): delayeds = estimated from the data's delayed "
      "events, the additive term PETRIC's data carry"}, K_TEXT, OFF(randoms)},
};

static void init(TlRaceSpec *s) {
  *s = (TlRaceSpec){.seed = 1, .reference_updates = 1000, .tolerance = 1e-7, .updates = 50};
}

TlRaceSpec *tl_race_spec_new(void) {
  TlRaceSpec *s = g_new(TlRaceSpec, 1);
  init(s);
  return s;
}

void tl_race_spec_free(TlRaceSpec *s) {
  if (!s) return;
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    gpointer p = (char *)s + keys[i].offset;
    if (keys[i].type == K_LIST) g_strfreev(*(char ***)p);
    else if (keys[i].type == K_PATH || keys[i].type == K_TEXT) g_free(*(char **)p);
  }
  g_free(s);
}

TlRaceSpec *tl_race_spec_copy(const TlRaceSpec *s) {
  TlRaceSpec *c = g_memdup2(s, sizeof *s);
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    gpointer p = (char *)c + keys[i].offset;
    if (keys[i].type == K_LIST) *(char ***)p = g_strdupv(*(char ***)p);
    else if (keys[i].type == K_PATH || keys[i].type == K_TEXT) *(char **)p = g_strdup(*(char **)p);
  }
  return c;
}

const TlRaceKeyInfo *tl_race_keys(void) {
  static TlRaceKeyInfo table[G_N_ELEMENTS(keys) + 1];
  if (!table[0].key)
    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) table[i] = keys[i].info;
  return table;
}

static const Key *find(const char *key) {
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
    if (g_str_equal(keys[i].info.key, key)) return &keys[i];
  return NULL;
}

static gboolean bad(GError **error, const Key *k, const char *value) {
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race key '%s' = '%s': expected %s",
              k->info.key, value, k->info.values);
  return FALSE;
}

gboolean tl_race_spec_set(TlRaceSpec *s, const char *key, const char *value, GError **error) {
  const Key *k = key ? find(key) : NULL;
  if (!k) {
    g_autoptr(GString) known = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
      g_string_append_printf(known, "%s%s", i ? ", " : "", keys[i].info.key);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race key '%s': unknown (expected one of %s)",
                key ? key : "(null)", known->str);
    return FALSE;
  }
  g_autofree char *v = g_strstrip(g_strdup(value ? value : ""));
  gboolean dflt = !*v || g_str_equal(v, "auto") ||
                  ((k->type == K_PATH || k->type == K_TEXT || k->type == K_LIST) &&
                   g_str_equal(v, "none"));
  gpointer p = (char *)s + k->offset;
  TlRaceSpec d;
  init(&d);
  gconstpointer dp = (const char *)&d + k->offset;
  switch (k->type) {
  case K_PATH:
  case K_TEXT:
    g_free(*(char **)p);
    *(char **)p = dflt ? NULL : g_strdup(v);
    return TRUE;
  case K_LIST: {
    g_strfreev(*(char ***)p);
    *(char ***)p = NULL;
    if (dflt) return TRUE;
    g_auto(GStrv) parts = g_strsplit(v, ";", -1);
    GPtrArray *a = g_ptr_array_new();
    for (guint i = 0; parts[i]; i++) {
      g_strstrip(parts[i]);
      if (*parts[i]) g_ptr_array_add(a, g_strdup(parts[i]));
    }
    g_ptr_array_add(a, NULL);
    *(char ***)p = (char **)g_ptr_array_free(a, FALSE);
    return TRUE;
  }
  case K_COUNT: {
    if (dflt) {
      *(guint *)p = *(const guint *)dp;
      return TRUE;
    }
    char *end;
    guint64 n = g_ascii_strtoull(v, &end, 10);
    if (*end || !g_ascii_isdigit(v[0]) || n < k->min || n > k->max) return bad(error, k, v);
    *(guint *)p = (guint)n;
    return TRUE;
  }
  case K_NUMBER: {
    if (dflt) {
      *(double *)p = *(const double *)dp;
      return TRUE;
    }
    char *end;
    double x = g_ascii_strtod(v, &end);
    if (*end || end == v || !isfinite(x) || x < k->min || x > k->max) return bad(error, k, v);
    *(double *)p = x;
    return TRUE;
  }
  case K_BOOL:
    if (dflt || g_str_equal(v, "false") || g_str_equal(v, "0") || g_str_equal(v, "no"))
      *(gboolean *)p = dflt ? *(const gboolean *)dp : FALSE;
    else if (g_str_equal(v, "true") || g_str_equal(v, "1") || g_str_equal(v, "yes"))
      *(gboolean *)p = TRUE;
    else
      return bad(error, k, v);
    return TRUE;
  }
  return FALSE;
}

char *tl_race_spec_get(const TlRaceSpec *s, const char *key) {
  const Key *k = key ? find(key) : NULL;
  if (!k) return NULL;
  gconstpointer p = (const char *)s + k->offset;
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  switch (k->type) {
  case K_PATH:
  case K_TEXT: return g_strdup(*(char *const *)p ? *(char *const *)p : "none");
  case K_LIST: return *(char **const *)p ? g_strjoinv("; ", *(char **const *)p) : g_strdup("none");
  case K_COUNT: return g_strdup_printf("%u", *(const guint *)p);
  case K_NUMBER: return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.17g", *(const double *)p));
  case K_BOOL: return g_strdup(*(const gboolean *)p ? "true" : "false");
  }
  return NULL;
}

gboolean tl_race_spec_parse(TlRaceSpec *s, const char *text, const char *source, GError **error) {
  if (!tl_text_check(source, text, strlen(text), 1, error)) return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GHashTable) seen = tl_kv_seen_new();
  for (guint i = 0; lines[i]; i++) {
    char *key, *value;
    gboolean badline;
    if (!tl_kv_split(lines[i], &key, &value, &badline)) {
      if (badline) {
        g_autofree char *q = tl_text_quote(lines[i], -1, 60);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: '%s': expected 'key = value' (or a # comment)", source, i + 1, q);
        return FALSE;
      }
      continue;
    }
    if (!tl_kv_once(seen, source, key, i + 1, error)) return FALSE;
    GError *e = NULL;
    if (!tl_race_spec_set(s, key, value, &e)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: %s", source, i + 1, e->message);
      g_error_free(e);
      return FALSE;
    }
  }
  return TRUE;
}

TlRaceSpec *tl_race_spec_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  g_autoptr(GError) e = NULL;
  if (!g_file_get_contents(path, &text, NULL, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "race file %s: %s", path, e->message);
    return NULL;
  }
  g_autoptr(TlRaceSpec) s = tl_race_spec_new();
  return tl_race_spec_parse(s, text, path, error) ? g_steal_pointer(&s) : NULL;
}

char *tl_race_spec_to_text(const TlRaceSpec *s) {
  GString *t = g_string_new("# Tomolab race (docs/formats.md, \"Race files\"); tomolab-cli race "
                            "--race FILE, tomolab --race FILE\n");
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *v = tl_race_spec_get(s, keys[i].info.key);
    g_string_append_printf(t, "%s = %s\n", keys[i].info.key, v);
  }
  return g_string_free(t, FALSE);
}

gboolean tl_race_spec_validate(const TlRaceSpec *s, GError **error) {
  guint n = s->algos ? g_strv_length(s->algos) : 0;
  if (n < 1 || n > TL_RACE_MAX_ENTRANTS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race: %u entrants (algos): expected 1 to %d", n, TL_RACE_MAX_ENTRANTS);
    return FALSE;
  }
  if (!s->reference && !s->reference_algo) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race: no reference: expected reference = IMAGE, or reference-algo = SPEC to "
                "make it");
    return FALSE;
  }
  if (s->grid) {
    TlImageGrid g;
    if (!tl_run_parse_grid(s->grid, &g, error)) {
      g_prefix_error(error, "race key 'grid': ");
      return FALSE;
    }
  }
  return TRUE;
}
