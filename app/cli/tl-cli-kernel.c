/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli kernel: the built-in kernels, their GLSL, and a compile check of an edited one
 * (core/tl-kernels.h, expr/tl-kernel-edit.h); `recon --kernel NAME=FILE` uses it in a run. */
#include "tl-cli.h"
#include "expr/tl-kernel-edit.h"
#include "image/tl-file.h"
#include <string.h>
#include <stdio.h>

/* An edited kernel file: at most this many bytes (the largest built-in kernel expanded is
 * about 40 KiB). */
#define TL_CLI_KERNEL_MAX_BYTES (1 << 20)

static char *read_kernel_file(const char *path, GError **error) {
  if (!tl_file_check_input(path, "kernel", error)) return NULL;
  char *text = NULL;
  gsize n = 0;
  if (!g_file_get_contents(path, &text, &n, error)) return NULL;
  if (n > TL_CLI_KERNEL_MAX_BYTES || !g_utf8_validate(text, n, NULL) || strlen(text) != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "kernel '%s': %" G_GSIZE_FORMAT " bytes%s (expected GLSL text of at most %d bytes)",
                path, n, strlen(text) != n ? " with a NUL byte" : "", TL_CLI_KERNEL_MAX_BYTES);
    g_free(text);
    return NULL;
  }
  return text;
}

/* The compile messages, one "FILE:LINE: message" each, as compilers print them. */
static void print_diagnostics(const char *path, GPtrArray *diags) {
  for (guint i = 0; diags && i < diags->len; i++) {
    const TlKernelDiagnostic *d = g_ptr_array_index(diags, i);
    if (d->line)
      fprintf(stderr, "%s:%u: %s: %s\n", path, d->line, d->error ? "error" : "warning", d->message);
    else
      fprintf(stderr, "%s: %s: %s\n", path, d->error ? "error" : "warning", d->message);
  }
}

gboolean tl_cli_apply_kernels(TlContext *ctx, char **specs, GError **error) {
  for (guint i = 0; specs && specs[i]; i++) {
    const char *eq = strchr(specs[i], '=');
    if (!eq || eq == specs[i] || !eq[1]) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "--kernel '%s': expected NAME=FILE (tomolab-cli kernel lists the names)",
                  specs[i]);
      return FALSE;
    }
    g_autofree char *name = g_strndup(specs[i], eq - specs[i]);
    g_autofree char *text = read_kernel_file(eq + 1, error);
    if (!text) return FALSE;
    g_autoptr(GPtrArray) diags = NULL;
    if (!tl_kernel_compile(ctx, name, text, &diags, error)) {
      print_diagnostics(eq + 1, diags);
      g_prefix_error(error, "--kernel %s=%s: ", name, eq + 1);
      return FALSE;
    }
  }
  return TRUE;
}

int tl_cli_kernel(int argc, char **argv) {
  g_autofree char *check = NULL;
  GOptionEntry entries[] = {
      {"check", 'c', 0, G_OPTION_ARG_FILENAME, &check,
       "Compile FILE as a replacement of NAME and report errors by line", "FILE"},
      {NULL}};
  static const char description[] =
      "Without NAME: the built-in kernels. With NAME: its source, includes expanded, to edit\n"
      "and pass back with `recon --kernel NAME=FILE` (or open in the window's kernel editor);\n"
      "recon refuses NAME when its run never calls it, naming the kernels it runs.\n"
      "Example: tomolab-cli kernel pet_em > em.comp; (edit); \\\n"
      "         tomolab-cli kernel pet_em --check em.comp";
  g_autoptr(GError) error = NULL;
  if (!tl_cli_parse_options("[NAME] - built-in kernels and their GLSL",
                            entries, description, &argc, &argv, &error))
    return tl_cli_usage_error("kernel", error);
  if (argc > 2) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "one kernel name at most");
    return tl_cli_usage_error("kernel", error);
  }
  if (argc < 2) {
    if (check) {
      g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "--check needs the kernel's NAME");
      return tl_cli_usage_error("kernel", error);
    }
    const char *const *names = tl_kernels_names();
    for (guint i = 0; names[i]; i++) printf("%-16s %s/\n", names[i], tl_kernels_module(names[i]));
    return 0;
  }
  if (check) {
    g_autofree char *text = read_kernel_file(check, &error);
    g_autoptr(GPtrArray) diags = NULL;
    if (!text || !tl_kernel_compile(NULL, argv[1], text, &diags, &error)) {
      print_diagnostics(check, diags);
      fprintf(stderr, "tomolab-cli kernel: %s\n", error->message);
      return 1;
    }
    fprintf(stderr, "tomolab-cli kernel: %s compiles as %s\n", check, argv[1]);
    return 0;
  }
  g_autofree char *src = tl_kernels_source(argv[1], &error);
  if (!src) {
    fprintf(stderr, "tomolab-cli kernel: %s\n", error->message);
    return 1;
  }
  fputs(src, stdout);
  return 0;
}
