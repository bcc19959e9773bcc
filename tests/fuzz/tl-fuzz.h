/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared by the libFuzzer harnesses: a per-process scratch file for readers that take a path,
 * and a round-trip assertion that aborts (libFuzzer reports it as a crash with the input). */
#pragma once
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TL_FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "round trip broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                \
      fputc('\n', stderr);                                                         \
      abort();                                                                     \
    }                                                                              \
  } while (0)

/* A path in a private folder, unique to this process: "<dir>/<name>". */
static inline char *tl_fuzz_path(const char *name) {
  static char *dir;
  if (!dir) {
    dir = g_dir_make_tmp("tl-fuzz-XXXXXX", NULL);
    if (!dir) abort();
  }
  return g_build_filename(dir, name, NULL);
}

static inline void tl_fuzz_write(const char *path, const guint8 *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
}

/* The input as a NUL-terminated string (a NUL inside ends it, as for any C text). */
static inline char *tl_fuzz_text(const guint8 *data, size_t size) {
  return g_strndup((const char *)data, size);
}

/* Every message must be one line of valid UTF-8 (GTK shows nothing for invalid text). */
static inline void tl_fuzz_check_error(const GError *e) {
  TL_FUZZ_CHECK(e && e->message && *e->message, "no message");
  TL_FUZZ_CHECK(g_utf8_validate(e->message, -1, NULL), "invalid UTF-8 in: %s", e->message);
}
