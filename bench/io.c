/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/io: read and convert throughput of list-mode files, one row per list-mode format of the
 * table (compute/tl-formats.h) that can write (so the bench can make its file), against a plain
 * fread of the same file's bytes in the same run (the ceiling any reader meets on this disk and
 * page cache).
 *
 *   ./build/bench/io [--events N] [--reps R] [--dir DIR]     (default 10^7 events, 3 reps)
 *
 * Per format: the file is written once (untimed), then per repetition: fread of every byte of
 * every file it wrote (header and data) into one buffer each; the format's load (decode + checks, to a TlListmode); convert = load + save
 * as .tlm. Best of R; events/s and MB/s (file bytes / s; 1 MB = 10^6 B). The page cache is
 * warm for all three (the file was just written or read): this measures the reader, not the
 * disk. */
#include "dataset/tl-formats.h"
#include "pet/scanner/tl-listmode.h"
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now(void) { return g_get_monotonic_time() * 1e-6; }

/* fread of every file in `dir` (a format may write a header and a data file: CASToR's .cdh +
 * .cdf, Interfile's .hs + .s), each into one buffer; *bytes = their total. */
static double time_fread(const char *dir, guint64 *bytes) {
  double t = now();
  *bytes = 0;
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    FILE *f = g_fopen(path, "rb");
    if (!f) g_error("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = g_malloc(MAX(n, 1));
    if (fread(buf, 1, n, f) != (size_t)n) g_error("%s: short read", path);
    fclose(f);
    volatile char sink = buf[n / 2];
    (void)sink;
    g_free(buf);
    *bytes += (guint64)n;
  }
  return now() - t;
}

static void empty_dir(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_remove(path);
  }
  g_rmdir(dir);
}

/* A TOF acquisition on the DMI: crystal pairs spread over the whole ring, ids and TOF bins from
 * a fixed LCG (a list-mode file's content does not change read speed, only its size). */
static TlListmode *make_events(guint64 n) {
  GError *error = NULL;
  TlScanner *s = tl_scanner_new_preset("dmi", &error);
  g_assert_no_error(error);
  TlListmode *lm = tl_listmode_new(s, n);
  lm->has_tof = TRUE;
  guint64 x = 12345;
  guint cpr = s->crystals_per_ring, half = (s->tof_bins - 1) / 2;
  for (guint64 i = 0; i < n;) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    guint ra = (x >> 20) % s->n_rings, rb = (x >> 28) % s->n_rings;
    guint ca = (x >> 36) % cpr, cb = (ca + cpr / 4 + (x >> 48) % (cpr / 2)) % cpr;
    guint a = ra * cpr + ca, b = rb * cpr + cb;
    if (!tl_scanner_pair_allowed(s, a, b)) continue;
    lm->events[i].a = MIN(a, b);
    lm->events[i].b = MAX(a, b);
    lm->events[i].tof_bin = (gint32)((x >> 8) % s->tof_bins) - (gint32)half;
    i++;
  }
  return lm;
}

int main(int argc, char **argv) {
  gint64 events = 10000000;
  int reps = 3;
  g_autofree char *dir_opt = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_INT64, &events, "List-mode events per file (10^7)", "N"},
      {"reps", 'r', 0, G_OPTION_ARG_INT, &reps, "Repetitions, best taken (3)", "R"},
      {"dir", 0, 0, G_OPTION_ARG_FILENAME, &dir_opt, "Folder for the files (a temp folder)", "DIR"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- list-mode read/convert throughput");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error) || events < 1 || reps < 1) {
    fprintf(stderr, "io: %s\n", error ? error->message : "--events and --reps must be >= 1");
    return 2;
  }
  g_autofree char *dir = dir_opt ? g_strdup(dir_opt) : g_dir_make_tmp("tl-bench-io-XXXXXX", NULL);
  g_autoptr(TlListmode) lm = make_events((guint64)events);
  printf("%" G_GINT64_FORMAT " events (DMI, TOF), best of %d, files in %s\n", events, reps, dir);
  printf("%-10s %10s | %9s %9s | %9s %9s %6s | %9s %9s %6s\n", "format", "file MB", "fread s",
         "MB/s", "load s", "Mev/s", "/fread", "convert s", "Mev/s", "/fread");
  const TlFormatClass *const *all = tl_formats();
  const TlFormatClass *tlm = tl_format_find("tlm");
  for (guint i = 0; all[i]; i++) {
    const TlFormatClass *f = all[i];
    if (f->kind != TL_DATA_PET_LISTMODE || !f->save || !f->load) continue;
    g_auto(GStrv) exts = g_strsplit(f->extensions, " ", 2);
    g_autofree char *sub = g_strdup_printf("%s/%s", dir, f->name);
    g_mkdir_with_parents(sub, 0700);
    g_autofree char *path = g_strdup_printf("%s/events%s", sub, exts[0]);
    g_autofree char *out = g_strdup_printf("%s/converted.tlm", dir);
    if (!f->save(lm, path, &error)) {
      printf("%-10s cannot write the bench's events: %s\n", f->name, error->message);
      g_clear_error(&error);
      continue;
    }
    double best_read = G_MAXDOUBLE, best_load = G_MAXDOUBLE, best_conv = G_MAXDOUBLE;
    guint64 bytes = 0;
    for (int r = 0; r < reps; r++) {
      best_read = MIN(best_read, time_fread(sub, &bytes));
      double t = now();
      TlListmode *got = f->load(path, &error);
      if (!got) g_error("%s: %s", f->name, error->message);
      best_load = MIN(best_load, now() - t);
      if (got->n_events != (guint64)events)
        g_error("%s: %" G_GUINT64_FORMAT " events back, wrote %" G_GINT64_FORMAT, f->name,
                got->n_events, events);
      tl_listmode_free(got);
      t = now();
      got = f->load(path, &error);
      if (!got || !tl_format_save(tlm, got, out, &error)) g_error("%s: %s", f->name, error->message);
      best_conv = MIN(best_conv, now() - t);
      tl_listmode_free(got);
    }
    double mb = bytes / 1e6;
    printf("%-10s %10.1f | %9.3f %9.0f | %9.3f %9.2f %6.2f | %9.3f %9.2f %6.2f\n", f->name, mb,
           best_read, mb / best_read, best_load, events / best_load / 1e6, best_read / best_load,
           best_conv, events / best_conv / 1e6, best_read / best_conv);
    printf("%-10s %10s   %9s %9s   %9s %9.0f MB/s     %9s %9.0f MB/s\n", "", "", "", "", "",
           mb / best_load, "", mb / best_conv);
    empty_dir(sub);
    g_remove(out);
  }
  /* read-only formats: the real mMR file of ../shared/data (254 816 words, 1 MB), decoded */
  const char *mmr = "../shared/data/mmr/small_listmode_file.l";
  const TlFormatClass *fm = tl_format_find("mmr");
  if (fm && g_file_test(mmr, G_FILE_TEST_EXISTS)) {
    guint64 bytes = 0;
    double best_read = G_MAXDOUBLE, best_load = G_MAXDOUBLE;
    guint64 n = 0;
    for (int r = 0; r < reps * 5; r++) {
      double t = now();
      gchar *buf = NULL;
      gsize len = 0;
      if (!g_file_get_contents(mmr, &buf, &len, NULL)) g_error("%s: cannot read", mmr);
      best_read = MIN(best_read, now() - t);
      bytes = len;
      g_free(buf);
      t = now();
      TlListmode *got = fm->load(mmr, &error);
      if (!got) g_error("mmr: %s", error->message);
      best_load = MIN(best_load, now() - t);
      n = got->n_events + got->n_delayed;
      tl_listmode_free(got);
    }
    double mb = bytes / 1e6;
    printf("%-10s %10.1f | %9.4f %9.0f | %9.4f %9.2f %6.2f |  (real file: %" G_GUINT64_FORMAT
           " prompts + delayeds; read only)\n", "mmr", mb, best_read, mb / best_read, best_load,
           n / best_load / 1e6, best_read / best_load, n);
  }
  if (!dir_opt) g_rmdir(dir);
  return 0;
}
