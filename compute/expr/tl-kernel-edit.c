/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Edited kernels compiled at run time (tl-kernel-edit.h). */
#include "tl-kernel-edit.h"
#include "tl-glsl.h"
#include <stdlib.h>
#include <string.h>

static void diagnostic_free(gpointer p) {
  TlKernelDiagnostic *d = p;
  g_free(d->message);
  g_free(d);
}

GPtrArray *tl_kernel_parse_log(const char *log) {
  GPtrArray *out = g_ptr_array_new_with_free_func(diagnostic_free);
  if (!log) return out;
  g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *l = lines[i];
    gboolean err = g_str_has_prefix(l, "ERROR: "), warn = g_str_has_prefix(l, "WARNING: ");
    if (!err && !warn) continue;
    l += err ? 7 : 9;
    TlKernelDiagnostic *d = g_new0(TlKernelDiagnostic, 1);
    d->error = err;
    /* "0:LINE: message" (source string 0: the one text compiled) */
    char *end = NULL;
    if (g_ascii_isdigit(l[0])) {
      const char *colon = strchr(l, ':');
      if (colon && g_ascii_isdigit(colon[1])) {
        guint64 line = g_ascii_strtoull(colon + 1, &end, 10);
        if (end && *end == ':') {
          d->line = (guint)MIN(line, G_MAXUINT);
          l = end + 1;
        }
      }
    }
    while (*l == ' ') l++;
    d->message = g_strdup(l);
    if (!*d->message && !d->line) {
      diagnostic_free(d);
      continue;
    }
    g_ptr_array_add(out, d);
  }
  return out;
}

gboolean tl_kernel_compile_spirv(const char *name, const char *source, guint32 **spirv,
                                 gsize *size_bytes, GPtrArray **diagnostics, GError **error) {
  if (diagnostics) *diagnostics = g_ptr_array_new_with_free_func(diagnostic_free);
  const char *module = tl_kernels_module(name);
  if (!module) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "no built-in kernel named '%s' (tomolab-cli kernel lists them)", name);
    return FALSE;
  }
  g_autofree char *text = tl_kernels_expand(source, module, error);
  if (!text) return FALSE;
  GError *e = NULL;
  if (!tl_glsl_compile(text, name, spirv, size_bytes, &e)) {
    if (diagnostics) {
      g_ptr_array_unref(*diagnostics);
      *diagnostics = tl_kernel_parse_log(e->message);
    }
    g_propagate_error(error, e);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_kernel_compile(TlContext *ctx, const char *name, const char *source,
                           GPtrArray **diagnostics, GError **error) {
  g_autofree guint32 *spirv = NULL;
  gsize size = 0;
  if (!tl_kernel_compile_spirv(name, source, &spirv, &size, diagnostics, error)) return FALSE;
  return !ctx || tl_kernels_replace(ctx, name, spirv, size, error);
}
