/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The component-based normalisation (tl-norm.h): the model, its device tables, the `.tln`
 * file (the estimate from a scan is tl-norm-estimate.c, above the projectors). */
#define _POSIX_C_SOURCE 200809L /* getline, ftello */
#include "tl-norm.h"
#include "tl-norm-private.h"
#include "image/tl-file.h"
#include "core/tl_constants.glsl" /* the device table's head, which pet_norm.glsl reads */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

#define MAGIC "TOMOLAB-NORM 1"

/* ------------------------------------------------------------------------------------------ */
/* The model */

/* Crystals per group along ring 0 when every group there is one run of the same length that
 * divides C (polygon sides, mMR blocks); else C (no block symmetry: u = t). */
static guint block_size(const TlScanner *s, guint C) {
  guint B = 1;
  while (B < C && s->crystals[B].group == s->crystals[0].group) B++;
  if (C % B != 0) return C;
  for (guint t = 0; t < C; t++)
    if (s->crystals[t].group != s->crystals[t - t % B].group ||
        (t % B == 0 && t > 0 && s->crystals[t].group == s->crystals[t - 1].group))
      return C;
  return B;
}

void tl_norm_layout(const TlScanner *s, gboolean axial, gboolean transaxial, guint *rings,
                    guint *crystals_per_ring, guint *block, guint *radial) {
  *rings = axial && s->n_rings > 1 && s->n_rings <= TL_NORM_MAX_RINGS ? s->n_rings : 1;
  guint C = s->crystals_per_ring;
  gboolean ring_major = s->kind == TL_SCANNER_RING && C >= 2 &&
                        (guint64)C * s->n_rings == s->n_crystals;
  for (guint i = 0; ring_major && i < s->n_crystals; i++)
    ring_major = s->crystals[i].ring == i / C;
  *crystals_per_ring = 0, *block = 1, *radial = 1;
  if (!transaxial || !ring_major) return;
  guint B = block_size(s, C), D = C / 2 + 1;
  if ((guint64)B * D > TL_NORM_MAX_TRANSAXIAL) return;
  *crystals_per_ring = C, *block = B, *radial = D;
}

TlNorm *tl_norm_alloc(const TlScanner *s, guint R, guint C, guint B, guint D) {
  TlNorm *n = g_new0(TlNorm, 1);
  n->scanner = tl_scanner_copy(s);
  n->scanner_sha256 = tl_norm_scanner_key(s);
  n->n_crystals = s->n_crystals;
  n->rings = R, n->crystals_per_ring = C, n->block = B, n->radial = D;
  n->efficiency = g_new(float, s->n_crystals);
  n->axial = g_new(float, (gsize)R * R);
  n->transaxial = g_new(float, (gsize)D * B);
  n->ring = g_new0(guint32, s->n_crystals);
  if (R > 1)
    for (guint i = 0; i < s->n_crystals; i++) n->ring[i] = s->crystals[i].ring;
  n->description = g_strdup("");
  return n;
}

TlNorm *tl_norm_new(const TlScanner *s, gboolean axial, gboolean transaxial, GError **error) {
  if (!s || !tl_scanner_validate(s, error)) {
    if (!s) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation: no scanner");
    return NULL;
  }
  guint R, C, B, D;
  tl_norm_layout(s, axial, transaxial, &R, &C, &B, &D);
  TlNorm *n = tl_norm_alloc(s, R, C, B, D);
  for (guint i = 0; i < n->n_crystals; i++) n->efficiency[i] = 1.0f;
  for (guint i = 0; i < R * R; i++) n->axial[i] = 1.0f;
  for (guint i = 0; i < D * B; i++) n->transaxial[i] = 1.0f;
  if (!tl_norm_update(n, NULL, error)) g_clear_pointer(&n, tl_norm_free);
  return n;
}

TlNorm *tl_norm_copy(const TlNorm *o) {
  TlNorm *n = tl_norm_alloc(o->scanner, o->rings, o->crystals_per_ring, o->block, o->radial);
  memcpy(n->efficiency, o->efficiency, sizeof(float) * o->n_crystals);
  memcpy(n->axial, o->axial, sizeof(float) * o->rings * o->rings);
  memcpy(n->transaxial, o->transaxial, sizeof(float) * o->radial * o->block);
  g_free(n->description);
  n->description = g_strdup(o->description);
  n->sha256 = g_strdup(o->sha256);
  return n;
}

void tl_norm_free(TlNorm *n) {
  if (!n) return;
  tl_scanner_free(n->scanner);
  g_free(n->scanner_sha256);
  g_free(n->efficiency);
  g_free(n->axial);
  g_free(n->transaxial);
  g_free(n->ring);
  g_free(n->description);
  g_free(n->sha256);
  g_free(n);
}

static void checksum_le_floats(GChecksum *c, const float *v, gsize n) {
  for (gsize i = 0; i < n; i++) {
    guint32 u;
    memcpy(&u, &v[i], 4);
    u = GUINT32_TO_LE(u);
    g_checksum_update(c, (const guchar *)&u, 4);
  }
}

/* One factor: finite and in [0, TL_NORM_MAX_FACTOR]. */
static gboolean check_factor(float v, const char *src, const char *what, GError **error) {
  if (isfinite(v) && v >= 0.0f && v <= TL_NORM_MAX_FACTOR) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %s = %g: expected a finite factor in [0, %g]",
              src, what, (double)v, TL_NORM_MAX_FACTOR);
  return FALSE;
}

gboolean tl_norm_update(TlNorm *n, const char *source, GError **error) {
  const char *src = source ? source : "normalisation";
  guint R = n->rings, B = n->block;
  float emax = 0.0f;
  for (guint i = 0; i < n->n_crystals; i++) {
    g_autofree char *what = g_strdup_printf("efficiency of crystal %u", i);
    if (!check_factor(n->efficiency[i], src, what, error)) return FALSE;
    emax = MAX(emax, n->efficiency[i]);
  }
  if (!(emax > 0.0f)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: every crystal efficiency is 0 (expected "
                "some crystal > 0)", src);
    return FALSE;
  }
  for (guint r = 0; r < R; r++)
    for (guint s = 0; s < R; s++) {
      g_autofree char *what = g_strdup_printf("axial factor of rings (%u, %u)", r, s);
      if (!check_factor(n->axial[r * R + s], src, what, error)) return FALSE;
      if (n->axial[r * R + s] != n->axial[s * R + r]) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: axial factor of rings (%u, %u) = %g "
                    "but of (%u, %u) = %g: expected a symmetric table", src, r, s,
                    (double)n->axial[r * R + s], s, r, (double)n->axial[s * R + r]);
        return FALSE;
      }
    }
  for (guint c = 0; c < n->radial * B; c++) {
    g_autofree char *what = g_strdup_printf("transaxial factor of class (d %u, u %u)", c / B, c % B);
    if (!check_factor(n->transaxial[c], src, what, error)) return FALSE;
  }
  GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
  g_autofree char *head = g_strdup_printf("tomolab-norm 1\n%s\n%u %u %u %u %u\n", n->scanner_sha256,
                                          n->n_crystals, R, n->crystals_per_ring, B, n->radial);
  g_checksum_update(c, (const guchar *)head, -1);
  checksum_le_floats(c, n->efficiency, n->n_crystals);
  checksum_le_floats(c, n->axial, (gsize)R * R);
  checksum_le_floats(c, n->transaxial, (gsize)n->radial * B);
  g_free(n->sha256);
  n->sha256 = g_strdup(g_checksum_get_string(c));
  g_checksum_free(c);
  return TRUE;
}

void tl_norm_records(const TlNorm *n, const guint32 *rec, guint64 count, float *out) {
  for (guint64 j = 0; j < count; j++) out[j] = tl_norm_pair(n, rec[3 * j], rec[3 * j + 1]);
}

char *tl_norm_scanner_key(const TlScanner *s) {
  GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
  g_autofree char *head = g_strdup_printf("tomolab-norm-scanner 1\n%u %u %u %u\n", s->n_crystals,
                                          s->n_rings, s->crystals_per_ring,
                                          s->max_ring_difference);
  g_checksum_update(c, (const guchar *)head, -1);
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    checksum_le_floats(c, k->centre, 3);
    checksum_le_floats(c, k->normal, 3);
    guint32 w[2] = {GUINT32_TO_LE(k->group), GUINT32_TO_LE(k->ring)};
    g_checksum_update(c, (const guchar *)w, sizeof w);
  }
  char *out = g_strdup(g_checksum_get_string(c));
  g_checksum_free(c);
  return out;
}

gboolean tl_norm_check_scanner(const TlNorm *n, const TlScanner *s, const char *source,
                               GError **error) {
  g_autofree char *key = tl_norm_scanner_key(s);
  if (strcmp(key, n->scanner_sha256) == 0) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s: a normalisation for scanner '%s' (%u crystals, key %.12s...), but the data are "
              "from scanner '%s' (%u crystals, key %.12s...): expected a normalisation made for "
              "the data's scanner", source ? source : "normalisation",
              n->scanner->name ? n->scanner->name : "?", n->n_crystals, n->scanner_sha256,
              s->name ? s->name : "?", s->n_crystals, key);
  return FALSE;
}

gboolean tl_norm_invariant(const TlNorm *n, const guint32 *perm) {
  guint32 N = n->n_crystals;
  /* conservative: efficiencies must map onto equal efficiencies (the degeneracies are fixed by
   * the estimate, so an invariant n has invariant eps) */
  for (guint32 i = 0; i < N; i++)
    if (n->efficiency[perm[i]] != n->efficiency[i]) return FALSE;
  const TlCrystal *c = n->scanner->crystals;
  guint32 mrd = n->scanner->max_ring_difference;
  guint64 pairs = tl_pair_count(N);
  for (guint64 p0 = 0; p0 < pairs; p0 += N) {
    guint32 d = (guint32)(p0 / N) + 1, m = (guint32)MIN((guint64)N, pairs - p0);
    for (guint32 a = 0; a < m; a++) {
      guint32 b = a + d >= N ? a + d - N : a + d;
      if (tl_norm_pair_ok(c, mrd, a, b) && tl_norm_pair(n, perm[a], perm[b]) != tl_norm_pair(n, a, b))
        return FALSE;
    }
  }
  return TRUE;
}

TlArray *tl_norm_upload(const TlNorm *n, TlContext *ctx, GError **error) {
  guint R = n->rings, off_e = TL_PET_NORM_HEAD_WORDS, off_a = off_e + n->n_crystals,
        off_t = off_a + R * R;
  guint64 words = (guint64)off_t + (guint64)n->radial * n->block;
  g_autofree guint32 *w = g_new(guint32, words);
  w[TL_PET_NORM_CRYSTALS] = n->n_crystals;
  w[TL_PET_NORM_RINGS] = R;
  w[TL_PET_NORM_PER_RING] = n->crystals_per_ring;
  w[TL_PET_NORM_BLOCK] = n->block;
  w[TL_PET_NORM_RADIAL] = n->radial;
  w[TL_PET_NORM_OFF_EFF] = off_e;
  w[TL_PET_NORM_OFF_AXIAL] = off_a;
  w[TL_PET_NORM_OFF_TRANS] = off_t;
  memcpy(w + off_e, n->efficiency, sizeof(float) * n->n_crystals);
  memcpy(w + off_a, n->axial, sizeof(float) * R * R);
  memcpy(w + off_t, n->transaxial, sizeof(float) * n->radial * n->block);
  g_autoptr(TlArray) a = tl_array_new(ctx, words, sizeof(guint32), error);
  if (!a || !tl_array_upload(a, w, error)) return NULL;
  return g_steal_pointer(&a);
}

/* ------------------------------------------------------------------------------------------ */
/* The file */

gboolean tl_norm_save(const TlNorm *n, const char *path, GError **error) {
  if (!tl_scanner_validate(n->scanner, error)) return FALSE;
  g_autofree char *scanner = tl_scanner_to_text(n->scanner);
  g_autofree char *desc = g_strdup(n->description ? n->description : "");
  g_strdelimit(desc, "\r\n", ' ');
  guint R = n->rings;
  /* the axial table's upper triangle r <= s, row by row */
  g_autofree float *tri = g_new(float, MAX((gsize)R * (R + 1) / 2, 1));
  gsize k = 0;
  for (guint r = 0; r < R; r++)
    for (guint s = r; s < R; s++) tri[k++] = n->axial[r * R + s];
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  fprintf(f, MAGIC "\ncrystals = %u\nrings = %u\ncrystals_per_ring = %u\nblock = %u\n"
             "radial = %u\nbyte_order = little-endian\nscanner_sha256 = %s\ndescription = %s\n"
             "begin_scanner\n%send_scanner\nend_header\n", n->n_crystals, R,
          n->crystals_per_ring, n->block, n->radial, n->scanner_sha256, desc, scanner);
  const float *blocks[3] = {n->efficiency, tri, n->transaxial};
  gsize counts[3] = {n->n_crystals, k, (gsize)n->radial * n->block};
  gboolean ok = TRUE;
  for (int b = 0; b < 3 && ok; b++)
    for (gsize i = 0; i < counts[b] && ok; i++) {
      guint32 u;
      memcpy(&u, &blocks[b][i], 4);
      u = GUINT32_TO_LE(u);
      ok = fwrite(&u, 4, 1, f) == 1;
    }
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

typedef struct {
  guint64 v[5]; /* crystals, rings, crystals_per_ring, block, radial */
  char *scanner_sha256, *description;
  GString *scanner;
  guint scanner_line;
  guint seen;
} Header;

static const char *const header_keys[5] = {"crystals", "rings", "crystals_per_ring", "block",
                                           "radial"};

static gboolean read_header(FILE *f, const char *path, Header *h, GError **error) {
  char *line = NULL;
  size_t cap = 0;
  guint lineno = 0;
  gboolean in_scanner = FALSE, ok = FALSE;
  /* bounds before anything is allocated: the scanner's own limit, and the class limits */
  const guint64 max[5] = {TL_SCANNER_MAX_CRYSTALS, TL_NORM_MAX_RINGS, TL_SCANNER_MAX_CRYSTALS,
                          TL_SCANNER_MAX_CRYSTALS, TL_SCANNER_MAX_CRYSTALS};
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (;;) {
    ssize_t len = getline(&line, &cap, f);
    lineno++;
    if (len < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: the header ends before 'end_header' (line %u)", path, lineno);
      goto out;
    }
    if (lineno == 1) {
      g_strchomp(line);
      if (strcmp(line, MAGIC) != 0) {
        g_autofree char *q = tl_text_quote(line, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: not a Tomolab normalisation file "
                    "(first line '%s', expected '" MAGIC "')", path, q);
        goto out;
      }
      continue;
    }
    if (!tl_text_check(path, line, (gsize)len, lineno, error)) goto out;
    if (in_scanner) {
      if (strcmp(g_strchomp(line), "end_scanner") == 0) in_scanner = FALSE;
      else g_string_append_printf(h->scanner, "%s\n", line);
      continue;
    }
    g_strchomp(line);
    if (g_str_has_prefix(line, "description =")) {
      if (!tl_kv_once(keys_seen, path, "description", lineno, error)) goto out;
      /* free text on one line: a lone CR becomes a space, as saving writes it (fuzz-norm) */
      g_free(h->description);
      h->description = g_strdup(g_strstrip(g_strdelimit(line + strlen("description ="), "\r", ' ')));
      continue;
    }
    if (strcmp(line, "begin_scanner") == 0) {
      if (h->seen & 32) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: a second scanner block", path,
                    lineno);
        goto out;
      }
      in_scanner = TRUE;
      h->scanner_line = lineno + 1;
      h->seen |= 32;
      continue;
    }
    if (strcmp(line, "end_header") == 0) break;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(line, &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", path, lineno);
      goto out;
    }
    if (!tl_kv_once(keys_seen, path, key, lineno, error)) goto out;
    int k = -1;
    for (int i = 0; i < 5; i++)
      if (strcmp(key, header_keys[i]) == 0) k = i;
    if (k >= 0) {
      if (!tl_kv_uint(path, lineno, key, value, max[k], &h->v[k], error)) goto out;
      h->seen |= 1u << k;
    } else if (strcmp(key, "byte_order") == 0) {
      if (strcmp(value, "little-endian") != 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'byte_order': value '%s' (expected 'little-endian')", path,
                    lineno, value);
        goto out;
      }
      h->seen |= 64;
    } else if (strcmp(key, "scanner_sha256") == 0) {
      if (strlen(value) != 64 || strspn(value, "0123456789abcdef") != 64) {
        g_autofree char *q = tl_text_quote(value, -1, 80);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key 'scanner_sha256': value '%s' "
                    "(expected 64 lower-case hex digits)", path, lineno, q);
        goto out;
      }
      g_free(h->scanner_sha256);
      h->scanner_sha256 = g_strdup(value);
      h->seen |= 128;
    } else {
      g_autofree char *q = tl_text_quote(key, -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", path, lineno, q);
      goto out;
    }
  }
  static const char *const required[8] = {"crystals", "rings", "crystals_per_ring", "block",
                                          "radial", "begin_scanner", "byte_order",
                                          "scanner_sha256"};
  for (int i = 0; i < 8; i++)
    if (!(h->seen & (1u << i))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks '%s'", path,
                  required[i]);
      goto out;
    }
  ok = TRUE;
out:
  free(line);
  return ok;
}

/* The header's class counts against those of its scanner: each either the scanner's (the
 * component on) or the "off" value. */
static gboolean check_layout(const char *path, const Header *h, const TlScanner *s, guint *R,
                             guint *C, guint *B, guint *D, GError **error) {
  if (h->v[0] != s->n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: wrong size: the header says crystals = %"
                G_GUINT64_FORMAT " but its scanner '%s' has %u crystals", path, h->v[0], s->name,
                s->n_crystals);
    return FALSE;
  }
  guint r, c, b, d;
  tl_norm_layout(s, TRUE, TRUE, &r, &c, &b, &d);
  if (h->v[1] != r && h->v[1] != 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: wrong size: rings = %" G_GUINT64_FORMAT
                ", expected %u (the scanner's rings) or 1 (no axial factors)", path, h->v[1], r);
    return FALSE;
  }
  gboolean tr_on = h->v[2] != 0;
  guint64 want[3] = {tr_on ? c : 0, tr_on ? b : 1, tr_on ? d : 1};
  for (int i = 0; i < 3; i++)
    if (h->v[2 + i] != want[i] || (tr_on && c == 0)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: wrong size: %s = %" G_GUINT64_FORMAT
                  ", expected %" G_GUINT64_FORMAT " for scanner '%s' (%u crystals per ring, "
                  "blocks of %u, %u radial classes; crystals_per_ring = 0, block = 1, radial = 1 "
                  "without transaxial factors)", path, header_keys[2 + i], h->v[2 + i],
                  c == 0 && i == 0 ? 0 : want[i], s->name, c, b, d);
      return FALSE;
    }
  *R = (guint)h->v[1], *C = (guint)h->v[2], *B = (guint)h->v[3], *D = (guint)h->v[4];
  return TRUE;
}

static gboolean read_floats(FILE *f, const char *path, float *v, gsize n, GError **error) {
  if (n && fread(v, 4, n, f) != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in the factors", path);
    return FALSE;
  }
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    for (gsize i = 0; i < n; i++) {
      guint32 u;
      memcpy(&u, &v[i], 4);
      u = GUINT32_FROM_LE(u);
      memcpy(&v[i], &u, 4);
    }
  return TRUE;
}

TlNorm *tl_norm_load(const char *path, const TlScanner *expected, GError **error) {
  if (!tl_file_check_input(path, "normalisation file", error)) return NULL;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", path, g_strerror(e));
    return NULL;
  }
  Header h = {.scanner = g_string_new(NULL)};
  TlNorm *n = NULL;
  g_autoptr(TlScanner) sc = NULL;
  g_autofree char *src = g_strdup_printf("%s (scanner)", path);
  g_autofree char *key = NULL;
  g_autofree float *tri = NULL;
  guint R, C, B, D;
  if (!read_header(f, path, &h, error) ||
      !(sc = tl_scanner_from_text(h.scanner->str, src, h.scanner_line, error)) ||
      !check_layout(path, &h, sc, &R, &C, &B, &D, error))
    goto out;
  key = tl_norm_scanner_key(sc);
  if (strcmp(key, h.scanner_sha256) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: scanner_sha256 = %s, but the scanner "
                "block's crystal table gives %s (the two do not belong together)", path,
                h.scanner_sha256, key);
    goto out;
  }
  if (expected) {
    /* a file for another scanner: say so before anything else about its factors */
    g_autofree char *ek = tl_norm_scanner_key(expected);
    if (strcmp(ek, key) != 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "%s: a normalisation for scanner '%s' (%u crystals, key %.12s...), but the "
                  "data are from scanner '%s' (%u crystals, key %.12s...): expected a "
                  "normalisation made for the data's scanner", path, sc->name, sc->n_crystals,
                  key, expected->name ? expected->name : "?", expected->n_crystals, ek);
      goto out;
    }
  }
  struct stat st;
  off_t start = ftello(f);
  if (fstat(fileno(f), &st) != 0 || start < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", path);
    goto out;
  }
  guint64 ntri = (guint64)R * (R + 1) / 2, ntr = (guint64)D * B;
  guint64 need = 4 * ((guint64)sc->n_crystals + ntri + ntr),
          have = (guint64)st.st_size - (guint64)start;
  if (have != need) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: %s: the header announces %u efficiencies, %" G_GUINT64_FORMAT " axial and %"
                G_GUINT64_FORMAT " transaxial factors (%" G_GUINT64_FORMAT " bytes) but %"
                G_GUINT64_FORMAT " bytes follow it", path, have < need ? "truncated" : "oversized",
                sc->n_crystals, ntri, ntr, need, have);
    goto out;
  }
  n = tl_norm_alloc(sc, R, C, B, D);
  tri = g_new(float, MAX(ntri, 1));
  if (!read_floats(f, path, n->efficiency, sc->n_crystals, error) ||
      !read_floats(f, path, tri, ntri, error) || !read_floats(f, path, n->transaxial, ntr, error)) {
    g_clear_pointer(&n, tl_norm_free);
    goto out;
  }
  gsize k = 0;
  for (guint r = 0; r < R; r++)
    for (guint s = r; s < R; s++) n->axial[r * R + s] = n->axial[s * R + r] = tri[k++];
  g_free(n->description);
  n->description = g_strdup(h.description ? h.description : "");
  if (!tl_norm_update(n, path, error)) g_clear_pointer(&n, tl_norm_free);
out:
  fclose(f);
  g_string_free(h.scanner, TRUE);
  g_free(h.scanner_sha256);
  g_free(h.description);
  return n;
}

static void range(const float *v, gsize n, double *mn, double *mean, double *mx) {
  double a = G_MAXDOUBLE, b = -G_MAXDOUBLE, s = 0;
  for (gsize i = 0; i < n; i++) a = MIN(a, v[i]), b = MAX(b, v[i]), s += v[i];
  *mn = a, *mx = b, *mean = n ? s / n : 0;
}

void tl_norm_describe(const TlNorm *n, GString *out) {
  double a, m, b;
  g_string_append_printf(out, "modality: PET normalisation (component-based)\n"
                         "scanner: %s, %u crystals, %u rings, max ring difference %u\n",
                         n->scanner->name ? n->scanner->name : "(unnamed)", n->n_crystals,
                         n->scanner->n_rings, n->scanner->max_ring_difference);
  range(n->efficiency, n->n_crystals, &a, &m, &b);
  g_string_append_printf(out, "crystal efficiencies: %u, min %.6g, mean %.6g, max %.6g\n",
                         n->n_crystals, a, m, b);
  if (n->rings > 1) {
    range(n->axial, (gsize)n->rings * n->rings, &a, &m, &b);
    g_string_append_printf(out, "axial factors: %u ring pairs, min %.6g, max %.6g\n",
                           n->rings * (n->rings + 1) / 2, a, b);
  } else {
    g_string_append_printf(out, "axial factors: none (one factor %.6g)\n", (double)n->axial[0]);
  }
  if (n->crystals_per_ring) {
    range(n->transaxial, (gsize)n->radial * n->block, &a, &m, &b);
    g_string_append_printf(out, "transaxial factors: %u radial classes x %u block positions "
                           "(%u crystals per ring), min %.6g, max %.6g\n", n->radial, n->block,
                           n->crystals_per_ring, a, b);
  } else {
    g_string_append_printf(out, "transaxial factors: none (one factor %.6g)\n",
                           (double)n->transaxial[0]);
  }
  if (n->description && n->description[0])
    g_string_append_printf(out, "description: %s\n", n->description);
}

static guint probe(const char *path, const guint8 *head, gsize n) {
  if (tl_format_head_starts_with(head, n, MAGIC)) return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".tln") ? TL_FORMAT_EXTENSION : 0;
}

static gboolean describe_file(const char *path, GString *out, GError **error) {
  g_autoptr(TlNorm) n = tl_norm_load(path, NULL, error);
  if (!n) return FALSE;
  g_string_append_printf(out, "holds: %s\n", tl_data_kind_name(TL_DATA_PET_NORM));
  tl_norm_describe(n, out);
  return TRUE;
}

static gpointer load_file(const char *path, GError **error) { return tl_norm_load(path, NULL, error); }
static gboolean save_file(gconstpointer data, const char *path, GError **error) {
  return tl_norm_save(data, path, error);
}

const TlFormatClass tl_format_norm = {
    .name = "norm",
    .summary = "Tomolab PET normalisation: crystal efficiencies, axial and transaxial factors",
    .kind = TL_DATA_PET_NORM,
    .extensions = ".tln",
    .probe = probe,
    .describe = describe_file,
    .load = load_file,
    .save = save_file,
};
