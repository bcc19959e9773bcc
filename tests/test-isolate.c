/* SPDX-License-Identifier: GPL-3.0-or-later */
/* image/tl-isolate: a parser in a child process. The child's answer comes back intact (a
 * large one too: the parent reads while the child writes), its GError comes back with its code
 * and message, and a child that dies, exits or answers too much gives a GError naming what
 * happened, never a crash of this process; one past its time or memory limit too. Reused children (the fuzzers' mode) serve several
 * requests from one process and are replaced after a death. */
#include "image/tl-isolate.h"
#include "tl-error.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

static gboolean answer_pid(const char *arg, GByteArray *out, GError **error) {
  guint32 pid = (guint32)getpid();
  g_byte_array_append(out, (const guint8 *)&pid, sizeof pid);
  g_byte_array_append(out, (const guint8 *)arg, (guint)strlen(arg));
  return TRUE;
}

/* 8 MiB of a known sequence: far more than a pipe holds. */
static gboolean answer_large(const char *arg, GByteArray *out, GError **error) {
  g_byte_array_set_size(out, 8u << 20);
  for (guint i = 0; i < out->len; i++) out->data[i] = (guint8)(i * 2654435761u >> 24);
  return TRUE;
}

static gboolean answer_error(const char *arg, GByteArray *out, GError **error) {
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': key 'x' is 7, expected 1 .. 3", arg);
  return FALSE;
}

static gboolean die_by_signal(const char *arg, GByteArray *out, GError **error) {
  raise(SIGKILL);
  return TRUE;
}

static gboolean die_by_exit(const char *arg, GByteArray *out, GError **error) { _exit(3); }

static gboolean answer_too_much(const char *arg, GByteArray *out, GError **error) {
  g_byte_array_set_size(out, 101);
  memset(out->data, 7, out->len);
  return TRUE;
}

/* A parser stuck in a loop. */
static gboolean never_answer(const char *arg, GByteArray *out, GError **error) {
  for (;;) pause();
  return FALSE;
}

/* A parser allocating what a damaged header asks for: 1 GiB touched, or a GError when the
 * allocation fails. */
static gboolean allocate_gib(const char *arg, GByteArray *out, GError **error) {
  gsize n = (gsize)1 << 30;
  guint8 *p = g_try_malloc(n);
  if (!p) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "1 GiB refused");
    return FALSE;
  }
  for (gsize i = 0; i < n; i += 4096) p[i] = 1;
  g_free(p);
  g_byte_array_append(out, (const guint8 *)"done", 4);
  return TRUE;
}

/* The raised limit: what tl_isolate_set_memory_limit allows is allocated. */
static gboolean raise_then_allocate(const char *arg, GByteArray *out, GError **error) {
  tl_isolate_set_memory_limit((guint64)1200 << 20);
  return allocate_gib(arg, out, error);
}

static guint32 child_pid(GBytes *b) {
  guint32 pid;
  memcpy(&pid, g_bytes_get_data(b, NULL), sizeof pid);
  return pid;
}

static void test_answer(void) {
  g_autoptr(GError) e = NULL;
  g_autoptr(GBytes) b = tl_isolate_run("test", answer_pid, "file.h5", 100, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(g_bytes_get_size(b), ==, 4 + 7);
  g_assert_cmpuint(child_pid(b), !=, (guint32)getpid()); /* it ran elsewhere */
  g_assert_cmpmem((const char *)g_bytes_get_data(b, NULL) + 4, 7, "file.h5", 7);

  g_autoptr(GBytes) large = tl_isolate_run("test", answer_large, "", 8u << 20, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(g_bytes_get_size(large), ==, 8u << 20);
  const guint8 *p = g_bytes_get_data(large, NULL);
  for (guint i = 0; i < (8u << 20); i += 4099)
    g_assert_cmpuint(p[i], ==, (guint8)(i * 2654435761u >> 24));
}

static void test_error(void) {
  g_autoptr(GError) e = NULL;
  g_assert_null(tl_isolate_run("test", answer_error, "a.h5", 100, &e));
  g_assert_error(e, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_cmpstr(e->message, ==, "'a.h5': key 'x' is 7, expected 1 .. 3");
}

static void test_death(void) {
  guint lost = tl_isolate_children_lost();
  g_autoptr(GError) e = NULL;
  g_assert_null(tl_isolate_run("'b.h5': libtest", die_by_signal, "b.h5", 100, &e));
  g_assert_error(e, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(e->message, "'b.h5': libtest: the reader process was killed by "
                                      "signal 9"));
  g_clear_error(&e);
  g_assert_null(tl_isolate_run("'c.h5': libtest", die_by_exit, "c.h5", 100, &e));
  g_assert_nonnull(strstr(e->message, "'c.h5': libtest: the reader process exited with status 3"));
  g_clear_error(&e);
  g_assert_null(tl_isolate_run("'d.h5': libtest", answer_too_much, "d.h5", 100, &e));
  g_assert_nonnull(strstr(e->message, "answered 101 bytes, expected at most 100"));
  g_assert_cmpuint(tl_isolate_children_lost(), ==, lost + 3);
  /* and the next request works */
  g_clear_error(&e);
  g_autoptr(GBytes) b = tl_isolate_run("test", answer_pid, "ok", 100, &e);
  g_assert_no_error(e);
}

/* A child past its time is killed and the error says so; a child past its memory has its
 * allocations refused, and one given more has them granted. */
static void test_limits(void) {
  g_autoptr(GError) e = NULL;
  TlIsolateLimits lim = {.timeout_s = 1};
  gint64 t0 = g_get_monotonic_time();
  g_assert_null(tl_isolate_run_limited("'e.h5': libtest", never_answer, "e.h5", 100, &lim, &e));
  g_assert_error(e, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(e->message, "'e.h5': libtest: the reader process did not answer within 1 s"));
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
  g_clear_error(&e);

  lim = (TlIsolateLimits){.memory_bytes = 256u << 20};
  g_autoptr(GBytes) b = tl_isolate_run_limited("test", allocate_gib, "f", 100, &lim, &e);
  g_assert_null(b);
#ifdef ASAN /* its allocator ends the child unless allocator_may_return_null=1 */
  g_assert_true(g_error_matches(e, TL_ERROR, TL_ERROR_OUT_OF_MEMORY) ||
                strstr(e->message, "without a valid answer"));
#else
  g_assert_error(e, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_assert_cmpstr(e->message, ==, "1 GiB refused");
#endif
  g_clear_error(&e);
  g_autoptr(GBytes) c = tl_isolate_run_limited("test", raise_then_allocate, "g", 100, &lim, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(g_bytes_get_size(c), ==, 4);
}

static void test_reuse(void) {
  tl_isolate_reuse_children(NULL); /* from here on, for the rest of this process */
  g_autoptr(GError) e = NULL;
  g_autoptr(GBytes) a = tl_isolate_run("test", answer_pid, "1", 100, &e);
  g_autoptr(GBytes) b = tl_isolate_run("test", answer_error, "2", 100, &e);
  g_assert_error(e, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&e);
  g_autoptr(GBytes) c = tl_isolate_run("test", answer_pid, "3", 100, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(child_pid(a), ==, child_pid(c)); /* one child served all three */
  g_assert_null(tl_isolate_run("test", die_by_signal, "4", 100, &e));
  g_assert_nonnull(strstr(e->message, "killed by signal 9"));
  g_clear_error(&e);
  g_autoptr(GBytes) d = tl_isolate_run("test", answer_pid, "5", 100, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(child_pid(d), !=, child_pid(a)); /* a new child after the death */

  /* stopped: the kept child ends, and each request gets its own again */
  tl_isolate_reuse_children_stop();
  g_autoptr(GBytes) f = tl_isolate_run("test", answer_pid, "6", 100, &e);
  g_autoptr(GBytes) g = tl_isolate_run("test", answer_pid, "7", 100, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(child_pid(f), !=, child_pid(d));
  g_assert_cmpuint(child_pid(g), !=, child_pid(f));
  g_assert_cmpuint(kill((pid_t)child_pid(d), 0), !=, 0); /* the kept one was waited for */
  tl_isolate_reuse_children(NULL);
  g_autoptr(GBytes) h = tl_isolate_run("test", answer_pid, "8", 100, &e);
  g_autoptr(GBytes) k = tl_isolate_run("test", answer_pid, "9", 100, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(child_pid(h), ==, child_pid(k)); /* kept again */
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/isolate/answer", test_answer);
  g_test_add_func("/isolate/error", test_error);
  g_test_add_func("/isolate/death", test_death);
  g_test_add_func("/isolate/limits", test_limits);
  g_test_add_func("/isolate/reuse", test_reuse); /* last: it changes the mode for good */
  return g_test_run();
}
