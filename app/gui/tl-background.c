/* SPDX-License-Identifier: GPL-3.0-or-later */
#define _GNU_SOURCE
#include "tl-background.h"
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TL_BACKGROUND_NICE 10

void tl_background_lower_priority(void) {
#ifdef SYS_gettid
  id_t tid = (id_t)syscall(SYS_gettid);
  int now = getpriority(PRIO_PROCESS, tid);
  if (now < TL_BACKGROUND_NICE)
    (void)setpriority(PRIO_PROCESS, tid, TL_BACKGROUND_NICE);
#endif
}

typedef struct {
  GThreadFunc func;
  gpointer data;
} Call;

static gpointer trampoline(gpointer p) {
  Call *c = p;
  tl_background_lower_priority();
  return c->func(c->data);
}

gpointer tl_background_run(GThreadFunc func, gpointer data) {
  Call c = {func, data};
  return g_thread_join(g_thread_new("tl-background", trampoline, &c));
}
