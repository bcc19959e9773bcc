/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Running a third-party file parser in a child process.
 *
 * Some libraries Tomolab reads through are not safe on damaged files: libhdf5 1.10 (Debian 12)
 * reads freed memory and segfaults on fuzzed Data Exchange files, inside H5Lexists/H5Aexists,
 * before any Tomolab check can run. Such a parser runs here in a forked child; the child sends
 * its result as bytes through a pipe and exits. A crash of the library ends the child, and the
 * caller gets a GError instead of a dead window. The parent never calls the library, and checks
 * what comes back as it checks a file: the length is bounded before allocating, and the caller
 * validates every field. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Runs in the child: reads `arg` (a file name), appends the result to `out` and returns TRUE,
 * or sets `error`. The child is a copy of the process as it was when forked. */
typedef gboolean (*TlIsolatedFunc)(const char *arg, GByteArray *out, GError **error);

/* Runs fn(arg) in a new child process and returns its bytes (at most max_bytes), or the
 * child's GError (TL_ERROR domain, its code and message), or an error naming `what` (e.g.
 * "'tooth.h5': libhdf5") when the child died or sent a malformed answer. Thread-safe. */
GBytes *tl_isolate_run(const char *what, TlIsolatedFunc fn, const char *arg, gsize max_bytes,
                       GError **error);

/* Bounds on one request: a damaged file can make a library loop, or allocate and touch
 * gigabytes (libhdf5 1.10 on fuzzed files: the kernel's OOM killer ended it after a minute). */
typedef struct {
  guint timeout_s;      /* the answer must come within this; 0: no limit */
  guint64 memory_bytes; /* memory the child may add to its data segment at the start
                         * (soft RLIMIT_DATA); 0: no limit */
} TlIsolateLimits;

/* tl_isolate_run within `limits`: a child past its time is killed, and the error says so.
 * The environment's TOMOLAB_READER_TIMEOUT_S=S caps the time (the fuzzers use it). A child
 * past its memory has its allocations refused (under AddressSanitizer, without
 * allocator_may_return_null=1, that ends the child: also an error here). */
GBytes *tl_isolate_run_limited(const char *what, TlIsolatedFunc fn, const char *arg,
                               gsize max_bytes, const TlIsolateLimits *limits, GError **error);

/* In the child (a TlIsolatedFunc): `bytes` more data segment than it has now, for the rest
 * of the request, e.g. once a file's header says how much its data needs. 0: no limit. */
void tl_isolate_set_memory_limit(guint64 bytes);

/* For the fuzzers: from now on one child serves request after request until it dies (a fork
 * per request costs ~3 ms under AddressSanitizer), and child_setup (may be NULL) runs first in
 * each new child. Sound only where a memory error ends the child (AddressSanitizer): else a
 * damaged file could corrupt what the same child answers for the next file. */
void tl_isolate_reuse_children(void (*child_setup)(void));

/* Ends the kept child and forks one child per request again, as without reuse (the fuzzers
 * check a finding there: a reused child's library state is not a fresh process's);
 * child_setup still runs in each new child. */
void tl_isolate_reuse_children_stop(void);

/* Children that died without a valid answer so far (crashes contained). */
guint tl_isolate_children_lost(void);

G_END_DECLS
