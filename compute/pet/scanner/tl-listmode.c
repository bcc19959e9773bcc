/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List-mode files (docs/formats.md): a text header that embeds the scanner description,
 * then n_events little-endian TlEvent records of 12 bytes. */
#define _POSIX_C_SOURCE 200809L /* getline, ftello */
#include "tl-listmode.h"
#include "image/tl-file.h"
#include "image/tl-format.h"
#include <errno.h>
#include <math.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAGIC "TOMOLAB-LISTMODE 1"

TlListmode *tl_listmode_new(TlScanner *scanner_owned, guint64 n_events) {
  TlListmode *lm = g_new0(TlListmode, 1);
  lm->scanner = scanner_owned;
  lm->n_events = n_events;
  lm->events = g_new0(TlEvent, MAX(n_events, 1));
  lm->description = g_strdup("");
  return lm;
}

void tl_listmode_free(TlListmode *lm) {
  if (!lm) return;
  tl_scanner_free(lm->scanner);
  g_free(lm->events);
  g_free(lm->delayed);
  g_free(lm->tags);
  g_free(lm->singles);
  g_free(lm->description);
  g_free(lm);
}

gboolean tl_listmode_validate(const TlListmode *lm, const char *source, GError **error) {
  const TlScanner *s = lm->scanner;
  const char *src = source ? source : "list mode";
  if (lm->has_tof && s->tof_bins == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: events carry TOF bins but scanner '%s' has no TOF (tof_bins = 0)", src, s->name);
    return FALSE;
  }
  gint32 half = lm->has_tof ? (gint32)(s->tof_bins - 1) / 2 : 0;
  /* the prompts, then the delayed coincidences (same checks, named "delayed") */
  for (int k = 0; k < 2; k++) {
    const TlEvent *ev = k ? lm->delayed : lm->events;
    guint64 n = k ? (lm->delayed ? lm->n_delayed : 0) : lm->n_events;
    const char *what = k ? "delayed event" : "event";
    for (guint64 i = 0; i < n; i++) {
      const TlEvent *e = &ev[i];
      if (e->a >= s->n_crystals || e->b >= s->n_crystals) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s: %s %" G_GUINT64_FORMAT ": crystal id %u out of range (scanner '%s' has "
                    "%u crystals: expected < %u)", src, what, i, e->a >= s->n_crystals ? e->a : e->b,
                    s->name, s->n_crystals, s->n_crystals);
        return FALSE;
      }
      if (!tl_scanner_pair_allowed(s, e->a, e->b)) {
        const TlCrystal *ca = &s->crystals[e->a], *cb = &s->crystals[e->b];
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s: %s %" G_GUINT64_FORMAT ": crystals %u and %u are not an allowed pair "
                    "(groups %u/%u must differ, rings %u/%u at most %u apart)", src, what, i, e->a,
                    e->b, ca->group, cb->group, ca->ring, cb->ring, s->max_ring_difference);
        return FALSE;
      }
      if (e->tof_bin < -half || e->tof_bin > half) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s: %s %" G_GUINT64_FORMAT ": TOF bin %d out of range (expected %d..%d)",
                    src, what, i, e->tof_bin, -half, half);
        return FALSE;
      }
    }
  }
  for (guint64 i = 0; lm->tags && i < lm->n_events; i++)
    if (lm->tags[i] >= TL_TAG_N) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: field 'tags': event %" G_GUINT64_FORMAT " has tag %u (expected 0 true, "
                  "1 scattered or 2 random)", src, i, lm->tags[i]);
      return FALSE;
    }
  if (lm->singles) {
    if (!(lm->coincidence_window_ns > 0 && lm->coincidence_window_ns <= 1000)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: field 'coincidence_window_ns': %g "
                  "(expected a window in (0, 1000] ns with the singles)", src,
                  lm->coincidence_window_ns);
      return FALSE;
    }
    for (guint i = 0; i < s->n_crystals; i++)
      if (!(lm->singles[i] >= 0 && lm->singles[i] <= 1e12)) { /* NaN fails too */
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: field 'singles': crystal %u has %g "
                    "per second (expected a finite rate in [0, 1e12])", src, i, lm->singles[i]);
        return FALSE;
      }
  }
  return TRUE;
}

gboolean tl_listmode_tag_counts(const TlListmode *lm, guint64 counts[TL_TAG_N]) {
  memset(counts, 0, sizeof(guint64) * TL_TAG_N);
  if (!lm->tags) return FALSE;
  for (guint64 i = 0; i < lm->n_events; i++)
    if (lm->tags[i] < TL_TAG_N) counts[lm->tags[i]]++;
  return TRUE;
}

gboolean tl_listmode_save(const TlListmode *lm, const char *path, GError **error) {
  if (!tl_scanner_validate(lm->scanner, error) || !tl_listmode_validate(lm, path, error))
    return FALSE;
  g_autofree char *scanner = tl_scanner_to_text(lm->scanner);
  g_autofree char *desc = g_strdup(lm->description ? lm->description : "");
  g_strdelimit(desc, "\r\n", ' ');
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  fprintf(f, MAGIC "\nevents = %" G_GUINT64_FORMAT "\nevent_bytes = 12\n"
             "byte_order = little-endian\ntof = %d\n", lm->n_events, lm->has_tof ? 1 : 0);
  /* optional (older files have none): the delayed coincidences after the prompts, and the
   * acquisition time the events span */
  if (lm->n_delayed) fprintf(f, "delayed = %" G_GUINT64_FORMAT "\n", lm->n_delayed);
  /* optional: the simulation's truth per prompt, one byte each after the delayed block */
  if (lm->tags) fprintf(f, "tags = 1\n");
  /* optional: singles rates, n_crystals float64 after the tags, with their window */
  if (lm->singles) {
    char w[32];
    tl_format_double(w, lm->coincidence_window_ns);
    fprintf(f, "singles = 1\ncoincidence_window_ns = %s\n", w);
  }
  if (lm->duration_s > 0) {
    char a[32], b[32];
    tl_format_double(a, lm->start_s);
    tl_format_double(b, lm->duration_s);
    fprintf(f, "start_s = %s\nduration_s = %s\n", a, b);
  }
  fprintf(f, "description = %s\nbegin_scanner\n%send_scanner\nend_header\n", desc, scanner);
  gboolean ok = TRUE;
  const TlEvent *blocks[2] = {lm->events, lm->delayed};
  guint64 counts[2] = {lm->n_events, lm->delayed ? lm->n_delayed : 0};
  for (int k = 0; k < 2 && ok; k++) {
    if (counts[k] == 0) continue; /* no delayed block: fwrite must not see its NULL */
    if (G_BYTE_ORDER == G_LITTLE_ENDIAN) {
      ok = fwrite(blocks[k], sizeof(TlEvent), counts[k], f) == counts[k];
    } else {
      for (guint64 i = 0; ok && i < counts[k]; i++) {
        guint32 w[3] = {GUINT32_TO_LE(blocks[k][i].a), GUINT32_TO_LE(blocks[k][i].b),
                        GUINT32_TO_LE((guint32)blocks[k][i].tof_bin)};
        ok = fwrite(w, 12, 1, f) == 1;
      }
    }
  }
  if (ok && lm->tags && lm->n_events)
    ok = fwrite(lm->tags, 1, lm->n_events, f) == lm->n_events;
  for (guint i = 0; ok && lm->singles && i < lm->scanner->n_crystals; i++) {
    guint64 u;
    memcpy(&u, &lm->singles[i], 8);
    u = GUINT64_TO_LE(u);
    ok = fwrite(&u, 8, 1, f) == 1;
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
  guint64 events, delayed;
  double start_s, duration_s;
  gboolean tof, tags, singles;
  double window_ns;
  char *description;
  GString *scanner;
  guint scanner_line;
  guint seen;
} Header;

/* The bytes after the header must be exactly 12 x (events + delayed), plus one tag byte per
 * event with `tags = 1` and 8 bytes per crystal with `singles = 1`; every count is held to the
 * file's size here, before allocating. */
static gboolean check_size(const char *path, const Header *h, guint n_crystals, guint64 have,
                           GError **error) {
  gboolean fits = h->delayed <= G_MAXUINT64 / 12 - h->events; /* events <= MAX / 12 (header) */
  guint64 body = fits ? 12 * (h->events + h->delayed) : G_MAXUINT64;
  guint64 tag_bytes = h->tags ? h->events : 0;
  guint64 singles_bytes = h->singles ? 8 * (guint64)n_crystals : 0;
  fits = fits && tag_bytes <= G_MAXUINT64 - body - singles_bytes;
  guint64 want = fits ? body + tag_bytes + singles_bytes : G_MAXUINT64;
  if (fits && have == want) return TRUE;
  if (fits && (h->tags || h->singles) && have >= body && have < want) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: truncated %s block: field '%s' needs %" G_GUINT64_FORMAT " bytes after "
                "the events, but %" G_GUINT64_FORMAT " follow them", path,
                h->singles && have >= body + tag_bytes ? "singles" : "tags",
                h->singles && have >= body + tag_bytes ? "singles" : "tags",
                tag_bytes + singles_bytes, have - body);
    return FALSE;
  }
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "%s: %s: the header announces %" G_GUINT64_FORMAT " events and %" G_GUINT64_FORMAT
              " delayed%s%s (%" G_GUINT64_FORMAT " bytes) but %" G_GUINT64_FORMAT " bytes follow it",
              path, fits && have < want ? "truncated" : "oversized", h->events,
              h->delayed, h->tags ? " and their tags" : "", h->singles ? " and singles" : "",
              want, have);
  return FALSE;
}

/* The singles block at the end, after the tags: n_crystals little-endian float64. */
static double *read_singles(FILE *f, const char *path, guint n, GError **error) {
  double *v = g_try_new(double, MAX(n, 1)); /* n bounded by the file size (check_size) */
  for (guint i = 0; v && i < n; i++) {
    guint64 u;
    if (fread(&u, 8, 1, f) != 1) {
      g_clear_pointer(&v, g_free);
      break;
    }
    u = GUINT64_FROM_LE(u);
    memcpy(&v[i], &u, 8);
  }
  if (!v) g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in field 'singles'", path);
  return v;
}

/* Reads the header lines up to "end_header"; the stream is left at the first event. */
static gboolean read_header(FILE *f, const char *path, Header *h, GError **error) {
  char *line = NULL;
  size_t cap = 0;
  guint lineno = 0;
  gboolean in_scanner = FALSE, done = FALSE, ok = FALSE;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  while (!done) {
    ssize_t len = getline(&line, &cap, f);
    lineno++;
    if (len < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header ends before 'end_header' (line %u)",
                  path, lineno);
      goto out;
    }
    if (lineno == 1) {
      g_strchomp(line);
      if (strcmp(line, MAGIC) != 0) {
        /* quoted: a binary file's first "line" is raw bytes, unfit for a message */
        g_autofree char *q = tl_text_quote(line, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s: not a Tomolab list-mode file (first line '%s', expected '" MAGIC "')",
                    path, q);
        goto out;
      }
      continue;
    }
    if (!tl_text_check(path, line, (gsize)len, lineno, error)) goto out;
    if (in_scanner) {
      if (strcmp(g_strchomp(line), "end_scanner") == 0)
        in_scanner = FALSE;
      else
        g_string_append_printf(h->scanner, "%s\n", line);
      continue;
    }
    char *key, *value;
    gboolean bad;
    g_strchomp(line);
    if (g_str_has_prefix(line, "description =")) { /* free text: '#' is no comment here */
      if (!tl_kv_once(keys_seen, path, "description", lineno, error)) goto out;
      g_free(h->description);
      h->description = g_strdup(g_strstrip(line + strlen("description =")));
      continue;
    }
    if (strcmp(line, "begin_scanner") == 0) {
      if (!tl_kv_once(keys_seen, path, line, lineno, error)) goto out;
      in_scanner = TRUE;
      h->scanner_line = lineno + 1;
      h->seen |= 16;
      continue;
    }
    if (strcmp(line, "end_header") == 0) break;
    if (!tl_kv_split(line, &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", path, lineno);
      goto out;
    }
    if (!tl_kv_once(keys_seen, path, key, lineno, error)) goto out;
    guint64 v;
    if (strcmp(key, "events") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, G_MAXUINT64 / 12, &h->events, error)) goto out;
      h->seen |= 1;
    } else if (strcmp(key, "event_bytes") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, G_MAXUINT32, &v, error)) goto out;
      if (v != 12) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'event_bytes': value '%s' (expected 12)", path, lineno, value);
        goto out;
      }
      h->seen |= 2;
    } else if (strcmp(key, "byte_order") == 0) {
      if (strcmp(value, "little-endian") != 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'byte_order': value '%s' (expected 'little-endian')", path, lineno,
                    value);
        goto out;
      }
      h->seen |= 4;
    } else if (strcmp(key, "tof") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, 1, &v, error)) goto out;
      h->tof = v != 0;
      h->seen |= 8;
    } else if (strcmp(key, "tags") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, 1, &v, error)) goto out;
      h->tags = v != 0;
    } else if (strcmp(key, "singles") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, 1, &v, error)) goto out;
      h->singles = v != 0;
    } else if (strcmp(key, "coincidence_window_ns") == 0) {
      if (!tl_kv_doubles(path, lineno, key, value, 1, &h->window_ns, error)) goto out;
    } else if (strcmp(key, "delayed") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, G_MAXUINT64 / 12, &h->delayed, error)) goto out;
    } else if (strcmp(key, "start_s") == 0 || strcmp(key, "duration_s") == 0) {
      double t;
      if (!tl_kv_doubles(path, lineno, key, value, 1, &t, error)) goto out;
      if (!(t >= 0) || !isfinite(t)) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key '%s': value '%s' (expected a finite time >= 0 in seconds)", path,
                    lineno, key, value);
        goto out;
      }
      *(key[0] == 's' ? &h->start_s : &h->duration_s) = t;
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", path, lineno, key);
      goto out;
    }
  }
  static const char *names[] = {"events", "event_bytes", "byte_order", "tof", "begin_scanner"};
  for (int i = 0; i < 5; i++)
    if (!(h->seen & (1u << i))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks '%s'", path, names[i]);
      goto out;
    }
  ok = TRUE;
out:
  free(line);
  return ok;
}

TlListmode *tl_listmode_load(const char *path, GError **error) {
  if (!tl_file_check_input(path, "list-mode file", error)) return NULL;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", path, g_strerror(e));
    return NULL;
  }
  Header h = {.scanner = g_string_new(NULL)};
  TlListmode *lm = NULL;
  TlScanner *scanner = NULL;
  char *src = g_strdup_printf("%s (scanner)", path);
  if (!read_header(f, path, &h, error)) goto out;
  scanner = tl_scanner_from_text(h.scanner->str, src, h.scanner_line, error);
  if (!scanner) goto out;
  struct stat st;
  off_t start = ftello(f);
  if (fstat(fileno(f), &st) != 0 || start < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", path);
    goto out;
  }
  if (!check_size(path, &h, scanner->n_crystals, (guint64)st.st_size - (guint64)start, error))
    goto out;
  TlEvent *events = g_try_new(TlEvent, MAX(h.events, 1));
  if (!events) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%s: no memory for %" G_GUINT64_FORMAT
                " events", path, h.events);
    goto out;
  }
  if (fread(events, 12, h.events, f) != h.events) {
    g_free(events);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in the events", path);
    goto out;
  }
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    for (guint64 i = 0; i < h.events; i++) {
      events[i].a = GUINT32_FROM_LE(events[i].a);
      events[i].b = GUINT32_FROM_LE(events[i].b);
      events[i].tof_bin = (gint32)GUINT32_FROM_LE((guint32)events[i].tof_bin);
    }
  lm = g_new0(TlListmode, 1);
  lm->scanner = g_steal_pointer(&scanner);
  lm->n_events = h.events;
  lm->events = events;
  lm->has_tof = h.tof;
  lm->description = g_strdup(h.description ? h.description : "");
  lm->start_s = h.start_s;
  lm->duration_s = h.duration_s;
  if (h.delayed) {
    lm->delayed = g_try_new(TlEvent, h.delayed); /* bounded by the file size above */
    if (!lm->delayed || fread(lm->delayed, 12, h.delayed, f) != h.delayed) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in the delayed events", path);
      g_clear_pointer(&lm, tl_listmode_free);
      goto out;
    }
    lm->n_delayed = h.delayed;
    if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
      for (guint64 i = 0; i < h.delayed; i++) {
        lm->delayed[i].a = GUINT32_FROM_LE(lm->delayed[i].a);
        lm->delayed[i].b = GUINT32_FROM_LE(lm->delayed[i].b);
        lm->delayed[i].tof_bin = (gint32)GUINT32_FROM_LE((guint32)lm->delayed[i].tof_bin);
      }
  }
  if (h.tags) {
    lm->tags = g_try_malloc(MAX(h.events, 1)); /* bounded by the file size above */
    if (!lm->tags || fread(lm->tags, 1, h.events, f) != h.events) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in field 'tags'", path);
      g_clear_pointer(&lm, tl_listmode_free);
      goto out;
    }
  }
  if (h.singles) {
    if (!(lm->singles = read_singles(f, path, lm->scanner->n_crystals, error))) {
      g_clear_pointer(&lm, tl_listmode_free);
      goto out;
    }
    lm->coincidence_window_ns = h.window_ns;
  }
  if (!tl_listmode_validate(lm, path, error)) g_clear_pointer(&lm, tl_listmode_free);
out:
  fclose(f);
  g_free(src);
  tl_scanner_free(scanner);
  g_string_free(h.scanner, TRUE);
  g_free(h.description);
  return lm;
}

static int cmp_u64(const void *x, const void *y) {
  guint64 a = *(const guint64 *)x, b = *(const guint64 *)y;
  return a < b ? -1 : a > b;
}

GArray *tl_listmode_histogram(const TlListmode *lm) {
  guint64 *keys = g_new(guint64, MAX(lm->n_events, 1));
  for (guint64 i = 0; i < lm->n_events; i++) {
    guint32 a = lm->events[i].a, b = lm->events[i].b;
    keys[i] = a < b ? (guint64)a << 32 | b : (guint64)b << 32 | a;
  }
  qsort(keys, lm->n_events, sizeof *keys, cmp_u64);
  GArray *bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
  for (guint64 i = 0; i < lm->n_events;) {
    guint64 j = i;
    while (j < lm->n_events && keys[j] == keys[i]) j++;
    TlBin bin = {(guint32)(keys[i] >> 32), (guint32)keys[i], (float)(j - i)};
    g_array_append_val(bins, bin);
    i = j;
  }
  g_free(keys);
  return bins;
}

TlArray *tl_listmode_upload(const TlListmode *lm, TlContext *ctx, guint64 first, guint64 count,
                            GError **error) {
  if (first > lm->n_events || count > lm->n_events - first) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "events %" G_GUINT64_FORMAT "..+%" G_GUINT64_FORMAT " out of range (%"
                G_GUINT64_FORMAT " events)", first, count, lm->n_events);
    return NULL;
  }
  TlArray *a = tl_array_new(ctx, MAX(count, 1), sizeof(TlEvent), error);
  if (a && count && !tl_array_upload_range(a, 0, count, lm->events + first, error))
    g_clear_pointer(&a, tl_array_free);
  return a;
}

/* --- the format table's entry (compute/tl-formats.c) --- */

static guint tlm_probe(const char *path, const guint8 *head, gsize n) {
  if (tl_format_head_starts_with(head, n, MAGIC)) return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".tlm") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer tlm_load(const char *path, GError **error) {
  return tl_listmode_load(path, error);
}

static gboolean tlm_save(gconstpointer data, const char *path, GError **error) {
  return tl_listmode_save(data, path, error);
}

const TlFormatClass tl_format_tlm = {
    .name = "tlm",
    .summary = "Tomolab list mode (.tlm: text header with the scanner + 12-byte events)",
    .kind = TL_DATA_PET_LISTMODE,
    .extensions = ".tlm",
    .probe = tlm_probe,
    .load = tlm_load,
    .save = tlm_save,
};

/* The header, the scanner, and the stream at the first event; the file size must match the
 * announced events (as tl_listmode_load checks). */
static FILE *open_checked(const char *path, Header *h, TlScanner **scanner, GError **error) {
  if (!tl_file_check_input(path, "list-mode file", error)) return NULL;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", path, g_strerror(e));
    return NULL;
  }
  g_autofree char *src = g_strdup_printf("%s (scanner)", path);
  struct stat st;
  off_t start;
  if (!read_header(f, path, h, error) ||
      !(*scanner = tl_scanner_from_text(h->scanner->str, src, h->scanner_line, error)))
    goto fail;
  start = ftello(f);
  if (fstat(fileno(f), &st) != 0 || start < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", path);
    goto fail;
  }
  /* the delayed events (optional) follow the prompts; a ranged read takes prompts only */
  if (!check_size(path, h, (*scanner)->n_crystals, (guint64)st.st_size - (guint64)start, error))
    goto fail;
  return f;
fail:
  g_clear_pointer(scanner, tl_scanner_free);
  fclose(f);
  return NULL;
}

gboolean tl_listmode_count_events(const char *path, guint64 *n_events, GError **error) {
  Header h = {.scanner = g_string_new(NULL)};
  TlScanner *scanner = NULL;
  FILE *f = open_checked(path, &h, &scanner, error);
  if (f) {
    *n_events = h.events;
    fclose(f);
  }
  tl_scanner_free(scanner);
  g_string_free(h.scanner, TRUE);
  g_free(h.description);
  return f != NULL;
}

TlListmode *tl_listmode_load_range(const char *path, guint64 first, guint64 count,
                                   GError **error) {
  Header h = {.scanner = g_string_new(NULL)};
  TlScanner *scanner = NULL;
  TlListmode *lm = NULL;
  TlEvent *events = NULL;
  FILE *f = open_checked(path, &h, &scanner, error);
  if (!f) goto out;
  if (first > h.events || count > h.events - first) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: events %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " asked for, but the "
                "file holds %" G_GUINT64_FORMAT " events", path, first, first + count, h.events);
    goto out;
  }
  /* the count is bounded by the file size (open_checked) before allocating */
  if (!(events = g_try_new(TlEvent, MAX(count, 1)))) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%s: no memory for %" G_GUINT64_FORMAT
                " events", path, count);
    goto out;
  }
  off_t at = ftello(f);
  if (at < 0 || fseeko(f, at + (off_t)(first * 12), SEEK_SET) != 0 ||
      fread(events, 12, count, f) != count) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in events %" G_GUINT64_FORMAT
                " to %" G_GUINT64_FORMAT, path, first, first + count);
    goto out;
  }
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    for (guint64 i = 0; i < count; i++) {
      events[i].a = GUINT32_FROM_LE(events[i].a);
      events[i].b = GUINT32_FROM_LE(events[i].b);
      events[i].tof_bin = (gint32)GUINT32_FROM_LE((guint32)events[i].tof_bin);
    }
  lm = g_new0(TlListmode, 1);
  lm->scanner = g_steal_pointer(&scanner);
  lm->n_events = count;
  lm->events = g_steal_pointer(&events);
  lm->has_tof = h.tof;
  lm->description = g_strdup(h.description ? h.description : "");
  lm->start_s = h.start_s; /* the frame (recon --calibration under mpirun) */
  lm->duration_s = h.duration_s;
  /* the tags of the same range: one byte per event after the prompts and delayeds */
  if (h.tags && !((lm->tags = g_try_malloc(MAX(count, 1))) &&
                  fseeko(f, at + (off_t)(12 * (h.events + h.delayed) + first), SEEK_SET) == 0 &&
                  fread(lm->tags, 1, count, f) == count)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in field 'tags' of events %"
                G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, path, first, first + count);
    g_clear_pointer(&lm, tl_listmode_free);
    goto out;
  }
  /* the singles (every crystal's, whatever the range) at the end */
  if (h.singles) {
    guint n = lm->scanner->n_crystals;
    guint64 end = 12 * (h.events + h.delayed) + (h.tags ? h.events : 0);
    if (fseeko(f, at + (off_t)end, SEEK_SET) != 0 ||
        !(lm->singles = read_singles(f, path, n, error))) {
      if (error && !*error)
        g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in field 'singles'", path);
      g_clear_pointer(&lm, tl_listmode_free);
      goto out;
    }
    lm->coincidence_window_ns = h.window_ns;
  }
  if (!tl_listmode_validate(lm, path, error)) g_clear_pointer(&lm, tl_listmode_free);
out:
  if (f) fclose(f);
  g_free(events);
  tl_scanner_free(scanner);
  g_string_free(h.scanner, TRUE);
  g_free(h.description);
  return lm;
}
