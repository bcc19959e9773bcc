/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The output-safety check over every file a header names (tl-outputs.h). */
#include "tl-outputs.h"
#include "tl-formats.h"
#include "image/tl-file.h"
#include <glib/gstdio.h>
#include <string.h>

static void add_companions(GPtrArray *v, const TlFormatClass *f, const char *path,
                           gboolean writing) {
  if (!f->companions) return;
  g_auto(GStrv) c = f->companions(path, writing);
  for (guint i = 0; c && c[i]; i++) g_ptr_array_add(v, g_strdup(c[i]));
}

char **tl_outputs_files_of(const char *path, gboolean writing) {
  GPtrArray *v = g_ptr_array_new();
  g_ptr_array_add(v, g_strdup(path));
  if (writing) {
    /* the writer is chosen later by extension (or --format): all that could be */
    for (const TlFormatClass *const *f = tl_formats(); *f; f++)
      if ((*f)->save && tl_format_path_has_extension(path, (*f)->extensions))
        add_companions(v, *f, path, TRUE);
  } else if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    const TlFormatClass *f = tl_format_detect(path, NULL);
    if (f) add_companions(v, f, path, FALSE);
  }
  g_ptr_array_add(v, NULL);
  return (char **)g_ptr_array_free(v, FALSE);
}

/* Same file: same device and inode when both exist, else the same absolute path. */
static gboolean same_file(const char *a, const char *b) {
  GStatBuf sa, sb;
  gboolean ea = g_stat(a, &sa) == 0, eb = g_stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  g_autofree char *ca = g_canonicalize_filename(a, NULL), *cb = g_canonicalize_filename(b, NULL);
  return strcmp(ca, cb) == 0;
}

/* "the input IN 'x.mhd'" or "the data file 'y.raw' that the input IN 'x.mhd' names" */
static char *describe(const char *kind, const TlNamedFile *f, const char *file) {
  if (strcmp(file, f->path) == 0) return g_strdup_printf("the %s %s '%s'", kind, f->option, f->path);
  return g_strdup_printf("'%s', a file that the %s %s '%s' %s", file, kind, f->option, f->path,
                         strcmp(kind, "input") == 0 ? "reads" : "writes");
}

gboolean tl_outputs_check(const TlNamedFile *inputs, gsize n_inputs,
                          const TlNamedFile *outputs, gsize n_outputs, GError **error) {
  g_autoptr(GPtrArray) in_files = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  for (gsize i = 0; i < n_inputs; i++)
    g_ptr_array_add(in_files, inputs[i].path ? tl_outputs_files_of(inputs[i].path, FALSE) : NULL);
  g_autoptr(GPtrArray) out_files = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  for (gsize o = 0; o < n_outputs; o++)
    g_ptr_array_add(out_files, outputs[o].path ? tl_outputs_files_of(outputs[o].path, TRUE) : NULL);
  for (gsize o = 0; o < n_outputs; o++) {
    char **of = out_files->pdata[o];
    for (guint a = 0; of && of[a]; a++) {
      for (gsize i = 0; i < n_inputs; i++) {
        char **inf = in_files->pdata[i];
        for (guint b = 0; inf && inf[b]; b++) {
          if (!same_file(of[a], inf[b])) continue;
          if (a == 0 && b == 0) { /* the named files themselves: the message of old */
            g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                        "%s '%s' is the input %s '%s': an output never replaces an input",
                        outputs[o].option, outputs[o].path, inputs[i].option, inputs[i].path);
            return FALSE;
          }
          g_autofree char *w = describe("output", &outputs[o], of[a]);
          g_autofree char *r = describe("input", &inputs[i], inf[b]);
          g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                      "%s would replace %s: an output never replaces an input", w, r);
          return FALSE;
        }
      }
      for (gsize k = 0; k < o; k++) {
        char **kf = out_files->pdata[k];
        for (guint b = 0; kf && kf[b]; b++) {
          if (!same_file(of[a], kf[b])) continue;
          if (a == 0 && b == 0) {
            g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                        "%s '%s' is also the output of %s: each output needs its own file",
                        outputs[o].option, outputs[o].path, outputs[k].option);
            return FALSE;
          }
          g_autofree char *w = describe("output", &outputs[o], of[a]);
          g_autofree char *r = describe("output", &outputs[k], kf[b]);
          g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                      "%s is also %s: each output needs its own files", w, r);
          return FALSE;
        }
      }
    }
  }
  return TRUE;
}
