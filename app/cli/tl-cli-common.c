/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Option parsing and Ctrl-C handling shared by the verbs. */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include "tl-cli.h"
#include "dataset/tl-formats.h"
#include "dataset/tl-outputs.h"
#include "image/tl-file.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

gboolean tl_cli_parse_uint(const char *what, const char *text, guint64 min, guint64 max,
                           guint64 *out, GError **error) {
  char *end = NULL;
  errno = 0;
  /* digits only: strtoull would take "-2" (as 2^64 - 2), leading spaces and "+" */
  guint64 v = text && g_ascii_isdigit(text[0]) ? g_ascii_strtoull(text, &end, 10) : 0;
  if (!text || !g_ascii_isdigit(text[0]) || *end || errno || v < min || v > max) {
    g_autofree char *q = tl_text_quote(text ? text : "", -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s '%s': expected a whole number in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                what, q, min, max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean tl_cli_parse_double(const char *what, const char *text, double min, double max,
                             double *out, GError **error) {
  char *end = NULL;
  errno = 0;
  /* decimal only: strtod would also take "nan", "inf" and hex */
  gboolean ok = text && *text && strspn(text, "0123456789.eE+-") == strlen(text);
  double v = ok ? g_ascii_strtod(text, &end) : 0;
  if (!ok || *end || errno || !isfinite(v) || v < min || v > max) {
    g_autofree char *q = tl_text_quote(text ? text : "", -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s '%s': expected a number in [%g, %g]",
                what, q, min, max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

/* "NXxNYxNZ@V" or "NXxNYxNZ@VX,VY,VZ" (mm), centred on the scanner / isocentre. Every number
 * is a whole token, range-checked: sscanf("%u") took "-2" as 4294967294, wrapped 4294967304
 * to 8 and ignored trailing text. */
gboolean tl_cli_parse_grid(const char *text_in, TlImageGrid *g, GError **error) {
  /* messages quote the text: never raw bytes, at most a line */
  g_autofree char *text = tl_text_quote(text_in ? text_in : "", -1, 60);
  const char *at = strchr(text_in ? text_in : "", '@');
  g_autofree char *dims_text = at ? g_strndup(text_in, at - text_in) : NULL;
  g_auto(GStrv) dims = dims_text ? g_strsplit(dims_text, "x", -1) : NULL;
  g_auto(GStrv) sizes = at ? g_strsplit(at + 1, ",", -1) : NULL;
  guint nd = dims ? g_strv_length(dims) : 0, ns = sizes ? g_strv_length(sizes) : 0;
  if (nd != 3 || (ns != 1 && ns != 3)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "--grid '%s': expected NXxNYxNZ@VOXEL_MM or NXxNYxNZ@VX,VY,VZ (e.g. 215x215x71@2.78)",
                text);
    return FALSE;
  }
  guint64 n[3];
  double v[3];
  for (int d = 0; d < 3; d++) {
    g_autofree char *what = g_strdup_printf("--grid '%s': size along %c", text, "xyz"[d]);
    if (!tl_cli_parse_uint(what, dims[d], 1, 65535, &n[d], error)) return FALSE;
  }
  for (guint d = 0; d < 3; d++) {
    g_autofree char *what = g_strdup_printf("--grid '%s': voxel size", text);
    if (!tl_cli_parse_double(what, sizes[ns == 1 ? 0 : d], 1e-6, 1e6, &v[d], error)) return FALSE;
  }
  *g = tl_image_grid_centred((guint)n[0], (guint)n[1], (guint)n[2], (float)v[0], (float)v[1],
                             (float)v[2]);
  if (!tl_image_grid_validate(g, error)) {
    g_prefix_error(error, "--grid '%s': ", text);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_cli_reject_zero(int argc, char **argv, const char *long_name, char short_name,
                            GError **error) {
  g_autofree char *eq = g_strdup_printf("--%s=", long_name);
  g_autofree char *opt = g_strdup_printf("--%s", long_name);
  char sh[3] = {'-', short_name, 0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    const char *value = NULL;
    if (g_str_has_prefix(argv[i], eq)) value = argv[i] + strlen(eq);
    else if ((strcmp(argv[i], opt) == 0 || (short_name && strcmp(argv[i], sh) == 0)) && i + 1 < argc)
      value = argv[i + 1];
    else if (short_name && argv[i][0] == '-' && argv[i][1] == short_name && argv[i][2])
      value = argv[i] + 2; /* -s0 */
    guint64 v;
    if (value && tl_cli_parse_uint(opt, value, 0, G_MAXUINT64, &v, NULL) && v == 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "%s 0: expected at least 1 (0 is not taken to mean the default)", opt);
      return FALSE;
    }
  }
  return TRUE;
}

int tl_cli_usage_error(const char *verb, GError *error) {
  fprintf(stderr, "tomolab-cli %s: %s\n", verb, error->message);
  g_error_free(error);
  return 2;
}

gboolean tl_cli_check_outputs(const TlCliFile *inputs, gsize n_inputs, const TlCliFile *outputs,
                              gsize n_outputs, GError **error) {
  /* the one check over every file a header names (dataset/tl-outputs.h) */
  g_autofree TlNamedFile *in = g_new0(TlNamedFile, MAX(n_inputs, 1));
  g_autofree TlNamedFile *out = g_new0(TlNamedFile, MAX(n_outputs, 1));
  for (gsize i = 0; i < n_inputs; i++) in[i] = (TlNamedFile){inputs[i].option, inputs[i].path};
  for (gsize o = 0; o < n_outputs; o++) out[o] = (TlNamedFile){outputs[o].option, outputs[o].path};
  if (!tl_outputs_check(in, n_inputs, out, n_outputs, error)) return FALSE;
  for (gsize o = 0; o < n_outputs; o++) {
    const char *path = outputs[o].path;
    if (!path) continue;
    /* writable now, not after the work: a temp file is made and removed in its folder */
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s '%s' is a directory (expected a file name)",
                  outputs[o].option, path);
      return FALSE;
    }
    g_autofree char *tmp = tl_file_temp_name(path, NULL);
    FILE *f = g_fopen(tmp, "wb");
    if (!f) {
      int e = errno;
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s '%s' cannot be written: %s",
                  outputs[o].option, path, g_strerror(e));
      return FALSE;
    }
    fclose(f);
    g_remove(tmp);
  }
  return TRUE;
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

/* Images in and out through the format table (compute/tl-formats.h): any image format read by
 * content, written by the name's extension. */
TlImage *tl_cli_load_image(const char *path, GError **error) {
  return tl_format_load_kind(path, TL_DATA_IMAGE, error);
}

gboolean tl_cli_save_image(const TlImage *im, const char *path, GError **error) {
  const TlFormatClass *f = tl_format_for_output(path, TL_DATA_IMAGE, NULL, error);
  return f && tl_format_save(f, im, path, error);
}

gboolean tl_cli_parse_options(const char *params, const GOptionEntry *entries,
                              const char *description, int *argc, char ***argv, GError **error) {
  g_autoptr(GOptionContext) oc = g_option_context_new(params);
  g_option_context_add_main_entries(oc, entries, NULL);
  if (description) g_option_context_set_description(oc, description);
  return g_option_context_parse(oc, argc, argv, error);
}
