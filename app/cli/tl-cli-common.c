/* Option parsing and Ctrl-C handling shared by the verbs. */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include "tl-cli.h"
#include <signal.h>
#include <stdio.h>

/* "NXxNYxNZ@V" or "NXxNYxNZ@VX,VY,VZ" (mm), centred on the scanner / isocentre. */
gboolean tl_cli_parse_grid(const char *text, TlImageGrid *g, GError **error) {
  guint n[3];
  float v[3];
  char tail;
  int k = sscanf(text, "%ux%ux%u@%f,%f,%f%c", &n[0], &n[1], &n[2], &v[0], &v[1], &v[2], &tail);
  if (k == 4) v[1] = v[2] = v[0];
  if (k != 4 && k != 6) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "--grid '%s': expected NXxNYxNZ@VOXEL_MM or NXxNYxNZ@VX,VY,VZ (e.g. 215x215x71@2.78)",
                text);
    return FALSE;
  }
  *g = tl_image_grid_centred(n[0], n[1], n[2], v[0], v[1], v[2]);
  return tl_image_grid_validate(g, error);
}

/* Ctrl-C. A signal handler may not call g_cancellable_cancel(), so it only sets a flag; a
 * watcher thread turns the flag into a cancel within ~20 ms, which the work sees between two
 * GPU submissions. A second Ctrl-C gets the default action (the process ends). */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  if (interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
  interrupted = 1;
}

struct _TlCliInterrupt {
  GCancellable *cancel;
  GThread *watcher;
  gint stop; /* atomic */
  struct sigaction old;
};

static gpointer watch(gpointer data) {
  TlCliInterrupt *it = data;
  while (!g_atomic_int_get(&it->stop)) {
    if (interrupted) g_cancellable_cancel(it->cancel);
    g_usleep(20000);
  }
  return NULL;
}

TlCliInterrupt *tl_cli_interrupt_begin(GCancellable *cancel) {
  TlCliInterrupt *it = g_new0(TlCliInterrupt, 1);
  it->cancel = g_object_ref(cancel);
  interrupted = 0;
  struct sigaction sa = {.sa_handler = on_sigint};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &it->old);
  it->watcher = g_thread_new("tl-cli-sigint", watch, it);
  return it;
}

gboolean tl_cli_interrupt_end(TlCliInterrupt *it) {
  g_atomic_int_set(&it->stop, 1);
  g_thread_join(it->watcher);
  sigaction(SIGINT, &it->old, NULL);
  gboolean was = interrupted != 0;
  g_object_unref(it->cancel);
  g_free(it);
  return was;
}
