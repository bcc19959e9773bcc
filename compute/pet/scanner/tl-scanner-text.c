/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The scanner text description (docs/formats.md): "key = value" lines that either start
 * from a preset and override some of its keys, or give a regular ring / dual-head layout,
 * or list an explicit crystal table after "crystals = N". */
#include "image/tl-file.h"
#include "image/tl-format.h"
#include "tl-scanner.h"
#include <math.h>
#include <string.h>

enum { K_ANY, K_RING, K_DUAL };
static const struct {
  const char *key;
  int scope;
} keys[] = {
    {"preset", K_ANY},           {"name", K_ANY},              {"kind", K_ANY},
    {"rings", K_RING},           {"sides", K_RING},            {"crystals_per_side", K_RING},
    {"crystal_pitch_mm", K_RING}, {"radius_mm", K_RING},       {"ring_pitch_mm", K_RING},
    {"module_rings", K_RING},    {"module_gap_mm", K_RING},    {"phase_deg", K_RING},
    {"head_crystals", K_DUAL},   {"head_pitch_mm", K_DUAL},    {"head_distance_mm", K_DUAL},
    {"crystal_size_mm", K_ANY},  {"max_ring_difference", K_ANY}, {"tof_bins", K_ANY},
    {"tof_bin_mm", K_ANY},       {"tof_fwhm_ps", K_ANY},       {"crystals", K_ANY},
    {"crystals_per_ring", K_ANY}, {"energy_window_kev", K_ANY}, {"energy_resolution", K_ANY},
};

typedef struct {
  const char *value;
  guint line;
} Entry;

typedef struct {
  const char *src;
  GHashTable *entries; /* key -> Entry* */
} Parse;

static const Entry *get(Parse *p, const char *key) { return g_hash_table_lookup(p->entries, key); }

static gboolean get_uint(Parse *p, const char *key, guint max, guint *out, GError **error) {
  const Entry *e = get(p, key);
  guint64 v;
  if (!e) return TRUE;
  if (!tl_kv_uint(p->src, e->line, key, e->value, max, &v, error)) return FALSE;
  *out = (guint)v;
  return TRUE;
}

static gboolean get_doubles(Parse *p, const char *key, guint n, double *out, GError **error) {
  const Entry *e = get(p, key);
  return !e || tl_kv_doubles(p->src, e->line, key, e->value, n, out, error);
}

static gboolean parse_kind(Parse *p, const Entry *e, TlScannerKind *kind, GError **error) {
  if (g_strcmp0(e->value, "ring") == 0)
    *kind = TL_SCANNER_RING;
  else if (g_strcmp0(e->value, "dual-head") == 0)
    *kind = TL_SCANNER_DUAL_HEAD;
  else {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key 'kind': value '%s' (expected 'ring' or 'dual-head')", p->src,
                e->line, e->value);
    return FALSE;
  }
  return TRUE;
}

/* Reads rows "x y z nx ny nz group ring" after "crystals = N". */
static gboolean parse_table(Parse *p, char **lines, guint *i, guint n_lines, guint first_line,
                            guint n, TlCrystal *out, GError **error) {
  guint row = 0;
  while (row < n && *i < n_lines) {
    guint lineno = first_line + *i;
    char *l = lines[(*i)++];
    char *hash = strchr(l, '#');
    if (hash) *hash = '\0';
    g_strstrip(l);
    if (!*l) continue;
    double v[8];
    if (!tl_kv_doubles(p->src, lineno, "crystals", l, 8, v, error)) {
      g_prefix_error(error, "crystal row %u: ", row);
      return FALSE;
    }
    /* range first: casting an out-of-range double to an integer is undefined; a ring id
     * of at least n would make more rings than crystals (n_rings = max + 1 wraps at 2^32) */
    if (!(v[6] >= 0 && v[6] < n && v[7] >= 0 && v[7] < n) || v[6] != (guint32)v[6] ||
        v[7] != (guint32)v[7]) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: crystal row %u: group %g and ring %g (expected integers in [0, %u))",
                  p->src, lineno, row, v[6], v[7], n);
      return FALSE;
    }
    TlCrystal *k = &out[row++];
    for (int d = 0; d < 3; d++) {
      k->centre[d] = tl_float_from_double(v[d]);
      k->normal[d] = tl_float_from_double(v[3 + d]);
    }
    k->group = (guint32)v[6];
    k->ring = (guint32)v[7];
  }
  if (row < n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key 'crystals': the table ends after %u of %u rows", p->src, row, n);
    return FALSE;
  }
  return TRUE;
}

static TlScanner *from_table(Parse *p, TlCrystal *table, guint n, GError **error) {
  const Entry *e = get(p, "kind");
  TlScannerKind kind;
  if (!e || get(p, "preset")) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: a crystal table needs key 'kind' and no 'preset'", p->src);
    return NULL;
  }
  if (!parse_kind(p, e, &kind, error)) return NULL;
  for (gsize k = 0; k < G_N_ELEMENTS(keys); k++)
    if (keys[k].scope != K_ANY && (e = get(p, keys[k].key))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key '%s' describes a layout, but this file lists its crystals",
                  p->src, e->line, keys[k].key);
      return NULL;
    }
  g_autoptr(TlScanner) s = g_new0(TlScanner, 1);
  e = get(p, "name");
  s->name = g_strdup(e ? e->value : p->src);
  s->kind = kind;
  s->n_crystals = n;
  s->crystals = table;
  for (guint i = 0; i < n; i++) s->n_rings = MAX(s->n_rings, table[i].ring + 1);
  if (s->n_rings == 0) { /* n == 0; ring ids are < n, so n_rings cannot wrap */
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key 'crystals': value 0 (expected at least 1 crystal)", p->src);
    s->crystals = NULL;
    return NULL;
  }
  /* ring-major ids when every ring holds n / n_rings consecutive crystals */
  s->crystals_per_ring = n % s->n_rings == 0 ? n / s->n_rings : 0;
  for (guint i = 0; s->crystals_per_ring && i < n; i++)
    if (table[i].ring != i / s->crystals_per_ring) s->crystals_per_ring = 0;
  if (!get_uint(p, "crystals_per_ring", n, &s->crystals_per_ring, error)) {
    s->crystals = NULL;
    return NULL;
  }
  double size[3] = {0, 0, 0};
  if (!get(p, "crystal_size_mm")) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: a crystal table needs key 'crystal_size_mm'",
                p->src);
    s->crystals = NULL;
    return NULL;
  }
  if (!get_doubles(p, "crystal_size_mm", 3, size, error)) {
    s->crystals = NULL;
    return NULL;
  }
  for (int d = 0; d < 3; d++) s->crystal_size[d] = tl_float_from_double(size[d]);
  s->max_ring_difference = s->n_rings - 1;
  return g_steal_pointer(&s);
}

static TlScanner *from_layout(Parse *p, GError **error) {
  const Entry *pe = get(p, "preset"), *ke = get(p, "kind"), *ne = get(p, "name");
  g_autoptr(TlScanner) preset = NULL;
  TlScannerLayout L = {0};
  if (pe) {
    preset = tl_scanner_new_preset(pe->value, error);
    if (!preset) {
      g_prefix_error(error, "%s:%u: key 'preset': ", p->src, pe->line);
      return NULL;
    }
    L = *preset->layout;
  }
  if (ke) {
    TlScannerKind kind;
    if (!parse_kind(p, ke, &kind, error)) return NULL;
    if (preset && kind != L.kind) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key 'kind': value '%s' contradicts preset '%s'", p->src, ke->line,
                  ke->value, pe->value);
      return NULL;
    }
    L.kind = kind;
  } else if (!preset) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: expected key 'preset', or 'kind' with a layout, or 'crystals' with a table",
                p->src);
    return NULL;
  }
  int scope = L.kind == TL_SCANNER_RING ? K_RING : K_DUAL;
  for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
    const Entry *e = get(p, keys[k].key);
    if (e && keys[k].scope != K_ANY && keys[k].scope != scope) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s' does not apply to a %s scanner",
                  p->src, e->line, keys[k].key, scope == K_RING ? "ring" : "dual-head");
      return NULL;
    }
    /* without a preset every layout key of the kind is needed, except the optional ones */
    static const char *optional[] = {"module_rings", "module_gap_mm", "phase_deg",
                                     "ring_pitch_mm", NULL};
    if (!e && !preset && keys[k].scope == scope &&
        !g_strv_contains((const char *const *)optional, keys[k].key)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: missing key '%s' (needed for a %s scanner)",
                  p->src, keys[k].key, scope == K_RING ? "ring" : "dual-head");
      return NULL;
    }
  }
  double hc[2] = {L.head_crystals[0], L.head_crystals[1]};
  if (!get_uint(p, "rings", 1u << 20, &L.n_rings, error) ||
      !get_uint(p, "sides", 1u << 20, &L.n_sides, error) ||
      !get_uint(p, "crystals_per_side", 1u << 20, &L.crystals_per_side, error) ||
      !get_uint(p, "module_rings", 1u << 20, &L.module_rings, error) ||
      !get_doubles(p, "crystal_pitch_mm", 1, &L.crystal_pitch_mm, error) ||
      !get_doubles(p, "radius_mm", 1, &L.radius_mm, error) ||
      !get_doubles(p, "ring_pitch_mm", 1, &L.ring_pitch_mm, error) ||
      !get_doubles(p, "module_gap_mm", 1, &L.module_gap_mm, error) ||
      !get_doubles(p, "phase_deg", 1, &L.phase_deg, error) ||
      !get_doubles(p, "head_crystals", 2, hc, error) ||
      !get_doubles(p, "head_pitch_mm", 2, L.head_pitch_mm, error) ||
      !get_doubles(p, "head_distance_mm", 1, &L.head_distance_mm, error))
    return NULL;
  for (int i = 0; i < 2; i++) {
    if (hc[i] < 0 || hc[i] > (1u << 20) || hc[i] != (guint)hc[i]) {
      const Entry *e = get(p, "head_crystals");
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key 'head_crystals': value '%s' (expected two whole numbers)", p->src,
                  e ? e->line : 0, e ? e->value : "");
      return NULL;
    }
    L.head_crystals[i] = (guint)hc[i];
  }
  const char *name = ne ? ne->value : preset ? preset->name : p->src;
  TlScanner *s = tl_scanner_new_from_layout(name, &L, preset, error);
  if (!s) {
    g_prefix_error(error, "%s: ", p->src);
    return NULL;
  }
  if (!preset || get(p, "rings")) s->max_ring_difference = s->n_rings - 1;
  return s;
}

/* Keys every description may set on top of what the layout or table gave. */
static gboolean apply_common(Parse *p, TlScanner *s, GError **error) {
  const Entry *e = get(p, "max_ring_difference");
  if (e && g_strcmp0(e->value, "all") == 0)
    s->max_ring_difference = s->n_rings - 1;
  else if (!get_uint(p, "max_ring_difference", G_MAXUINT32, &s->max_ring_difference, error))
    return FALSE;
  double size[3] = {s->crystal_size[0], s->crystal_size[1], s->crystal_size[2]};
  double tof[2] = {s->tof_bin_mm, s->tof_fwhm_ps};
  if (!get_doubles(p, "crystal_size_mm", 3, size, error) ||
      !get_uint(p, "tof_bins", 100000, &s->tof_bins, error) ||
      !get_doubles(p, "tof_bin_mm", 1, &tof[0], error) ||
      !get_doubles(p, "tof_fwhm_ps", 1, &tof[1], error))
    return FALSE;
  for (int d = 0; d < 3; d++) s->crystal_size[d] = tl_float_from_double(size[d]);
  s->tof_bin_mm = tl_float_from_double(tof[0]);
  s->tof_fwhm_ps = tl_float_from_double(tof[1]);
  /* optional (older descriptions lack them): the preset's values, else the defaults */
  tl_scanner_energy_fill(s);
  double win[2] = {s->energy_window_kev[0], s->energy_window_kev[1]}, res = s->energy_resolution;
  if (!get_doubles(p, "energy_window_kev", 2, win, error) ||
      !get_doubles(p, "energy_resolution", 1, &res, error))
    return FALSE;
  /* checked here, before the floats exist: "0 0" with resolution 0 would read as "not given" */
  const Entry *we = get(p, "energy_window_kev"), *re = get(p, "energy_resolution");
  if (we && !(win[0] >= 0 && win[0] < win[1] && win[1] <= TL_SCANNER_MAX_ENERGY_KEV)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key 'energy_window_kev': value '%s' (expected low and high in keV, "
                "0 <= low < high <= %g)", p->src, we->line, we->value, TL_SCANNER_MAX_ENERGY_KEV);
    return FALSE;
  }
  if (re && !(res >= 0 && res <= 1)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key 'energy_resolution': value '%s' (expected the FWHM at 511 keV as a "
                "fraction in [0, 1], e.g. 0.094)", p->src, re->line, re->value);
    return FALSE;
  }
  s->energy_window_kev[0] = (float)win[0];
  s->energy_window_kev[1] = (float)win[1];
  s->energy_resolution = (float)res;
  /* stored as float: a value past FLT_MAX would become inf, which the printed form cannot
   * load back (found by tests/fuzz/fuzz-scanner: tof_fwhm_ps = 3.3e81 without TOF bins) */
  static const char *const fkeys[] = {"crystal_size_mm", "tof_bin_mm", "tof_fwhm_ps"};
  const float *fv[] = {s->crystal_size, &s->tof_bin_mm, &s->tof_fwhm_ps};
  const int fn[] = {3, 1, 1};
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < fn[k]; d++)
      if (!isfinite(fv[k][d])) {
        const Entry *fe = get(p, fkeys[k]);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key '%s': value %g is beyond the single-precision range "
                    "(|v| <= 3.4e38 expected)", p->src, fe ? fe->line : 0, fkeys[k],
                    k == 0 ? size[d] : tof[k - 1]);
        return FALSE;
      }
  if (!tl_scanner_validate(s, error)) {
    g_prefix_error(error, "%s: ", p->src);
    return FALSE;
  }
  return TRUE;
}

TlScanner *tl_scanner_from_text(const char *text, const char *source, guint first_line,
                                GError **error) {
  if (!tl_text_check(source ? source : "scanner", text, strlen(text), first_line, error))
    return NULL;
  Parse p = {.src = source ? source : "scanner",
             .entries = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free)};
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint n_lines = g_strv_length(lines);
  TlCrystal *table = NULL;
  guint n_table = 0;
  TlScanner *s = NULL;
  for (guint i = 0; i < n_lines;) {
    guint lineno = first_line + i;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(lines[i++], &key, &value, &bad)) {
      if (bad) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", p.src,
                    lineno);
        goto out;
      }
      continue;
    }
    gboolean known = FALSE;
    for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) known |= strcmp(keys[k].key, key) == 0;
    if (!known) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", p.src, lineno, key);
      goto out;
    }
    const Entry *old = g_hash_table_lookup(p.entries, key);
    if (old) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s' given again (first on line %u)",
                  p.src, lineno, key, old->line);
      goto out;
    }
    Entry *e = g_new(Entry, 1);
    *e = (Entry){value, lineno};
    g_hash_table_insert(p.entries, key, e);
    if (strcmp(key, "crystals") == 0) {
      guint64 n;
      if (!tl_kv_uint(p.src, lineno, key, value, TL_SCANNER_MAX_CRYSTALS, &n, error)) goto out;
      /* one row per line: the table gets no more room than the rest of the text can fill
       * (a 200-byte file must not ask for gigabytes); a shorter table fails in parse_table
       * with the rows it found */
      n_table = (guint)n;
      table = g_new0(TlCrystal, MAX(MIN(n_table, n_lines - i), 1));
      if (!parse_table(&p, lines, &i, n_lines, first_line, n_table, table, error)) goto out;
    }
  }
  s = table ? from_table(&p, table, n_table, error) : from_layout(&p, error);
  if (s && s->crystals == table) table = NULL; /* the scanner owns it now */
  if (s && !apply_common(&p, s, error)) g_clear_pointer(&s, tl_scanner_free);
out:
  g_free(table);
  g_hash_table_destroy(p.entries);
  return s;
}

TlScanner *tl_scanner_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!tl_file_check_input(path, "scanner description", error) ||
      !g_file_get_contents(path, &text, &len, error))
    return NULL;
  /* a NUL would end the text early and hide the rest of the file from the parser */
  if (!tl_text_check(path, text, len, 1, error)) return NULL;
  return tl_scanner_from_text(text, path, 1, error);
}

static void put_d(GString *s, const char *key, const double *v, int n) {
  g_string_append_printf(s, "%s =", key);
  for (int i = 0; i < n; i++) {
    char b[32];
    tl_format_double(b, v[i]);
    g_string_append_printf(s, " %s", b);
  }
  g_string_append_c(s, '\n');
}

static void put_f(GString *s, const char *key, const float *v, int n) {
  g_string_append_printf(s, "%s =", key);
  for (int i = 0; i < n; i++) {
    char b[32];
    tl_format_float(b, v[i]);
    g_string_append_printf(s, " %s", b);
  }
  g_string_append_c(s, '\n');
}

/* The layout form when the table still is what the layout builds, else the table. */
char *tl_scanner_to_text(const TlScanner *s) {
  GString *t = g_string_new("# Tomolab scanner description (docs/formats.md)\n");
  g_autofree char *name = g_strdup(s->name);
  g_strdelimit(name, "#\r\n", '_'); /* one line, no comment */
  g_string_append_printf(t, "name = %s\n", name);
  g_string_append_printf(t, "kind = %s\n", s->kind == TL_SCANNER_RING ? "ring" : "dual-head");
  g_autoptr(TlScanner) rebuilt =
      s->layout ? tl_scanner_new_from_layout(s->name, s->layout, s, NULL) : NULL;
  gboolean layout = rebuilt && rebuilt->n_crystals == s->n_crystals &&
                    memcmp(rebuilt->crystals, s->crystals, sizeof(TlCrystal) * s->n_crystals) == 0;
  if (layout && s->kind == TL_SCANNER_RING) {
    const TlScannerLayout *l = s->layout;
    g_string_append_printf(t, "rings = %u\nsides = %u\ncrystals_per_side = %u\n", l->n_rings,
                           l->n_sides, l->crystals_per_side);
    put_d(t, "crystal_pitch_mm", &l->crystal_pitch_mm, 1);
    put_d(t, "radius_mm", &l->radius_mm, 1);
    put_d(t, "ring_pitch_mm", &l->ring_pitch_mm, 1);
    g_string_append_printf(t, "module_rings = %u\n", l->module_rings);
    put_d(t, "module_gap_mm", &l->module_gap_mm, 1);
    put_d(t, "phase_deg", &l->phase_deg, 1);
  } else if (layout) {
    const TlScannerLayout *l = s->layout;
    g_string_append_printf(t, "head_crystals = %u %u\n", l->head_crystals[0], l->head_crystals[1]);
    put_d(t, "head_pitch_mm", l->head_pitch_mm, 2);
    put_d(t, "head_distance_mm", &l->head_distance_mm, 1);
  }
  put_f(t, "crystal_size_mm", s->crystal_size, 3);
  g_string_append_printf(t, "max_ring_difference = %u\ntof_bins = %u\n", s->max_ring_difference,
                         s->tof_bins);
  put_f(t, "tof_bin_mm", &s->tof_bin_mm, 1);
  put_f(t, "tof_fwhm_ps", &s->tof_fwhm_ps, 1);
  double ew[2], er; /* the values in effect: a table built without them gets the defaults */
  tl_scanner_energy(s, ew, &er);
  const float w[2] = {(float)ew[0], (float)ew[1]}, r = (float)er;
  put_f(t, "energy_window_kev", w, 2);
  put_f(t, "energy_resolution", &r, 1);
  if (!layout) {
    g_string_append_printf(t, "crystals_per_ring = %u\ncrystals = %u\n", s->crystals_per_ring,
                           s->n_crystals);
    g_string_append(t, "# x y z (mm)  nx ny nz (inward normal)  group ring\n");
    for (guint i = 0; i < s->n_crystals; i++) {
      const TlCrystal *k = &s->crystals[i];
      char b[6][32];
      for (int d = 0; d < 3; d++) {
        tl_format_float(b[d], k->centre[d]);
        tl_format_float(b[3 + d], k->normal[d]);
      }
      g_string_append_printf(t, "%s %s %s %s %s %s %u %u\n", b[0], b[1], b[2], b[3], b[4], b[5],
                             k->group, k->ring);
    }
  }
  return g_string_free(t, FALSE);
}

gboolean tl_scanner_save(const TlScanner *s, const char *path, GError **error) {
  g_autofree char *text = tl_scanner_to_text(s);
  return tl_file_write_text(path, text, error);
}

/* --- the format table's entry (compute/tl-formats.c) --- */

/* No magic: a text file whose first key is one only scanner descriptions start with. */
static guint scanner_probe(const char *path, const guint8 *head, gsize n) {
  for (gsize i = 0; i < n; i++)
    if (head[i] == 0 || head[i] > 0x7e || (head[i] < 0x20 && !g_ascii_isspace(head[i])))
      return 0; /* not plain ASCII text */
  g_autofree char *text = g_strndup((const char *)head, n);
  g_auto(GStrv) lines = g_strsplit(text, "\n", 64);
  for (guint i = 0; lines[i]; i++) {
    char *l = g_strstrip(lines[i]);
    if (!l[0] || l[0] == '#') continue;
    gboolean scanner_key = g_str_has_prefix(l, "preset") || g_str_has_prefix(l, "kind") ||
                           g_str_has_prefix(l, "name");
    if (scanner_key && strchr(l, '=')) return TL_FORMAT_LIKELY;
    break;
  }
  return tl_format_path_has_extension(path, ".scanner") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer scanner_load(const char *path, GError **error) {
  return tl_scanner_load(path, error);
}

static gboolean scanner_save(gconstpointer data, const char *path, GError **error) {
  return tl_scanner_save(data, path, error);
}

const TlFormatClass tl_format_scanner = {
    .name = "scanner",
    .summary = "Tomolab scanner description (key = value text; preset, layout or crystal table)",
    .kind = TL_DATA_SCANNER,
    .extensions = ".scanner .txt",
    .probe = scanner_probe,
    .load = scanner_load,
    .save = scanner_save,
};
