/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A file parser in a forked child (see tl-isolate.h).
 *
 * Why fork without exec: the library is already linked, and the child needs no helper binary
 * to be found (the CLI, the window, the Python module and the tests all load this library).
 * After fork only the calling thread exists; the child calls the parser, malloc (glibc keeps it
 * usable after fork) and read/write, then _exit: no atexit handlers, no flush of the parent's
 * stdio buffers, no LeakSanitizer pass over a library's leaks on its error paths.
 *
 * The child serves requests {magic, function, argument length} + argument from one pipe and
 * answers {magic, ok, code, length} + length bytes (the result when ok, else the error
 * message) on another, until the request pipe closes. Normally the parent sends one request and
 * closes it; with tl_isolate_reuse_children the child is kept for the next request. */
#define _GNU_SOURCE /* pipe2, sigtimedwait */
#include "tl-isolate.h"
#include "tl-error.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
/* AddressSanitizer's allocator is not fork-safe before LLVM 18 ("[asan] Install
 * pthread_atfork", llvm-project #75290; Debian 12 has GCC 12's and clang 14's): a child forked
 * while another thread holds its lock hangs in its first malloc. glibc's malloc is fork-safe.
 * Under the sanitizer a child that times out is therefore asked again, once, in a new child
 * (CI's ASan suite saw one such hang reading a 1 MB file, against a 60 s limit). */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define ISOLATE_TRIES 2
#else
#define ISOLATE_TRIES 1
#endif

#define ISOLATE_MAGIC 0x544c4953u /* "TLIS" */
#define ISOLATE_MAX_MESSAGE 4096u
#define ISOLATE_MAX_ARG 65536u

typedef struct {
  guint32 magic, arg_length;
  guint64 fn;
  guint64 memory_bytes; /* the child's data-segment allowance for this request; 0: none */
} Request;

typedef struct {
  guint32 magic, ok;
  gint32 code;
  guint32 pad;
  guint64 length;
} Answer;

typedef struct {
  pid_t pid;
  int request_fd, answer_fd;
} Child;

static GMutex reuse_lock;
static gboolean reuse;
static void (*reuse_setup)(void);
static Child kept = {.pid = -1, .request_fd = -1, .answer_fd = -1};
static guint lost;

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

/* Reads exactly n bytes; FALSE at end of file or on an error, or (deadline > 0, monotonic
 * microseconds) when the deadline passed first, with *late set. */
static gboolean read_until(int fd, void *p, gsize n, gint64 deadline, gboolean *late) {
  guint8 *b = p;
  while (n > 0) {
    if (deadline > 0) {
      gint64 left = deadline - g_get_monotonic_time();
      struct pollfd pfd = {.fd = fd, .events = POLLIN};
      int ready = left > 0 ? poll(&pfd, 1, (int)MIN(left / 1000 + 1, G_MAXINT)) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        *late = TRUE;
        return FALSE;
      }
      if (ready < 0) return FALSE;
    }
    ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return FALSE;
    b += r, n -= (gsize)r;
  }
  return TRUE;
}

/* Reads exactly n bytes; FALSE at end of file or on an error. */
static gboolean read_all(int fd, void *p, gsize n) {
  gboolean late = FALSE;
  return read_until(fd, p, n, 0, &late);
}

/* `bytes` more than the data segment the child already has (RLIMIT_DATA counts the heap and
 * every private writable mapping: malloc's arenas and large blocks, and under
 * AddressSanitizer its shadow memory, which is why the limit is relative to VmData; the
 * address space would not do: a window process maps GTK and a Vulkan driver, and a GPU driver
 * may reserve gigabytes of it). The soft limit only: the hard one stays, so a later request
 * (a kept child) or tl_isolate_set_memory_limit can raise it again. */
static void set_memory_limit(guint64 bytes) {
  struct rlimit r;
  if (getrlimit(RLIMIT_DATA, &r) != 0) return;
  guint64 data_kb = 0;
  FILE *f = bytes ? fopen("/proc/self/status", "r") : NULL;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "VmData: %" G_GUINT64_FORMAT " kB", &data_kb) == 1) break;
    fclose(f);
  }
  if (bytes && !data_kb) return; /* the current size unknown: no limit rather than a wrong one */
  rlim_t want = bytes ? (rlim_t)(bytes + data_kb * 1024) : r.rlim_max;
  r.rlim_cur = r.rlim_max == RLIM_INFINITY ? want : MIN(want, r.rlim_max);
  setrlimit(RLIMIT_DATA, &r);
}

void tl_isolate_set_memory_limit(guint64 bytes) { set_memory_limit(bytes); }

static G_GNUC_NORETURN void child_main(int request_fd, int answer_fd) {
  if (reuse_setup) reuse_setup(); /* kept after tl_isolate_reuse_children_stop too */
  for (;;) {
    Request q;
    char arg[ISOLATE_MAX_ARG + 1];
    if (!read_all(request_fd, &q, sizeof q)) _exit(0); /* the parent closed: done */
    if (q.magic != ISOLATE_MAGIC || q.arg_length > ISOLATE_MAX_ARG ||
        !read_all(request_fd, arg, q.arg_length))
      _exit(2);
    arg[q.arg_length] = 0;
    set_memory_limit(q.memory_bytes);
    TlIsolatedFunc fn = (TlIsolatedFunc)(guintptr)q.fn; /* this process's own code (a fork) */
    GByteArray *out = g_byte_array_new();
    GError *e = NULL;
    gboolean ok = fn(arg, out, &e);
    Answer a = {.magic = ISOLATE_MAGIC, .ok = ok};
    const void *body = out->data;
    gsize n = out->len;
    if (!ok) {
      const char *m = e ? e->message : "failed without a message";
      a.code = e && e->domain == TL_ERROR ? e->code : TL_ERROR_FORMAT;
      body = m, n = MIN(strlen(m), ISOLATE_MAX_MESSAGE);
    }
    a.length = n;
    if (!write_all(answer_fd, &a, sizeof a) || !write_all(answer_fd, body, n)) _exit(1);
    g_byte_array_unref(out);
    g_clear_error(&e);
  }
}

static gboolean child_start(Child *c, const char *what, GError **error) {
  (void)tl_error_quark(); /* registered before fork: the child takes no GLib lock for it */
  int q[2], a[2];
  if (pipe2(q, O_CLOEXEC) != 0) goto failed;
  if (pipe2(a, O_CLOEXEC) != 0) {
    close(q[0]), close(q[1]);
    goto failed;
  }
  c->pid = fork();
  if (c->pid < 0) {
    close(q[0]), close(q[1]), close(a[0]), close(a[1]);
    goto failed;
  }
  if (c->pid == 0) {
    close(q[1]), close(a[0]);
    child_main(q[0], a[1]);
  }
  close(q[0]), close(a[1]);
  c->request_fd = q[1], c->answer_fd = a[0];
  return TRUE;
failed:
  g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: cannot start the reader process: %s", what,
              g_strerror(errno));
  return FALSE;
}

/* Closes the pipes (a child waiting for a request then exits), kills a child that might be
 * stuck writing, and waits for it. Returns the wait status. */
static int child_end(Child *c, gboolean kill_it) {
  if (c->request_fd >= 0) close(c->request_fd);
  if (c->answer_fd >= 0) close(c->answer_fd);
  if (kill_it) kill(c->pid, SIGKILL);
  int status = 0;
  while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
  }
  *c = (Child){.pid = -1, .request_fd = -1, .answer_fd = -1};
  return status;
}

/* The child's end, as words: "exited with status 3", "was killed by signal 11 (...)". */
static char *describe_status(int status) {
  if (WIFSIGNALED(status))
    return g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(status),
                           g_strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
  return g_strdup_printf("ended with wait status %#x", (unsigned)status);
}

/* One request to child c; on FALSE the child is ended and *error says why. */
static GBytes *ask(Child *c, gboolean keep, const char *what, TlIsolatedFunc fn,
                   const char *arg, gsize max_bytes, const TlIsolateLimits *limits,
                   gboolean *timed_out, GError **error) {
  gsize arg_length = strlen(arg);
  Request q = {.magic = ISOLATE_MAGIC, .arg_length = (guint32)arg_length,
               .fn = (guint64)(guintptr)fn, .memory_bytes = limits->memory_bytes};
  guint timeout_s = limits->timeout_s;
  guint64 cap;
  const char *env = g_getenv("TOMOLAB_READER_TIMEOUT_S");
  if (env && g_ascii_string_to_unsigned(env, 10, 1, 86400, &cap, NULL))
    timeout_s = timeout_s ? MIN(timeout_s, (guint)cap) : (guint)cap;
  gint64 deadline = timeout_s ? g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC : 0;
  gboolean late = FALSE;
  /* a child that died before reading would raise SIGPIPE here: ignored for the call */
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set), sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  gboolean sent = write_all(c->request_fd, &q, sizeof q) && write_all(c->request_fd, arg,
                                                                      arg_length);
  struct timespec zero = {0, 0};
  while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {
  } /* a SIGPIPE raised by this thread's write: consumed before unblocking */
  pthread_sigmask(SIG_SETMASK, &old_set, NULL);
  if (sent && !keep) close(c->request_fd), c->request_fd = -1; /* one request, then EOF */

  Answer a;
  gboolean got_answer = sent && read_until(c->answer_fd, &a, sizeof a, deadline, &late) &&
                        a.magic == ISOLATE_MAGIC;
  gboolean fits = got_answer && a.length <= (a.ok ? max_bytes : ISOLATE_MAX_MESSAGE);
  guint8 *body = fits ? g_try_malloc(a.length + 1) : NULL;
  gboolean got_body = body && read_until(c->answer_fd, body, a.length, deadline, &late);
  int status = 0;
  gboolean clean = TRUE, trailing = FALSE;
  if (!got_body || !keep) {
    guint8 extra;
    trailing = got_body && read_all(c->answer_fd, &extra, 1);
    status = child_end(c, !got_body || trailing);
    clean = got_body && !trailing && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (clean) {
    if (a.ok) return g_bytes_new_take(body, a.length);
    body[a.length] = 0;
    gint code = a.code >= TL_ERROR_NO_DEVICE && a.code <= TL_ERROR_UNSUPPORTED ? a.code
                                                                               : TL_ERROR_FORMAT;
    g_set_error(error, TL_ERROR, code, "%s", (const char *)body);
    g_free(body);
    return NULL;
  }
  g_free(body);
  g_atomic_int_inc(&lost);
  g_autofree char *end = describe_status(status);
  *timed_out = late;
  if (late)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process did not answer within "
                "%u s and was stopped (the library is stuck on this file: damaged, or not what "
                "it claims to be)", what, timeout_s);
  else if (got_answer && !fits)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process answered %"
                G_GUINT64_FORMAT " bytes, expected at most %" G_GSIZE_FORMAT, what,
                (guint64)a.length, a.ok ? max_bytes : (gsize)ISOLATE_MAX_MESSAGE);
  else if (trailing)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process answered more than "
                "it announced", what);
  else
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the reader process %s without a valid "
                "answer (the library failed on this file: damaged, or not what it claims to "
                "be)", what, end);
  return NULL;
}

GBytes *tl_isolate_run(const char *what, TlIsolatedFunc fn, const char *arg, gsize max_bytes,
                       GError **error) {
  static const TlIsolateLimits none = {0, 0};
  return tl_isolate_run_limited(what, fn, arg, max_bytes, &none, error);
}

GBytes *tl_isolate_run_limited(const char *what, TlIsolatedFunc fn, const char *arg,
                               gsize max_bytes, const TlIsolateLimits *limits, GError **error) {
  if (strlen(arg) > ISOLATE_MAX_ARG) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: a file name of %" G_GSIZE_FORMAT
                " bytes, expected at most %u", what, strlen(arg), ISOLATE_MAX_ARG);
    return NULL;
  }
  g_mutex_lock(&reuse_lock);
  gboolean keep = reuse;
  if (!keep) g_mutex_unlock(&reuse_lock);
  Child own = {.pid = -1, .request_fd = -1, .answer_fd = -1};
  Child *c = keep ? &kept : &own;
  GBytes *b = NULL;
  gboolean timed_out = TRUE;
  for (guint t = 0; !b && timed_out && t < ISOLATE_TRIES; t++) {
    timed_out = FALSE;
    if (t > 0) g_clear_error(error); /* the first child hung: the sanitizer's fork, above */
    if (c->pid >= 0 || child_start(c, what, error))
      b = ask(c, keep, what, fn, arg, max_bytes, limits, &timed_out, error);
  }
  if (keep) g_mutex_unlock(&reuse_lock);
  return b;
}

void tl_isolate_reuse_children(void (*child_setup)(void)) {
  g_mutex_lock(&reuse_lock);
  reuse = TRUE, reuse_setup = child_setup;
  g_mutex_unlock(&reuse_lock);
}

void tl_isolate_reuse_children_stop(void) {
  g_mutex_lock(&reuse_lock);
  reuse = FALSE;
  if (kept.pid >= 0) child_end(&kept, FALSE); /* it reads end of file and exits */
  g_mutex_unlock(&reuse_lock);
}

guint tl_isolate_children_lost(void) { return (guint)g_atomic_int_get(&lost); }
