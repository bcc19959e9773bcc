/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Siemens Biograph mMR list mode (tl-format-mmr.h, docs/formats.md).
 *
 * Words: 32-bit little-endian (PETLINK 32-bit, as STIR's CListRecordECAT8_32bit reads it).
 *   bit 31 = 0: coincidence event; bit 30: 1 prompt, 0 delayed; bits 0-29: bin address.
 *   bit 31 = 1: tag; bits 29-31 = 100: time tag, bits 0-28 = ms since the acquisition start;
 *   101 dead time / singles, 110 gantry motion, 111 patient monitoring / control.
 * Bin address (span 1, no arc correction): tangential fastest (344), then view (252), then
 * sinogram z over segments (ring differences) in the order 0, -1, +1, -2, +2 ... -60, +60,
 * segment s holding 64 - |s| sinograms. With t = tangential - 172 and view v (STIR's
 * ProjDataInfoCylindricalNoArcCorr, after CTI): d1 = (v + floor(t/2)) mod 504,
 * d2 = (v - floor((t+1)/2) + 252) mod 504; sinogram a of segment s: ring1 = a, ring2 = a + s
 * for s >= 0, ring1 = a - s, ring2 = a for s < 0. Detector d sits at psi = 2 pi d / 504.
 * Gaps: STIR's Scanner.cxx says each block of 9 positions is 8 crystals and a virtual one; in
 * this numbering the virtual one is position d = 0 mod 9: in the real acquisition of
 * ../shared/data/mmr no event of 254 201 lands there at either end, while every other residue
 * mod 9 gets 11-13% of them (tests/test-format-mmr.c checks the first; with d = 8 mod 9 a
 * fifth of the events would land on gaps). */
#define _POSIX_C_SOURCE 200809L /* fseeko */
#include "tl-format-mmr.h"
#include "image/tl-file.h"
#include "image/tl-datafile.h"
#include "pet/scanner/tl-cylinder.h"
#include "tl-progress.h"
#include <errno.h>
#include <stdlib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#define MMR_RADIUS_MM 328.0
#define MMR_RING_PITCH_MM 4.0625
#define MMR_HEADER_MAX (1u << 20) /* an Interfile header is a few kB; refuse more */

guint32 tl_mmr_crystal_id(guint ring, guint position) {
  return tl_cylinder_crystal(tl_cylinder_mmr(), ring, position);
}

/* sinogram z -> ring pair, built once */
static guint8 ring_pair[TL_MMR_SINOGRAMS][2];

static gpointer build_ring_pairs(gpointer unused) {
  (void)unused;
  guint z = 0;
  for (int i = 0; i <= 2 * TL_MMR_MAX_RING_DIFFERENCE; i++) {
    int s = i == 0 ? 0 : (i % 2 ? -(i + 1) / 2 : i / 2);
    int n = TL_MMR_RINGS - abs(s);
    for (int a = 0; a < n; a++, z++) {
      ring_pair[z][0] = (guint8)(s >= 0 ? a : a - s);
      ring_pair[z][1] = (guint8)(s >= 0 ? a + s : a);
    }
  }
  g_assert(z == TL_MMR_SINOGRAMS);
  return NULL;
}

TlMmrDecode tl_mmr_decode_bin(guint32 bin_address, guint32 *a, guint32 *b) {
  static GOnce once = G_ONCE_INIT;
  g_once(&once, build_ring_pairs, NULL);
  if (bin_address >= (guint32)TL_MMR_BINS * TL_MMR_VIEWS * TL_MMR_SINOGRAMS)
    return TL_MMR_OUT_OF_RANGE;
  int t = (int)(bin_address % TL_MMR_BINS) - TL_MMR_BINS / 2;
  guint rest = bin_address / TL_MMR_BINS;
  int v = (int)(rest % TL_MMR_VIEWS);
  guint z = rest / TL_MMR_VIEWS;
  /* floor division of a possibly negative t */
  int half_lo = t >= 0 ? t / 2 : -((-t + 1) / 2);
  int half_hi = (t + 1) >= 0 ? (t + 1) / 2 : -((-(t + 1) + 1) / 2);
  int n = TL_MMR_POSITIONS;
  guint d1 = (guint)(((v + half_lo) % n + n) % n);
  guint d2 = (guint)(((v - half_hi + n / 2) % n + n) % n);
  guint32 ca = tl_mmr_crystal_id(ring_pair[z][0], d1), cb = tl_mmr_crystal_id(ring_pair[z][1], d2);
  if (ca == G_MAXUINT32 || cb == G_MAXUINT32) return TL_MMR_GAP;
  *a = ca;
  *b = cb;
  return TL_MMR_DECODED;
}

/* The crystal table, built once (a load per frame or per fuzz input copies it): the mMR as
 * STIR describes it (pet/scanner/tl-cylinder.h), the same table its sinograms give. */
static gpointer build_scanner(gpointer unused) {
  (void)unused;
  const TlCylinder *c = tl_cylinder_mmr();
  return tl_cylinder_scanner_new(c, NULL, c->max_ring_difference, NULL);
}

TlScanner *tl_mmr_scanner_new(void) {
  static GOnce once = G_ONCE_INIT;
  const TlScanner *s = g_once(&once, build_scanner, NULL);
  g_assert(s); /* a constant geometry that validates */
  return tl_scanner_copy(s);
}

/* --- the header --- */

typedef struct {
  char *path, *data_path;
  guint64 data_offset, header_words;
  double duration_s;
} Header;

static void header_clear(Header *h) {
  g_free(h->path);
  g_free(h->data_path);
}

/* "!%Key Name (unit) " -> "key name (unit)": case and the Interfile markers ignored. */
static char *norm_key(const char *k) {
  while (*k == '!' || *k == '%' || *k == ' ' || *k == '\t') k++;
  GString *s = g_string_new(NULL);
  gboolean space = FALSE;
  for (; *k; k++) {
    if (*k == ' ' || *k == '\t') {
      space = TRUE;
      continue;
    }
    if (space && s->len) g_string_append_c(s, ' ');
    space = FALSE;
    g_string_append_c(s, g_ascii_tolower(*k));
  }
  return g_string_free(s, FALSE);
}

G_GNUC_PRINTF(5, 6)
static gboolean bad_key(GError **error, const char *path, guint line, const char *key,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *k = tl_text_quote(key, -1, 60);
  if (line)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': %s", path, line, k, m);
  else
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key '%s': %s", path, k, m);
  return FALSE;
}

/* A required integer key that must hold exactly `want` (the decoding assumes the mMR). */
static gboolean check_exact(const char *path, guint line, const char *key, const char *value,
                            gint64 want, GError **error) {
  gint64 v;
  if (!tl_kv_int(path, line, key, value, &v, error)) return FALSE;
  if (v != want) {
    g_autofree char *q = tl_text_quote(value, -1, 40);
    return bad_key(error, path, line, key, "value '%s' (expected %" G_GINT64_FORMAT
                   " for the mMR list mode this reader decodes)", q, want);
  }
  return TRUE;
}

/* A number that must be finite and > 0 (>= 0 with allow_zero). */
static gboolean check_positive(const char *path, guint line, const char *key, const char *value,
                               gboolean allow_zero, double *out, GError **error) {
  if (!tl_kv_doubles(path, line, key, value, 1, out, error)) return FALSE;
  if (allow_zero ? *out < 0 : *out <= 0) {
    g_autofree char *q = tl_text_quote(value, -1, 40);
    return bad_key(error, path, line, key, "value '%s' (expected a finite number %s 0)", q,
                   allow_zero ? ">=" : ">");
  }
  return TRUE;
}

static gboolean check_near(const char *path, guint line, const char *key, const char *value,
                           double want, GError **error) {
  double v;
  if (!check_positive(path, line, key, value, FALSE, &v, error)) return FALSE;
  if (fabs(v - want) > 0.01 * want) {
    g_autofree char *q = tl_text_quote(value, -1, 40);
    return bad_key(error, path, line, key, "value '%s' is inconsistent with the mMR (expected %g)",
                   q, want);
  }
  return TRUE;
}

/* Required keys and what they must say; 'seen' bits in this order. */
static const char *const required[] = {
    "name of data file", "originating system", "number of rings", "number of projections",
    "number of views", "axial compression", "maximum ring difference",
    "lm event and tag words format (bits)",
};

static gboolean parse_header(const char *path, const char *text, gsize len, Header *h,
                             GError **error) {
  if (!tl_text_check(path, text, len, 1, error)) return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint seen = 0;
  gboolean first = TRUE;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (guint i = 0; lines[i]; i++) {
    guint line = i + 1;
    char *l = g_strstrip(lines[i]);
    if (!*l || *l == ';') continue; /* Interfile comments start with ';' */
    if (first) {
      first = FALSE;
      if (g_ascii_strncasecmp(l, "!INTERFILE", 10) != 0) {
        g_autofree char *q = tl_text_quote(l, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: not an Interfile header (first line '%s', expected '!INTERFILE :=')",
                    path, line, q);
        return FALSE;
      }
      continue;
    }
    char *sep = strstr(l, ":=");
    if (!sep) {
      g_autofree char *q = tl_text_quote(l, -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key := value', found '%s'",
                  path, line, q);
      return FALSE;
    }
    *sep = 0;
    g_autofree char *key = norm_key(g_strstrip(l));
    char *value = g_strstrip(sep + 2);
    if (!tl_kv_once_or_same(keys_seen, path, key, value, line, error)) return FALSE;
    int idx = -1;
    for (guint r = 0; r < G_N_ELEMENTS(required); r++)
      if (strcmp(key, required[r]) == 0) idx = (int)r;
    if (idx >= 0 && (seen & (1u << idx)))
      return bad_key(error, path, line, key, "given twice");
    if (idx >= 0) seen |= 1u << idx;
    switch (idx) {
    case 0: {
      /* Siemens writes Windows paths too: the name part, looked up next to the header */
      const char *s1 = strrchr(value, '/'), *s2 = strrchr(value, '\\');
      const char *name = s1 && (!s2 || s1 > s2) ? s1 : s2;
      name = name ? name + 1 : value;
      if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        g_autofree char *q = tl_text_quote(value, -1, 60);
        return bad_key(error, path, line, key, "value '%s' (expected a file name)", q);
      }
      g_free(h->data_path);
      h->data_path = tl_datafile_resolve(path, key, name, error);
      if (!h->data_path) return FALSE;
    }
      continue;
    case 1:
      if (strcmp(value, "2008") != 0 && !strstr(value, "mMR")) {
        g_autofree char *q = tl_text_quote(value, -1, 40);
        return bad_key(error, path, line, key, "value '%s' (expected 2008, the Biograph mMR)", q);
      }
      continue;
    case 2: if (!check_exact(path, line, key, value, TL_MMR_RINGS, error)) return FALSE; continue;
    case 3: if (!check_exact(path, line, key, value, TL_MMR_BINS, error)) return FALSE; continue;
    case 4: if (!check_exact(path, line, key, value, TL_MMR_VIEWS, error)) return FALSE; continue;
    case 5: if (!check_exact(path, line, key, value, 1, error)) return FALSE; continue;
    case 6:
      if (!check_exact(path, line, key, value, TL_MMR_MAX_RING_DIFFERENCE, error)) return FALSE;
      continue;
    case 7: if (!check_exact(path, line, key, value, 32, error)) return FALSE; continue;
    default: break;
    }
    double d;
    if (strcmp(key, "data offset in bytes") == 0) {
      if (!tl_kv_uint(path, line, key, value, G_MAXINT64, &h->data_offset, error)) return FALSE;
    } else if (strcmp(key, "total listmode word counts") == 0) {
      if (!tl_kv_uint(path, line, key, value, G_MAXINT64, &h->header_words, error)) return FALSE;
    } else if (strcmp(key, "image duration (sec)") == 0) {
      if (!check_positive(path, line, key, value, TRUE, &h->duration_s, error)) return FALSE;
    } else if (strcmp(key, "timing tagwords interval (msec)") == 0) {
      if (!check_positive(path, line, key, value, FALSE, &d, error)) return FALSE;
    } else if (strcmp(key, "gantry crystal radius (cm)") == 0) {
      if (!check_near(path, line, key, value, MMR_RADIUS_MM / 10, error)) return FALSE;
    } else if (strcmp(key, "distance between rings (cm)") == 0) {
      if (!check_near(path, line, key, value, MMR_RING_PITCH_MM / 10, error)) return FALSE;
    } else if (strcmp(key, "data format") == 0) {
      if (g_ascii_strcasecmp(value, "CoincidenceList") != 0) {
        g_autofree char *q = tl_text_quote(value, -1, 40);
        return bad_key(error, path, line, key, "value '%s' (expected CoincidenceList)", q);
      }
    } else if (strcmp(key, "imagedata byte order") == 0) {
      if (g_ascii_strcasecmp(value, "LITTLEENDIAN") != 0) {
        g_autofree char *q = tl_text_quote(value, -1, 40);
        return bad_key(error, path, line, key, "value '%s' (expected LITTLEENDIAN)", q);
      }
    }
    /* other keys (study, isotope, singles...) are not needed to decode the words */
  }
  if (first) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: empty header (expected '!INTERFILE :=')", path);
    return FALSE;
  }
  for (guint r = 0; r < G_N_ELEMENTS(required); r++)
    if (!(seen & (1u << r))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks the key '%s'", path,
                  required[r]);
      return FALSE;
    }
  return TRUE;
}

static gboolean read_header(const char *path, Header *h, GError **error) {
  GStatBuf st;
  if (g_stat(path, &st) == 0 && (guint64)st.st_size > MMR_HEADER_MAX) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: a header of %" G_GUINT64_FORMAT
                " bytes (expected at most %u)", path, (guint64)st.st_size, MMR_HEADER_MAX);
    return FALSE;
  }
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, error)) return FALSE;
  h->path = g_strdup(path);
  return parse_header(path, text, len, h, error);
}

static gboolean head_is_interfile(const char *path) {
  gsize n = 0;
  g_autofree guint8 *head = tl_format_read_head(path, &n, NULL);
  return head && tl_format_head_starts_with(head, n, "!INTERFILE");
}

/* The header naming the data file `path`: <path>.hdr, else a *.hdr* file in its folder whose
 * "name of data file" is this file's name (the mMR's own naming varies). NULL if none. */
static char *find_header(const char *path) {
  g_autofree char *direct = g_strconcat(path, ".hdr", NULL);
  if (g_file_test(direct, G_FILE_TEST_IS_REGULAR) && head_is_interfile(direct))
    return g_steal_pointer(&direct);
  g_autofree char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return NULL;
  char *found = NULL;
  const char *name;
  guint looked = 0;
  while (!found && (name = g_dir_read_name(d)) && looked < 256) {
    g_autofree char *lower = g_ascii_strdown(name, -1);
    if (!strstr(lower, ".hdr")) continue;
    looked++;
    g_autofree char *cand = g_build_filename(dir, name, NULL);
    gsize n = 0;
    g_autofree guint8 *head = tl_format_read_head(cand, &n, NULL);
    if (!head || !tl_format_head_starts_with(head, n, "!INTERFILE")) continue;
    g_autofree char *text = g_strndup((const char *)head, n);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] && !found; i++) {
      char *sep = strstr(lines[i], ":=");
      if (!sep) continue;
      *sep = 0;
      g_autofree char *key = norm_key(g_strstrip(lines[i]));
      if (strcmp(key, "name of data file") == 0 && strcmp(g_strstrip(sep + 2), base) == 0)
        found = g_steal_pointer(&cand);
    }
  }
  g_dir_close(d);
  return found;
}

/* The header of `path` (itself, or found next to the data file). */
static gboolean open_header(const char *path, Header *h, GError **error) {
  if (!tl_file_check_input(path, "mMR list-mode file", error)) return FALSE;
  /* data whose first words spell "!INTERFILE" are still data when a header beside them names
   * them (found by fuzz-mmr: the data file was read as its own header) */
  g_autofree char *hdr = find_header(path);
  if (hdr) {
    Header named = {0};
    gboolean names_path = FALSE;
    if (read_header(hdr, &named, NULL)) {
      g_autofree char *a = g_canonicalize_filename(path, NULL);
      g_autofree char *b = g_canonicalize_filename(named.data_path, NULL);
      names_path = strcmp(a, b) == 0;
    }
    header_clear(&named);
    if (!names_path && head_is_interfile(path)) g_clear_pointer(&hdr, g_free);
  }
  if (!hdr && head_is_interfile(path)) return read_header(path, h, error);
  if (!hdr) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: no mMR list-mode header found for it (expected '%s.hdr' or an Interfile "
                "header next to it whose 'name of data file' is this file)", path, path);
    return FALSE;
  }
  if (!read_header(hdr, h, error)) return FALSE;
  g_autofree char *a = g_canonicalize_filename(path, NULL), *b = g_canonicalize_filename(h->data_path, NULL);
  if (strcmp(a, b) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key 'name of data file' names '%s', not '%s'",
                hdr, h->data_path, path);
    return FALSE;
  }
  return TRUE;
}

/* --- the words --- */

static TlListmode *decode(const char *path, const TlMmrOptions *opt, TlMmrStats *stats,
                          gboolean keep, GError **error) {
  TlMmrStats st = {0};
  Header h = {0};
  TlListmode *lm = NULL;
  FILE *f = NULL;
  GArray *prompts = NULL, *delayed = NULL;
  double t0 = 0, t1 = INFINITY;
  gboolean stepping = FALSE; /* a progress step begun (tl-progress.h): ended at out */
  if (opt) {
    if (!isfinite(opt->start_s) || opt->start_s < 0 || isnan(opt->end_s) ||
        (opt->end_s > 0 && opt->end_s <= opt->start_s)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "%s: time frame %g..%g s (expected 0 <= start < end, end <= 0 for the whole file)",
                  path, opt->start_s, opt->end_s);
      return NULL;
    }
    t0 = opt->start_s;
    t1 = opt->end_s > 0 ? opt->end_s : INFINITY;
  }
  if (!open_header(path, &h, error)) goto out;
  if (!tl_file_check_input(h.data_path, "mMR list-mode data file", error)) goto out;
  f = g_fopen(h.data_path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", h.data_path, g_strerror(e));
    goto out;
  }
  GStatBuf sb;
  if (g_stat(h.data_path, &sb) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", h.data_path);
    goto out;
  }
  guint64 size = (guint64)sb.st_size;
  if (h.data_offset > size) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key 'data offset in bytes': value %" G_GUINT64_FORMAT " is beyond the end of "
                "'%s' (%" G_GUINT64_FORMAT " bytes)", h.path, h.data_offset, h.data_path, size);
    goto out;
  }
  if ((size - h.data_offset) % 4) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: truncated: %" G_GUINT64_FORMAT " bytes of words after offset %" G_GUINT64_FORMAT
                " (expected a multiple of 4)", h.data_path, size - h.data_offset, h.data_offset);
    goto out;
  }
  st.words = (size - h.data_offset) / 4;
  st.header_words = h.header_words;
  st.header_duration_s = h.duration_s;
  /* The header's count is of the full scan; a file cut from it holds fewer words, never more. */
  if (h.header_words && st.words > h.header_words) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key 'total listmode word counts': value %" G_GUINT64_FORMAT " but '%s' holds %"
                G_GUINT64_FORMAT " words (expected at most the header's count)", h.path,
                h.header_words, h.data_path, st.words);
    goto out;
  }
  if (fseeko(f, (off_t)h.data_offset, SEEK_SET) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: cannot seek to offset %" G_GUINT64_FORMAT,
                h.data_path, h.data_offset);
    goto out;
  }
  if (keep) {
    prompts = g_array_new(FALSE, FALSE, sizeof(TlEvent));
    delayed = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  }
  guint32 buf[16384];
  guint64 done = 0, now_ms = 0;
  gboolean have_tag = FALSE;
  /* a whole mMR scan is gigabytes: minutes of reading on a slow disk */
  tl_progress_begin(keep ? "reading mMR list mode" : "scanning mMR list mode", (double)st.words);
  stepping = TRUE;
  while (done < st.words) {
    size_t want = (size_t)MIN(st.words - done, G_N_ELEMENTS(buf));
    tl_progress_set_done((double)done);
    if (!tl_progress_check(h.data_path, error)) goto out;
    if (fread(buf, 4, want, f) != want) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error at word %" G_GUINT64_FORMAT,
                  h.data_path, done);
      goto out;
    }
    done += want;
    for (size_t i = 0; i < want; i++) {
      guint32 w = GUINT32_FROM_LE(buf[i]);
      if (w >> 31) {
        switch (w >> 29) {
        case 4:
          st.time_tags++;
          now_ms = w & 0x1fffffffu;
          if (!have_tag) st.first_ms = (guint32)now_ms;
          st.last_ms = (guint32)now_ms;
          have_tag = TRUE;
          break;
        case 5: st.dead_time_tags++; break;
        case 6: st.motion_tags++; break;
        default: st.monitor_tags++; break;
        }
        continue;
      }
      gboolean prompt = (w >> 30) & 1;
      if (prompt) st.prompts++; else st.delayeds++;
      double t = now_ms * 1e-3;
      if (t < t0 || t >= t1) {
        st.outside_frame++;
        continue;
      }
      TlEvent e = {0};
      switch (tl_mmr_decode_bin(w & 0x3fffffffu, &e.a, &e.b)) {
      case TL_MMR_GAP: st.dropped_gap++; continue;
      case TL_MMR_OUT_OF_RANGE: st.dropped_range++; continue;
      default: break;
      }
      if (prompt) st.kept_prompts++; else st.kept_delayeds++;
      if (keep) g_array_append_val(prompt ? prompts : delayed, e);
    }
  }
  tl_progress_set_done((double)done);
  if (have_tag) st.duration_s = (st.last_ms - (double)st.first_ms + 1) * 1e-3;
  if (keep) {
    lm = g_new0(TlListmode, 1);
    lm->scanner = tl_mmr_scanner_new();
    lm->n_events = prompts->len;
    lm->events = (TlEvent *)(void *)g_array_free(prompts, prompts->len == 0);
    prompts = NULL;
    if (!lm->events) lm->events = g_new0(TlEvent, 1);
    lm->n_delayed = delayed->len;
    lm->delayed = (TlEvent *)(void *)g_array_free(delayed, delayed->len == 0);
    delayed = NULL;
    if (have_tag) {
      double end = (st.last_ms + 1.0) * 1e-3;
      lm->start_s = MAX(t0, st.first_ms * 1e-3);
      lm->duration_s = MAX(0.0, MIN(t1, end) - lm->start_s);
    }
    g_autofree char *base = g_path_get_basename(h.data_path);
    lm->description = g_strdup_printf(
        "Siemens Biograph mMR list mode %s: %" G_GUINT64_FORMAT " prompts, %" G_GUINT64_FORMAT
        " delayeds kept (frame %g..%g s; %" G_GUINT64_FORMAT " outside, %" G_GUINT64_FORMAT
        " on gaps, %" G_GUINT64_FORMAT " out of range)", base, st.kept_prompts, st.kept_delayeds,
        lm->start_s, lm->start_s + lm->duration_s, st.outside_frame, st.dropped_gap,
        st.dropped_range);
  }
  if (stats) *stats = st;
out:
  if (stepping) tl_progress_end();
  if (f) fclose(f);
  if (prompts) g_array_free(prompts, TRUE);
  if (delayed) g_array_free(delayed, TRUE);
  header_clear(&h);
  return lm;
}

TlListmode *tl_mmr_load(const char *path, const TlMmrOptions *opt, TlMmrStats *stats,
                        GError **error) {
  return decode(path, opt, stats, TRUE, error);
}

gboolean tl_mmr_scan(const char *path, TlMmrStats *stats, GError **error) {
  GError *e = NULL;
  decode(path, NULL, stats, FALSE, &e);
  if (e) {
    g_propagate_error(error, e);
    return FALSE;
  }
  return TRUE;
}

/* --- the format table's entry --- */

static gboolean head_has(const guint8 *head, gsize n, const char *word) {
  g_autofree char *text = g_ascii_strdown((const char *)head, (gssize)n);
  return strstr(text, word) != NULL;
}

static guint mmr_probe(const char *path, const guint8 *head, gsize n) {
  if (tl_format_head_starts_with(head, n, "!INTERFILE")) {
    /* above a generic Interfile reader only for an mMR list-mode header */
    gboolean listmode = head_has(head, n, "coincidencelist") || head_has(head, n, "petlink") ||
                        head_has(head, n, "lm event and tag words");
    gboolean mmr = head_has(head, n, "originating system:=2008") ||
                   head_has(head, n, "originating system := 2008") || head_has(head, n, "mmr");
    return listmode && mmr ? TL_FORMAT_SURE + 10 : 0;
  }
  if (!tl_format_path_has_extension(path, ".l")) return 0;
  g_autofree char *hdr = find_header(path);
  return hdr ? TL_FORMAT_SURE : TL_FORMAT_EXTENSION;
}

static gpointer mmr_load(const char *path, GError **error) {
  return tl_mmr_load(path, NULL, NULL, error);
}

static gboolean mmr_describe(const char *path, GString *out, GError **error) {
  TlMmrStats s;
  if (!tl_mmr_scan(path, &s, error)) return FALSE;
  g_string_append_printf(
      out,
      "holds: PET list mode\nmodality: PET\nscanner: Siemens Biograph mMR, %u crystals (%u rings "
      "x %u, 56 blocks of 8 + 1 gap position; at 335 mm: 328 mm inner radius + 7 mm average "
      "depth of interaction, as STIR), max ring difference %u\nTOF: no\n"
      "words: %" G_GUINT64_FORMAT "\nprompts: %" G_GUINT64_FORMAT "\ndelayeds: %" G_GUINT64_FORMAT
      "\ntime tags: %" G_GUINT64_FORMAT " (%u..%u ms)\nother tags: %" G_GUINT64_FORMAT
      " (%" G_GUINT64_FORMAT " dead time, %" G_GUINT64_FORMAT " motion, %" G_GUINT64_FORMAT
      " monitoring)\n"
      "events dropped: %" G_GUINT64_FORMAT " on block gaps, %" G_GUINT64_FORMAT
      " bin address out of range\nduration: %g s\n",
      TL_MMR_RINGS * TL_MMR_CRYSTALS_PER_RING, TL_MMR_RINGS, TL_MMR_CRYSTALS_PER_RING,
      TL_MMR_MAX_RING_DIFFERENCE, s.words, s.prompts, s.delayeds, s.time_tags, s.first_ms,
      s.last_ms, s.dead_time_tags + s.motion_tags + s.monitor_tags, s.dead_time_tags,
      s.motion_tags, s.monitor_tags, s.dropped_gap, s.dropped_range, s.duration_s);
  if (s.header_words || s.header_duration_s > 0)
    g_string_append_printf(out, "header (whole acquisition): %" G_GUINT64_FORMAT " words, %g s\n",
                           s.header_words, s.header_duration_s);
  return TRUE;
}

/* The header's data file, or the data file's header. */
static char **mmr_companions(const char *path, gboolean writing) {
  if (writing || !g_file_test(path, G_FILE_TEST_IS_REGULAR)) return NULL;
  char *other = NULL;
  if (head_is_interfile(path)) {
    Header h = {0};
    if (read_header(path, &h, NULL)) other = g_steal_pointer(&h.data_path);
    header_clear(&h);
  } else {
    other = find_header(path);
  }
  if (!other) return NULL;
  char **v = g_new0(char *, 2);
  v[0] = other;
  return v;
}

const TlFormatClass tl_format_mmr = {
    .name = "mmr",
    .summary = "Siemens Biograph mMR list mode (.l + Interfile header; prompts, delayeds, time tags)",
    .kind = TL_DATA_PET_LISTMODE,
    .extensions = ".l .l.hdr",
    .probe = mmr_probe,
    .describe = mmr_describe,
    .load = mmr_load,
    .companions = mmr_companions,
};
