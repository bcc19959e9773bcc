/* A file parser in a forked child (see tl-isolate.h).
 *
 * Why fork without exec: the library is already linked, and the child needs no helper binary
 * to be found (the CLI, the window, the Python module and the tests all load this library).
 * After fork only the calling thread exists; the child calls the parser, malloc (glibc keeps it
 * usable after fork) and write, then _exit: no atexit handlers, no stdio flush of the parent's
 * buffers, no LeakSanitizer pass over a library's leaks on its error paths.
 *
 * The answer on the pipe: a header {magic, ok, code, length} then `length` bytes, the result
 * when ok, the error message otherwise. */
#include "tl-isolate.h"
#include "tl-error.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define ISOLATE_MAGIC 0x544c4953u /* "TLIS" */
#define ISOLATE_MAX_MESSAGE 4096u

typedef struct {
  guint32 magic, ok;
  gint32 code;
  guint32 pad;
  guint64 length;
} IsolateHeader;

static gboolean write_all(int fd, const void *p, gsize n) {
  const guint8 *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return FALSE;
    b += w, n -= (gsize)w;
  }
  return TRUE;
}

/* Reads exactly n bytes; FALSE at end of file or on an error. */
static gboolean read_all(int fd, void *p, gsize n) {
  guint8 *b = p;
  while (n > 0) {
    ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return FALSE;
    b += r, n -= (gsize)r;
  }
  return TRUE;
}

static G_GNUC_NORETURN void child_main(int fd, TlIsolatedFunc fn, gpointer data) {
  GByteArray *out = g_byte_array_new();
  GError *e = NULL;
  gboolean ok = fn(data, out, &e);
  IsolateHeader h = {.magic = ISOLATE_MAGIC, .ok = ok};
  const void *body = out->data;
  gsize n = out->len;
  if (!ok) {
    const char *m = e ? e->message : "failed without a message";
    h.code = e && e->domain == TL_ERROR ? e->code : TL_ERROR_FORMAT;
    body = m, n = MIN(strlen(m), ISOLATE_MAX_MESSAGE);
  }
  h.length = n;
  gboolean sent = write_all(fd, &h, sizeof h) && write_all(fd, body, n);
  _exit(sent ? 0 : 1);
}

/* The child's end, as words: "exited with status 3", "was killed by signal 11 (...)". */
static char *describe_status(int status) {
  if (WIFSIGNALED(status))
    return g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(status),
                           g_strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
  return g_strdup_printf("ended with wait status %#x", (unsigned)status);
}

GBytes *tl_isolate_run(const char *what, TlIsolatedFunc fn, gpointer data, gsize max_bytes,
                       GError **error) {
  (void)tl_error_quark(); /* registered before fork: the child takes no GLib lock for it */
  int fds[2];
  if (pipe(fds) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: cannot create a pipe for the reader process: "
                "%s", what, g_strerror(errno));
    return NULL;
  }
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]), close(fds[1]);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: cannot start the reader process: %s", what,
                g_strerror(err));
    return NULL;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], fn, data);
  }
  close(fds[1]);

  IsolateHeader h;
  gboolean got_header = read_all(fds[0], &h, sizeof h) && h.magic == ISOLATE_MAGIC;
  gboolean fits = got_header && h.length <= (h.ok ? max_bytes : ISOLATE_MAX_MESSAGE);
  guint8 *body = fits ? g_try_malloc(h.length + 1) : NULL;
  gboolean got_body = body && read_all(fds[0], body, h.length);
  guint8 extra;
  gboolean trailing = got_body && read_all(fds[0], &extra, 1);
  close(fds[0]);
  if (!got_body) kill(pid, SIGKILL); /* it may be stuck writing what we no longer read */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  gboolean clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  if (got_body && !trailing && clean) {
    if (h.ok) return g_bytes_new_take(body, h.length);
    body[h.length] = 0;
    gint code = h.code >= TL_ERROR_NO_DEVICE && h.code <= TL_ERROR_UNSUPPORTED ? h.code
                                                                               : TL_ERROR_FORMAT;
    g_set_error(error, TL_ERROR, code, "%s", (const char *)body);
    g_free(body);
    return NULL;
  }
  g_free(body);
  g_autofree char *end = describe_status(status);
  if (!clean)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process %s (the library "
                "failed on this file: damaged or not what it claims to be)", what, end);
  else if (got_header && !fits)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process answered %"
                G_GUINT64_FORMAT " bytes, expected at most %" G_GSIZE_FORMAT, what,
                (guint64)h.length, h.ok ? max_bytes : (gsize)ISOLATE_MAX_MESSAGE);
  else
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process %s with %s answer",
                what, end, trailing ? "a longer" : got_header ? "a truncated" : "no valid");
  return NULL;
}
