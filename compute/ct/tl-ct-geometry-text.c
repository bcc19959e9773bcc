/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CT geometry text file (docs/ct.md "Geometry file"):
 *
 *   tomolab-ct-geometry = 1
 *   beam = cone                 # or parallel
 *   detector = 624 480          # columns (u), rows (v)
 *   views = 496
 *   description = ...           # optional free text
 *   view 0 = p00 p01 p02 p03 p10 p11 p12 p13 p20 p21 p22 p23
 *   ...
 *
 * Views may come in any order but each exactly once. Matrices are normalised on reading
 * (tl_ct_geometry_validate), so any scale a foreign tool writes is accepted. */
#include "tl-ct-geometry.h"
#include "image/tl-file.h"
#include <errno.h>
#include <string.h>

char *tl_ct_geometry_to_text(const TlCtGeometry *g) {
  GString *s = g_string_new("tomolab-ct-geometry = 1\n");
  g_string_append_printf(s, "beam = %s\n", g->beam == TL_CT_CONE ? "cone" : "parallel");
  g_string_append_printf(s, "detector = %u %u\n", g->det_u, g->det_v);
  g_string_append_printf(s, "views = %u\n", g->n_views);
  if (g->description) {
    /* one line, no comment character: keep it readable back */
    g_autofree char *d = g_strdup(g->description);
    g_strdelimit(d, "\n\r#", ' ');
    g_string_append_printf(s, "description = %s\n", d);
  }
  g_string_append(s, "# row-major 3x4 projection matrices: (u w, v w, w) = P (x, y, z, 1), mm -> "
                     "pixel indices\n");
  for (guint k = 0; k < g->n_views; k++) {
    g_string_append_printf(s, "view %u =", k);
    const double *P = tl_ct_geometry_matrix(g, k);
    for (int i = 0; i < 12; i++) {
      char buf[32];
      tl_format_double(buf, P[i]);
      g_string_append_printf(s, " %s", buf);
    }
    g_string_append_c(s, '\n');
  }
  return g_string_free(s, FALSE);
}

/* Parses "view K" keys; FALSE if the key is something else. */
static gboolean view_key(const char *key, guint64 *k) {
  if (strncmp(key, "view", 4) != 0 || (key[4] != ' ' && key[4] != '\t')) return FALSE;
  const char *p = key + 4;
  while (*p == ' ' || *p == '\t') p++;
  char *end = NULL;
  errno = 0;
  *k = g_ascii_strtoull(p, &end, 10);
  return end != p && !*end && !errno;
}

TlCtGeometry *tl_ct_geometry_from_text(const char *text, const char *source, GError **error) {
  /* binary bytes would reach the messages below, which quote keys and lines */
  if (!tl_text_check(source, text, strlen(text), 1, error)) return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  gboolean have_magic = FALSE, have_det = FALSE, have_views = FALSE, have_beam = FALSE;
  TlCtBeam beam = TL_CT_CONE;
  guint64 det[2] = {0, 0}, n_views = 0;
  g_autofree double *m = NULL;
  g_autofree guint8 *seen = NULL;
  g_autofree char *description = NULL;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (guint i = 0; lines[i]; i++) {
    guint line = i + 1;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(lines[i], &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value', found '%s'",
                  source, line, lines[i]);
      return NULL;
    }
    if (!tl_kv_once(keys_seen, source, key, line, error)) return NULL;
    guint64 k;
    if (strcmp(key, "tomolab-ct-geometry") == 0) {
      if (strcmp(value, "1") != 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: geometry format version '%s' is not supported (expected 1)", source,
                    line, value);
        return NULL;
      }
      have_magic = TRUE;
    } else if (strcmp(key, "beam") == 0) {
      if (strcmp(value, "cone") == 0) beam = TL_CT_CONE;
      else if (strcmp(value, "parallel") == 0) beam = TL_CT_PARALLEL;
      else {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'beam': value '%s' is not 'cone' or 'parallel'", source, line,
                    value);
        return NULL;
      }
      have_beam = TRUE;
    } else if (strcmp(key, "detector") == 0) {
      double d[2];
      if (!tl_kv_doubles(source, line, key, value, 2, d, error)) return NULL;
      /* range first: casting an out-of-range double to an integer is undefined */
      if (!(d[0] >= 0 && d[0] <= G_MAXUINT && d[1] >= 0 && d[1] <= G_MAXUINT) ||
          d[0] != (guint)d[0] || d[1] != (guint)d[1]) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'detector': '%s' is not two pixel counts", source, line, value);
        return NULL;
      }
      det[0] = (guint64)d[0], det[1] = (guint64)d[1];
      have_det = TRUE;
    } else if (strcmp(key, "views") == 0) {
      if (have_views) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: 'views' given twice", source, line);
        return NULL;
      }
      if (!tl_kv_uint(source, line, key, value, 1u << 24, &n_views, error)) return NULL;
      /* one line per view: a count the rest of the text cannot hold is refused before the
       * matrices are allocated */
      guint rest = g_strv_length(lines + i) - 1;
      if (n_views > rest) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'views': value %" G_GUINT64_FORMAT " but only %u lines follow "
                    "(expected one 'view K' line per view)", source, line, n_views, rest);
        return NULL;
      }
      have_views = TRUE;
      m = g_new0(double, 12 * n_views);
      seen = g_new0(guint8, n_views);
    } else if (strcmp(key, "description") == 0) {
      g_free(description);
      description = g_strdup(value);
    } else if (view_key(key, &k)) {
      if (!have_views || k >= n_views || seen[k]) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    have_views && k < n_views ? "%s:%u: view %" G_GUINT64_FORMAT " given twice"
                                              : "%s:%u: view %" G_GUINT64_FORMAT
                                                " is not below 'views' (which must come first)",
                    source, line, k);
        return NULL;
      }
      if (!tl_kv_doubles(source, line, key, value, 12, m + 12 * k, error)) return NULL;
      seen[k] = 1;
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", source, line, key);
      return NULL;
    }
  }
  const char *missing = !have_magic ? "tomolab-ct-geometry" : !have_beam ? "beam"
                        : !have_det ? "detector" : !have_views ? "views" : NULL;
  if (missing) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key '%s' is missing", source, missing);
    return NULL;
  }
  for (guint64 k = 0; k < n_views; k++)
    if (!seen[k]) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: view %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " has no matrix", source,
                  k, n_views);
      return NULL;
    }
  if (det[0] > G_MAXUINT || det[1] > G_MAXUINT) det[0] = det[1] = 0; /* rejected below */
  g_autoptr(GError) e = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_matrices(beam, (guint)n_views, (guint)det[0],
                                                (guint)det[1], m, &e);
  if (!g) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %s", source, e->message);
    return NULL;
  }
  g->description = g_steal_pointer(&description);
  return g;
}

TlCtGeometry *tl_ct_geometry_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  g_autoptr(GError) e = NULL;
  gsize len = 0;
  if (!tl_file_check_input(path, "CT geometry file", error)) return NULL;
  if (!g_file_get_contents(path, &text, &len, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s", e->message);
    return NULL;
  }
  if (!tl_text_check(path, text, len, 1, error)) return NULL;
  return tl_ct_geometry_from_text(text, path, error);
}

gboolean tl_ct_geometry_save(const TlCtGeometry *g, const char *path, GError **error) {
  g_autofree char *text = tl_ct_geometry_to_text(g);
  g_autofree char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  fputs(text, f);
  return tl_file_commit(f, &tmp, path, error);
}
