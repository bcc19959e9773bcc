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

/* Runs in the child: appends the result to `out` and returns TRUE, or sets `error`. */
typedef gboolean (*TlIsolatedFunc)(gpointer data, GByteArray *out, GError **error);

/* Runs fn(data) in a child process and returns its bytes (at most max_bytes), or the child's
 * GError (TL_ERROR domain, its code and message), or an error naming `what` (e.g.
 * "'tooth.h5': libhdf5") when the child died or sent a malformed answer. */
GBytes *tl_isolate_run(const char *what, TlIsolatedFunc fn, gpointer data, gsize max_bytes,
                       GError **error);

G_END_DECLS
