/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The component-based normalisation (tl-norm.h): the model, its device tables, the `.tln`
 * file and the estimate from a scan of a known source. */
#define _POSIX_C_SOURCE 200809L /* getline, ftello */
#include "tl-norm.h"
#include "tl-fansum.h"
#include "tl-pet-operator.h"
#include "tl-projector.h"
#include "image/tl-file.h"
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

static TlNorm *norm_alloc(const TlScanner *s, guint R, guint C, guint B, guint D) {
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
  TlNorm *n = norm_alloc(s, R, C, B, D);
  for (guint i = 0; i < n->n_crystals; i++) n->efficiency[i] = 1.0f;
  for (guint i = 0; i < R * R; i++) n->axial[i] = 1.0f;
  for (guint i = 0; i < D * B; i++) n->transaxial[i] = 1.0f;
  if (!tl_norm_update(n, NULL, error)) g_clear_pointer(&n, tl_norm_free);
  return n;
}

TlNorm *tl_norm_copy(const TlNorm *o) {
  TlNorm *n = norm_alloc(o->scanner, o->rings, o->crystals_per_ring, o->block, o->radial);
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

static inline gboolean pair_ok(const TlCrystal *c, guint32 mrd, guint32 a, guint32 b) {
  return c[a].group != c[b].group &&
         (c[a].ring > c[b].ring ? c[a].ring - c[b].ring : c[b].ring - c[a].ring) <= mrd;
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
      if (pair_ok(c, mrd, a, b) && tl_norm_pair(n, perm[a], perm[b]) != tl_norm_pair(n, a, b))
        return FALSE;
    }
  }
  return TRUE;
}

TlArray *tl_norm_upload(const TlNorm *n, TlContext *ctx, GError **error) {
  guint R = n->rings, off_e = 8, off_a = off_e + n->n_crystals, off_t = off_a + R * R;
  guint64 words = (guint64)off_t + (guint64)n->radial * n->block;
  g_autofree guint32 *w = g_new(guint32, words);
  guint32 head[8] = {n->n_crystals, R, n->crystals_per_ring, n->block, n->radial,
                     off_e, off_a, off_t};
  memcpy(w, head, sizeof head);
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
  n = norm_alloc(sc, R, C, B, D);
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

/* ------------------------------------------------------------------------------------------ */
/* Estimation */

void tl_norm_estimate_options_init(TlNormEstimateOptions *o) {
  *o = (TlNormEstimateOptions){.axial = TRUE, .transaxial = TRUE, .rounds = 50,
                               .tolerance = 1e-6};
}

typedef struct {
  const TlScanner *sc;
  guint32 N, mrd;
  guint64 pairs;
  const float *y, *p;
  guint R, C, B, D;
  guint32 *ring, *t;  /* per crystal: ring class, transaxial index (0 without C) */
  double *eps, *gax, *gtr;
} Est;

static inline guint est_ax(const Est *e, guint32 a, guint32 b) {
  return e->ring[a] * e->R + e->ring[b];
}

static inline guint est_tr(const Est *e, guint32 a, guint32 b) {
  if (e->C == 0) return 0;
  guint C = e->C, B = e->B, ta = e->t[a], tb = e->t[b];
  guint d = tb >= ta ? tb - ta : tb + C - ta, u = ta % B;
  if (2 * d > C) {
    d = C - d;
    u = tb % B;
  } else if (2 * d == C) {
    u = MIN(ta % B, tb % B);
  }
  return d * B + u;
}

/* The accepted pairs with expected counts > 0, in pair-index order: the body runs with a, b, i
 * (the pair index) and pe = p[i]. */
#define FOR_ACTIVE_PAIRS(e, ...)                                                             \
  for (guint64 p0_ = 0; p0_ < (e)->pairs; p0_ += (e)->N) {                                   \
    guint32 d_ = (guint32)(p0_ / (e)->N) + 1;                                                \
    guint32 m_ = (guint32)MIN((guint64)(e)->N, (e)->pairs - p0_);                            \
    for (guint32 a = 0; a < m_; a++) {                                                       \
      guint64 i = p0_ + a;                                                                   \
      double pe = (e)->p[i];                                                                 \
      if (!(pe > 0)) continue;                                                               \
      guint32 b = a + d_ >= (e)->N ? a + d_ - (e)->N : a + d_;                               \
      if (!pair_ok((e)->sc->crystals, (e)->mrd, a, b)) continue;                             \
      __VA_ARGS__                                                                            \
    }                                                                                        \
  }

/* fan_a = sum_b w_ab eps_b, w_ab = g_ax g_tr p_ab (tl-fansum.h). */
static void est_fans(const double *eps, double *fan, gpointer data) {
  Est *e = data;
  memset(fan, 0, sizeof(double) * e->N);
  FOR_ACTIVE_PAIRS(e, {
    double w = e->gax[est_ax(e, a, b)] * e->gtr[est_tr(e, a, b)] * pe;
    fan[a] += w * eps[b];
    fan[b] += w * eps[a];
  })
}

/* The maximiser of each class factor given the others: sum y / sum (other factors) p over the
 * class; classes without expected counts marked (den = 0). axial: TRUE = g_ax, else g_tr. */
static void est_classes(Est *e, gboolean axial, double *num, double *den) {
  guint nc = axial ? e->R * e->R : e->D * e->B;
  memset(num, 0, sizeof(double) * nc);
  memset(den, 0, sizeof(double) * nc);
  FOR_ACTIVE_PAIRS(e, {
    guint ax = est_ax(e, a, b), tr = est_tr(e, a, b);
    guint c = axial ? ax : tr;
    num[c] += e->y[i];
    den[c] += e->eps[a] * e->eps[b] * (axial ? e->gtr[tr] : e->gax[ax]) * pe;
  })
  if (axial) /* (r, s) and (s, r) are one class */
    for (guint r = 0; r < e->R; r++)
      for (guint s = r + 1; s < e->R; s++) {
        num[r * e->R + s] = num[s * e->R + r] = num[r * e->R + s] + num[s * e->R + r];
        den[r * e->R + s] = den[s * e->R + r] = den[r * e->R + s] + den[s * e->R + r];
      }
}

/* A class factor from fewer expected counts than this is noise (over 10 % standard error):
 * a cylinder's edge classes, where its chords are short, came out at up to 51 with 10^6 counts,
 * and the lines missing the cylinder took that value as their nearest class's, which then
 * weighed the scatter tail fit (found by the window's corrections test). Such classes are
 * filled like empty ones. */
#define NORM_MIN_CLASS_COUNTS 100.0

/* g = num / den; classes without enough data (den < NORM_MIN_CLASS_COUNTS) take the nearest
 * class with enough: the same block position at the nearest radial distance (g_tr), the same
 * ring difference's mean (g_ax), else 1. Returns the number of such classes. */
static guint est_assign(Est *e, gboolean axial, const double *num, const double *den) {
  guint empty = 0;
  const double m = NORM_MIN_CLASS_COUNTS;
  if (!axial) {
    guint B = e->B, D = e->D;
    for (guint c = 0; c < D * B; c++)
      if (den[c] >= m) e->gtr[c] = num[c] / den[c];
    for (guint c = 0; c < D * B; c++) {
      if (den[c] >= m) continue;
      empty++;
      guint d = c / B, u = c % B;
      double v = 1;
      for (guint k = 1; k < D; k++) {
        if (d >= k && den[(d - k) * B + u] >= m) { v = e->gtr[(d - k) * B + u]; break; }
        if (d + k < D && den[(d + k) * B + u] >= m) { v = e->gtr[(d + k) * B + u]; break; }
      }
      e->gtr[c] = v;
    }
    return empty;
  }
  guint R = e->R;
  for (guint c = 0; c < R * R; c++)
    if (den[c] >= m) e->gax[c] = num[c] / den[c];
  for (guint r = 0; r < R; r++)
    for (guint s = r; s < R; s++) {
      if (den[r * R + s] >= m) continue;
      empty++;
      double sum = 0;
      guint cnt = 0;
      for (guint q = 0; q + (s - r) < R; q++)
        if (den[q * R + q + (s - r)] >= m) sum += e->gax[q * R + q + (s - r)], cnt++;
      e->gax[r * R + s] = e->gax[s * R + r] = cnt ? sum / cnt : 1;
    }
  return empty;
}

/* The degeneracies (tl-norm.h): mean eps per ring (with g_ax) and per block position (with
 * g_tr) to 1, by alternate scaling until both hold; without either, the mean eps to 1 (into the
 * single g_ax). */
static void est_gauge(Est *e) {
  guint N = e->N, R = e->R, B = e->B;
  gboolean rings = R > 1, blocks = e->C > 0 && B > 1;
  g_autofree double *m = g_new(double, MAX(R, B) + 1);
  g_autofree guint *cnt = g_new(guint, MAX(R, B) + 1);
  for (int it = 0; it < 100; it++) {
    double worst = 0;
    for (int pass = 0; pass < 2; pass++) {
      gboolean by_ring = pass == 0;
      if (by_ring ? !rings : !blocks) continue;
      guint K = by_ring ? R : B;
      memset(m, 0, sizeof(double) * K);
      memset(cnt, 0, sizeof(guint) * K);
      for (guint i = 0; i < N; i++) {
        guint k = by_ring ? e->ring[i] : e->t[i] % B;
        m[k] += e->eps[i], cnt[k]++;
      }
      for (guint k = 0; k < K; k++) m[k] = cnt[k] && m[k] > 0 ? m[k] / cnt[k] : 1;
      for (guint k = 0; k < K; k++) worst = MAX(worst, fabs(m[k] - 1));
      for (guint i = 0; i < N; i++) e->eps[i] /= m[by_ring ? e->ring[i] : e->t[i] % B];
      if (by_ring) {
        for (guint r = 0; r < R; r++)
          for (guint s = 0; s < R; s++) e->gax[r * R + s] *= m[r] * m[s];
      } else {
        for (guint d = 0; d < e->D; d++)
          for (guint u = 0; u < B; u++) e->gtr[d * B + u] *= m[u] * m[(u + d) % B];
      }
    }
    if (worst < 1e-13) break;
  }
  if (!rings && !blocks) {
    double s = 0;
    for (guint i = 0; i < N; i++) s += e->eps[i];
    double mean = s > 0 ? s / N : 1;
    for (guint i = 0; i < N; i++) e->eps[i] /= mean;
    for (guint c = 0; c < R * R; c++) e->gax[c] *= mean * mean;
  }
}

static double rel_change(const double *now, const double *before, gsize n) {
  double w = 0;
  for (gsize i = 0; i < n; i++)
    if (before[i] > 0 || now[i] > 0) w = MAX(w, fabs(now[i] - before[i]) / MAX(before[i], now[i]));
  return w;
}

/* sum y log ybar - ybar over the active pairs; chi2 = sum (y - ybar)^2 / ybar. */
static double est_loglik(Est *e, double *chi2) {
  double ll = 0, x2 = 0;
  FOR_ACTIVE_PAIRS(e, {
    double yb = e->eps[a] * e->eps[b] * e->gax[est_ax(e, a, b)] * e->gtr[est_tr(e, a, b)] * pe;
    double y = e->y[i];
    if (yb > 0) {
      ll += (y > 0 ? y * log(yb) : 0) - yb;
      x2 += (y - yb) * (y - yb) / yb;
    }
  })
  if (chi2) *chi2 = x2;
  return ll;
}

TlNorm *tl_norm_estimate(const TlScanner *sc, const float *counts, const float *expected,
                         const TlNormEstimateOptions *opt, TlNormReport *report,
                         GError **error) {
  TlNormEstimateOptions o;
  if (opt) o = *opt;
  else tl_norm_estimate_options_init(&o);
  if (!sc || !counts || !expected) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: no %s",
                !sc ? "scanner" : !counts ? "counts" : "expected counts");
    return NULL;
  }
  if (!tl_scanner_validate(sc, error)) return NULL;
  guint64 pairs = tl_pair_count(sc->n_crystals);
  if (pairs > TL_NORM_MAX_PAIRS) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "normalisation estimate: scanner '%s' has %"
                G_GUINT64_FORMAT " crystal pairs, more than the %" G_GUINT64_FORMAT " this holds",
                sc->name, pairs, TL_NORM_MAX_PAIRS);
    return NULL;
  }
  Est e = {.sc = sc, .N = sc->n_crystals, .mrd = sc->max_ring_difference, .pairs = pairs,
           .y = counts, .p = expected};
  tl_norm_layout(sc, o.axial, o.transaxial, &e.R, &e.C, &e.B, &e.D);
  g_autoptr(TlNorm) n = norm_alloc(sc, e.R, e.C, e.B, e.D);
  e.ring = n->ring;
  g_autofree guint32 *t = g_new0(guint32, e.N);
  for (guint i = 0; e.C && i < e.N; i++) t[i] = i % e.C;
  e.t = t;
  guint nax = e.R * e.R, ntr = e.D * e.B;
  g_autofree double *eps = g_new(double, e.N), *gax = g_new(double, nax),
                    *gtr = g_new(double, ntr), *F = g_new0(double, e.N),
                    *fan = g_new(double, e.N);
  e.eps = eps, e.gax = gax, e.gtr = gtr;
  TlNormReport r = {0};
  /* the data: F_i = sum of the counts of crystal i's pairs where the source projects */
  double tot_p = 0;
  for (guint64 p0 = 0; p0 < pairs; p0 += e.N) {
    guint32 d = (guint32)(p0 / e.N) + 1, m = (guint32)MIN((guint64)e.N, pairs - p0);
    for (guint32 a = 0; a < m; a++) {
      guint64 i = p0 + a;
      guint32 b = a + d >= e.N ? a + d - e.N : a + d;
      if (!pair_ok(sc->crystals, e.mrd, a, b)) continue;
      double y = counts[i], pe = expected[i];
      if (!isfinite(y) || y < 0 || !isfinite(pe) || pe < 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: pair (%u, %u): "
                    "%s %g, expected a finite value >= 0", a, b,
                    !isfinite(y) || y < 0 ? "count" : "expected count",
                    !isfinite(y) || y < 0 ? y : pe);
        return NULL;
      }
      if (pe > 0) {
        F[a] += y, F[b] += y;
        r.counts += y;
        r.pairs++;
        tot_p += pe;
      } else {
        r.counts_outside += y;
      }
    }
  }
  if (!(r.counts > 0) || !(tot_p > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: %s (%.0f counts "
                "where the source projects; expected some)", tot_p > 0 ? "no counts" :
                "the source projects onto no accepted pair", r.counts);
    return NULL;
  }
  /* start: g = 1 and eps from the fan sums with the mean level of counts over expected */
  for (guint c = 0; c < nax; c++) gax[c] = 1;
  for (guint c = 0; c < ntr; c++) gtr[c] = 1;
  for (guint i = 0; i < e.N; i++) eps[i] = sqrt(r.counts / tot_p);
  g_autofree double *num = g_new(double, MAX(nax, ntr)), *den = g_new(double, MAX(nax, ntr));
  g_autofree double *prev = g_new(double, e.N + nax + ntr);
  gboolean first = TRUE;
  for (r.rounds = 0; r.rounds < MAX(o.rounds, 1);) {
    /* the fan sums only as exactly as the class factors they are solved with: 1e-4 while the
     * classes are still 1 (the first round), then 1 % of the stopping tolerance (each
     * iteration is a pass over every pair: the large scanners' cost) */
    double tol = first ? 1e-4 : CLAMP(0.01 * o.tolerance, 1e-12, 1e-4);
    TlFanSolve fit;
    tl_fan_solve(e.N, F, est_fans, &e, eps, fan, 1000, tol, &fit);
    r.fan_iterations += fit.iterations;
    r.fan_residual = fit.max_residual;
    if (ntr > 1) {
      est_classes(&e, FALSE, num, den);
      r.empty_classes = est_assign(&e, FALSE, num, den);
    }
    est_classes(&e, TRUE, num, den);
    guint empty_ax = est_assign(&e, TRUE, num, den);
    if (ntr > 1) r.empty_classes += empty_ax;
    else r.empty_classes = empty_ax;
    est_gauge(&e);
    r.rounds++;
    double *now = g_new(double, e.N + nax + ntr);
    memcpy(now, eps, sizeof(double) * e.N);
    memcpy(now + e.N, gax, sizeof(double) * nax);
    memcpy(now + e.N + nax, gtr, sizeof(double) * ntr);
    r.max_change = first ? 1.0 : rel_change(now, prev, e.N + nax + ntr);
    memcpy(prev, now, sizeof(double) * (e.N + nax + ntr));
    g_free(now);
    first = FALSE;
    if (o.progress) o.progress(r.rounds, r.max_change, est_loglik(&e, NULL), o.user_data);
    /* done when nothing moves (never after the first round's loose fan sums) */
    if (r.max_change < o.tolerance) break;
  }
  /* the final state's fan residual (the class updates moved the fans since the last solve) */
  est_fans(eps, fan, &e);
  r.fan_residual = 0;
  for (guint i = 0; i < e.N; i++) {
    r.fan_residual = MAX(r.fan_residual, fabs(eps[i] * fan[i] - F[i]) / MAX(F[i], 1.0));
    r.dead_crystals += F[i] == 0;
  }
  double chi2;
  r.loglik = est_loglik(&e, &chi2);
  double params = e.N + (double)e.R * (e.R + 1) / 2 + ntr;
  r.chi2_dof = r.pairs > params ? chi2 / (r.pairs - params) : NAN;
  /* relative: the mean of n over every accepted pair is 1 (into g_ax) */
  double sum = 0;
  guint64 count = 0;
  for (guint64 p0 = 0; p0 < pairs; p0 += e.N) {
    guint32 d = (guint32)(p0 / e.N) + 1, m = (guint32)MIN((guint64)e.N, pairs - p0);
    for (guint32 a = 0; a < m; a++) {
      guint32 b = a + d >= e.N ? a + d - e.N : a + d;
      if (!pair_ok(sc->crystals, e.mrd, a, b)) continue;
      sum += eps[a] * eps[b] * gax[est_ax(&e, a, b)] * gtr[est_tr(&e, a, b)];
      count++;
    }
  }
  double scale = sum > 0 ? count / sum : 1;
  for (guint i = 0; i < e.N; i++) n->efficiency[i] = (float)eps[i];
  for (guint c = 0; c < nax; c++) n->axial[c] = (float)(gax[c] * scale);
  for (guint c = 0; c < ntr; c++) n->transaxial[c] = (float)gtr[c];
  if (report) *report = r;
  if (!tl_norm_update(n, "normalisation estimate", error)) return NULL;
  return g_steal_pointer(&n);
}

char *tl_norm_report_describe(const TlNormReport *r) {
  return g_strdup_printf(
      "normalisation from %.0f counts in %" G_GUINT64_FORMAT " pairs (%.0f counts where the "
      "source projects to 0, ignored): %u rounds (last change %.2e), %u fan-sum iterations "
      "(residual %.1e), chi2/dof %.4f, %u classes without data, %u crystals without counts",
      r->counts, r->pairs, r->counts_outside, r->rounds, r->max_change, r->fan_iterations,
      r->fan_residual, r->chi2_dof, r->empty_classes, r->dead_crystals);
}

float *tl_norm_pair_counts(const TlScanner *sc, const TlEvent *ev, guint64 n, guint64 *outside,
                           GError **error) {
  guint N = sc->n_crystals;
  guint64 pairs = tl_pair_count(N);
  if (pairs > TL_NORM_MAX_PAIRS) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "normalisation: scanner '%s' has %"
                G_GUINT64_FORMAT " crystal pairs, more than the %" G_GUINT64_FORMAT " this holds",
                sc->name, pairs, TL_NORM_MAX_PAIRS);
    return NULL;
  }
  float *c = g_try_new0(float, MAX(pairs, 1));
  if (!c) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "normalisation: no memory for the "
                "counts of %" G_GUINT64_FORMAT " crystal pairs", pairs);
    return NULL;
  }
  guint64 out = 0;
  for (guint64 e = 0; e < n; e++) {
    guint a = ev[e].a, b = ev[e].b;
    if (a >= N || b >= N) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "normalisation: event %" G_GUINT64_FORMAT
                  " has crystal %u, expected below %u (the scanner's crystals)", e, MAX(a, b), N);
      g_free(c);
      return NULL;
    }
    if (!tl_scanner_pair_allowed(sc, a, b)) {
      out++;
      continue;
    }
    c[tl_pair_index(N, a, b)] += 1.0f;
  }
  if (outside) *outside = out;
  return c;
}

gboolean tl_norm_expected(TlContext *ctx, const char *projector, const TlScanner *sc,
                          const TlImage *source, const TlImage *mu, float *out,
                          GError **error) {
  if (!tl_image_check_nonnegative(source, "normalisation source", error) ||
      (mu && !tl_pet_check_attenuation(mu, &source->grid, error)))
    return FALSE;
  guint N = sc->n_crystals;
  guint64 pairs = tl_pair_count(N);
  g_autoptr(TlProjector) proj = tl_projector_new(ctx, projector ? projector : "siddon",
                                                 &source->grid, error);
  g_autoptr(TlStream) s = proj ? tl_stream_new(ctx, error) : NULL;
  g_autoptr(TlArray) cry = s ? tl_scanner_upload(sc, ctx, error) : NULL;
  if (!cry) return FALSE;
  guint64 nv = tl_image_grid_n_voxels(&source->grid);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, error);
  g_autoptr(TlArray) mua = img && mu ? tl_array_new_float(ctx, nv, error) : NULL;
  if (!img || !tl_array_upload(img, source->data, error) ||
      (mu && (!mua || !tl_array_upload(mua, mu->data, error))))
    return FALSE;
  const guint64 chunk = 1 << 22;
  g_autoptr(TlArray) bins = tl_array_new(ctx, chunk, sizeof(TlBin), error);
  g_autoptr(TlArray) f1 = bins ? tl_array_new_float(ctx, chunk, error) : NULL;
  g_autoptr(TlArray) f2 = f1 && mu ? tl_array_new_float(ctx, chunk, error) : NULL;
  if (!f1 || (mu && !f2)) return FALSE;
  g_autofree TlBin *hb = g_new(TlBin, chunk);
  g_autofree guint64 *idx = g_new(guint64, chunk);
  g_autofree float *h1 = g_new(float, chunk), *h2 = g_new(float, chunk);
  memset(out, 0, sizeof(float) * pairs);
  guint64 p = 0;
  while (p < pairs) {
    guint64 m = 0;
    for (; p < pairs && m < chunk; p++) {
      guint a, b;
      tl_pair_decode(N, p, &a, &b);
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      hb[m] = (TlBin){.a = a, .b = b, .count = 1.0f};
      idx[m++] = p;
    }
    if (m == 0) break;
    TlLors l = {.kind = TL_LORS_BINS, .records = bins, .crystals = cry, .first = 0, .count = m};
    if (!tl_array_upload_range(bins, 0, m, hb, error) ||
        !tl_projector_forward(proj, s, &l, img, f1, error) ||
        (mu && !tl_projector_forward(proj, s, &l, mua, f2, error)) ||
        !tl_stream_finish(s, error) || !tl_array_download_range(f1, 0, m, h1, error) ||
        (mu && !tl_array_download_range(f2, 0, m, h2, error)))
      return FALSE;
    for (guint64 j = 0; j < m; j++)
      out[idx[j]] = (float)((double)h1[j] * (mu ? exp(-(double)h2[j]) : 1.0));
  }
  return TRUE;
}
