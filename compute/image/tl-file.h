/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Small file helpers shared by the PET data formats (docs/formats.md): atomic binary
 * writes (temp file in the same folder + rename; temp files that killed processes left in
 * that folder are removed at the next save there) and "key = value" text lines whose
 * parse errors name the source, the line, the key, the value and what was expected. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include <stdio.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* Opens a temp file next to `path`; tl_file_commit flushes, closes and renames it over
 * `path`; tl_file_abort closes and removes it. Both free *tmp. */
TL_API FILE *tl_file_begin(const char *path, char **tmp, GError **error);
TL_API gboolean tl_file_commit(FILE *f, char **tmp, const char *path, GError **error);
TL_API void tl_file_abort(FILE *f, char **tmp);
/* Writes `text` to `path` atomically (temp file + rename). */
TL_API gboolean tl_file_write_text(const char *path, const char *text, GError **error);
/* A temp name next to `path` that keeps its extension (".nii.gz"...), for writers that
 * open files themselves. */
TL_API char *tl_file_temp_name(const char *path, const char *ext);

/* Temp files and folders that killed saves left in `dir` (names as tl_file_temp_name makes
 * them, of processes no longer running) are removed; every save does it in its folder,
 * tomolab-cli at its start in the working directory. */
TL_API void tl_file_remove_stale_temps(const char *dir);
/* rename(2) after a fault point (below); TRUE on success, errno set otherwise. */
TL_API gboolean tl_file_rename(const char *from, const char *to);
/* The test hook of every commit step (renames, removals of replaced data): with the
 * environment variable TL_TEST_FAIL_AT=N the Nth step of the process kills it (SIGKILL), so
 * the interrupt test (tests/test-file-interrupt.c) can stop a writer at every step. */
TL_API void tl_file_fault_point(void);

/* Two-file outputs (a header and the data file it names: .hv/.v, .mhd/.raw, .hs/.s,
 * .cdh/.cdf) commit by one rename (docs/reliability.md, "Crash-safe pairs"). A pair has two
 * data names, X.v (stable) and X~1.v (X.hv; tl_file_pair_data_paths). A save:
 *  1. writes the data to the name the current header does not name (tl_file_pair_next_data:
 *     X~1.v, or X.v when the header names X~1.v; `named_now` NULL when no readable header),
 *     temp file + fsync + rename;
 *  2. tl_file_pair_commit: renames the header naming it over the old one — the commit;
 *  3. when that was X~1.v: hard-links it to a temp renamed over X.v, then renames in a header
 *     naming X.v (each step leaves a header naming complete new data);
 *  4. removes the other name (the old data, or what a killed save left: tl_file_pair_finish).
 * A kill at any step leaves the old header with its intact data, or the new pair; the next
 * save removes the leftovers. `text` makes the header naming `data_name`. */
typedef char *(*TlFilePairText)(gconstpointer data, const char *data_name);
TL_API char **tl_file_pair_data_paths(const char *header, const char *data_ext);
TL_API char *tl_file_pair_next_data(const char *header, const char *data_ext,
                                    const char *named_now);
TL_API gboolean tl_file_pair_commit(const char *header, const char *data_ext,
                                    const char *data_path, TlFilePairText text,
                                    gconstpointer data, GError **error);
TL_API void tl_file_pair_finish(const char *header, const char *data_ext, const char *data_path);

/* Splits "key = value  # comment" in place. Returns FALSE for blank and comment lines;
 * sets *bad for a line with no '='. */
TL_API gboolean tl_kv_split(char *line, char **key, char **value, gboolean *bad);

/* The one rule on repeated keys, for every "key = value" and Interfile-style reader
 * (docs/reliability.md): a key given twice is refused, the message naming the source, the
 * key and both lines, since keeping either value silently reads another file than the one
 * written (a size given twice read half the data). `seen` comes from tl_kv_seen_new.
 * Interfile-style headers use tl_kv_once_or_same, which lets a key repeat with the very
 * same value: STIR writes "imaging modality := PET" twice, and section titles
 * ("!GENERAL DATA :=") carry none. */
TL_API GHashTable *tl_kv_seen_new(void);
TL_API gboolean tl_kv_once(GHashTable *seen, const char *src, const char *key, guint line,
                           GError **error);
TL_API gboolean tl_kv_once_or_same(GHashTable *seen, const char *src, const char *key,
                                   const char *value, guint line, GError **error);

/* Strict number parsers: the whole value must be consumed. */
TL_API gboolean tl_kv_uint(const char *src, guint line, const char *key, const char *value,
                    guint64 max, guint64 *out, GError **error);
TL_API gboolean tl_kv_doubles(const char *src, guint line, const char *key, const char *value,
                       guint n, double *out, GError **error);
TL_API gboolean tl_kv_int(const char *src, guint line, const char *key, const char *value,
                   gint64 *out, GError **error);

/* A double as float, out-of-range values as +-infinity (a plain cast of them is undefined
 * behaviour): the validation that follows refuses the infinity with the value named. */
TL_API float tl_float_from_double(double v);

/* `text` made fit for a one-line message: at most `max` bytes, invalid UTF-8 and control
 * characters shown as \xNN, so a binary file's bytes never reach a GError or a GTK label. */
TL_API char *tl_text_quote(const char *text, gssize len, gsize max);

/* Refuses what is not a readable regular file before a reader opens it: "no such file" and
 * "is a directory" say so instead of a parser's confusing complaint. `what` names the
 * expected kind ("list-mode file"). */
TL_API gboolean tl_file_check_input(const char *path, const char *what, GError **error);

/* Refuses a text header holding bytes that are not UTF-8 text (NUL, control characters
 * other than tab and CR, invalid sequences), naming the source, line and byte, so no later
 * message quotes binary garbage. */
TL_API gboolean tl_text_check(const char *src, const char *text, gsize len, guint first_line,
                       GError **error);

/* Shortest decimal text that reads back to exactly the same double / float. */
TL_API void tl_format_double(char buf[32], double v);
TL_API void tl_format_float(char buf[32], float v);

G_END_DECLS
