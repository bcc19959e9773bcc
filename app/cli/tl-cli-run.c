/* SPDX-License-Identifier: GPL-3.0-or-later */
/* recon / ct-recon options into a TlRunSpec (tl-cli-run.h). */
#include "tl-cli-run.h"
#include "tl-cli.h"
#include "run/tl-run-sidecar.h"
#include "image/tl-file.h"
#include "tl-error.h"
#include <string.h>

void tl_cli_run_args_init(TlCliRunArgs *a, gboolean ct) {
  *a = (TlCliRunArgs){.ct = ct, .pairs = g_ptr_array_new_with_free_func(g_free),
                      .kernels = g_ptr_array_new_with_free_func(g_free)};
}

void tl_cli_run_args_clear(TlCliRunArgs *a) {
  g_clear_pointer(&a->pairs, g_ptr_array_unref);
  g_clear_pointer(&a->kernels, g_ptr_array_unref);
  g_clear_pointer(&a->run_path, g_free);
  g_clear_pointer(&a->save_path, g_free);
}

static void add(TlCliRunArgs *a, const char *key, const char *value, const char *option) {
  g_ptr_array_add(a->pairs, g_strdup(key));
  g_ptr_array_add(a->pairs, g_strdup(value));
  g_ptr_array_add(a->pairs, g_strdup(option));
}

/* Options whose value is one key's value, or that set a key to a fixed value (flags). */
static const struct {
  const char *option;
  char short_name;
  const char *key;
  const char *fixed;
} plain[] = {
    {"algo", 'a', "algorithm", NULL},      {"subsets", 's', "subsets", NULL},
    {"iterations", 'n', "iterations", NULL}, {"projector", 'p', "projector", NULL},
    {"prior", 0, "prior", NULL},           {"beta", 0, "beta", NULL},
    {"gamma", 0, "gamma", NULL},           {"epsilon", 0, "epsilon", NULL},
    {"relaxation", 0, "relaxation", NULL}, {"loglik", 0, "objective", NULL},
    {"objective", 0, "objective", NULL},   {"tof", 0, "tof", "true"},
    {"binned", 'b', "binned", "true"},     {"no-cache", 0, "cache", "false"},
    {"profile", 0, "profile", "true"},     {"quiet", 'q', "quiet", "true"},
    {"nonneg", 0, "nonnegative", "true"},  {"tof-nsigma", 0, "tof-nsigma", NULL},
    {"tor-fwhm", 0, "tor-fwhm", NULL},     {"output", 'o', "output", NULL},
    {"truth", 't', "truth", NULL},         {"grid", 'g', "grid", NULL},
    {"attenuation", 0, "attenuation", NULL}, {"norm", 0, "norm", NULL},
    {"randoms-out", 0, "randoms-out", NULL}, {"calibration", 0, "calibration", NULL},
    {"isotope", 0, "isotope", NULL},       {"duration", 0, "duration", NULL},
    {"frame-start", 0, "frame-start", NULL}, {"scatter-rounds", 0, "scatter-rounds", NULL},
    {"scatter-out", 0, "scatter-out", NULL}, {"filter-every", 0, "filter-every", NULL},
    {"start-subset", 0, "start-subset", NULL}, {"zero-end-planes", 0, "zero-end-planes", "true"},
    {"scatter-restart", 0, "scatter-restart", "true"},
    {"device", 'd', "device", NULL},       {"checkpoint", 0, "checkpoint", NULL},
    {"checkpoint-every", 0, "checkpoint-every", NULL}, {"resume", 0, "resume", NULL},
    {"start", 0, "start", NULL},           {"centre", 'c', "centre", NULL},
    {"pixel-size", 0, "pixel-size", NULL}, {"slices", 0, "slices", NULL},
    {"batch", 0, "batch", NULL},           {"kappa", 0, "kappa", NULL},
    {"seed", 0, "seed", NULL},             {"osem-epochs", 0, "osem-epochs", NULL},
    {"rays-tangential", 0, "rays-tangential", NULL}, {"rays-axial", 0, "rays-axial", NULL},
    {"sensitivity", 0, "sensitivity", NULL}, {"sensitivity-out", 0, "sensitivity-out", NULL},
};

gboolean tl_cli_run_option(const char *option_name, const char *value, gpointer data,
                           GError **error) {
  TlCliRunArgs *a = data;
  const char *name = option_name;
  while (*name == '-') name++;
  gboolean is_short = option_name[0] == '-' && option_name[1] != '-';
  g_autofree char *shown = value ? g_strdup_printf("%s '%s'", option_name, value)
                                 : g_strdup(option_name);
  if (g_str_equal(name, "run")) {
    g_free(a->run_path);
    a->run_path = g_strdup(value);
    return TRUE;
  }
  if (g_str_equal(name, "save-run")) {
    g_free(a->save_path);
    a->save_path = g_strdup(value);
    return TRUE;
  }
  if (g_str_equal(name, "kernel") || (is_short && name[0] == 'k')) {
    g_ptr_array_add(a->kernels, g_strdup(value));
    return TRUE;
  }
  if (g_str_equal(name, "filter") || (is_short && name[0] == 'f')) {
    add(a, a->ct ? "fdk-filter" : "filter", value, shown);
    return TRUE;
  }
  /* --randoms delayeds | singles | FILE and --scatter sss | FILE name a source or a file */
  if (g_str_equal(name, "randoms")) {
    if (g_str_equal(value, "delayeds") || g_str_equal(value, "singles") ||
        g_str_equal(value, "none")) {
      add(a, "randoms", value, shown);
      add(a, "randoms-file", "none", shown);
    } else if (g_file_test(value, G_FILE_TEST_EXISTS)) {
      add(a, "randoms", "file", shown);
      add(a, "randoms-file", value, shown);
    } else {
      g_autofree char *q = tl_text_quote(value, -1, 80);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "--randoms '%s': expected delayeds (the randoms estimated from the file's "
                  "delayed coincidences), singles (from its singles rates) or a randoms file "
                  "(no such file)", q);
      return FALSE;
    }
    return TRUE;
  }
  if (g_str_equal(name, "scatter")) {
    gboolean word = g_str_equal(value, "sss") || g_str_equal(value, "none");
    add(a, "scatter", word ? value : "file", shown);
    add(a, "scatter-file", word ? "none" : value, shown);
    return TRUE;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(plain); i++)
    if (is_short ? plain[i].short_name == name[0] && !name[1]
                 : g_str_equal(plain[i].option, name)) {
      add(a, plain[i].key, plain[i].fixed ? plain[i].fixed : value, shown);
      return TRUE;
    }
  g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION, "unknown option %s",
              option_name);
  return FALSE;
}

TlRunSpec *tl_cli_run_build(TlCliRunArgs *a, const char *data, GError **error) {
  g_autoptr(TlRunSpec) s = NULL;
  if (a->run_path) {
    if (!(s = tl_run_spec_load(a->run_path, error))) {
      g_prefix_error(error, "--run: ");
      return NULL;
    }
  } else {
    s = tl_run_spec_new();
  }
  /* the verb decides the modality: a run file of the other one is a mistake */
  if (a->run_path && (s->modality == TL_RUN_CT) != a->ct) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "--run %s: a %s run; %s takes %s runs",
                a->run_path, a->ct ? "PET" : "CT", a->ct ? "ct-recon" : "recon",
                a->ct ? "CT" : "PET");
    return NULL;
  }
  s->modality = a->ct ? TL_RUN_CT : TL_RUN_PET;
  for (guint i = 0; i + 2 < a->pairs->len; i += 3) {
    const char *key = g_ptr_array_index(a->pairs, i);
    const char *value = g_ptr_array_index(a->pairs, i + 1);
    if (!tl_run_spec_set(s, key, value, error)) {
      g_prefix_error(error, "%s: ", (const char *)g_ptr_array_index(a->pairs, i + 2));
      return NULL;
    }
  }
  if (a->kernels->len) {
    g_ptr_array_add(a->kernels, NULL);
    g_autofree char *list = g_strjoinv("; ", (char **)a->kernels->pdata);
    g_ptr_array_remove_index(a->kernels, a->kernels->len - 1);
    if (!tl_run_spec_set(s, "kernels", list, error)) {
      g_prefix_error(error, "--kernel: ");
      return NULL;
    }
  }
  if (data && !tl_run_spec_set(s, "data", data, error)) return NULL;
  if (!tl_run_spec_validate(s, error)) return NULL;
  /* before anything is written: neither --save-run nor the image's sidecar replaces the run
   * file or the data (the verb checks its other inputs against its outputs, sidecar included) */
  g_autofree char *side = s->output ? tl_run_sidecar_path(s->output) : NULL;
  if (!tl_cli_check_outputs((const TlCliFile[]){{"--run", a->run_path}, {"input", s->data}}, 2,
                            (const TlCliFile[]){{"--save-run", a->save_path},
                                                {"the image's sidecar", side}},
                            2, error))
    return NULL;
  if (a->save_path && !tl_run_spec_save(s, a->save_path, error)) {
    g_prefix_error(error, "--save-run: ");
    return NULL;
  }
  return g_steal_pointer(&s);
}

gboolean tl_cli_run_peek_modality(int argc, char **argv, TlRunModality *out) {
  for (int i = 1; i < argc; i++) {
    if (g_str_equal(argv[i], "--")) break;
    const char *path = g_str_has_prefix(argv[i], "--run=") ? argv[i] + 6
                       : g_str_equal(argv[i], "--run") && i + 1 < argc ? argv[i + 1]
                                                                        : NULL;
    if (!path) continue;
    g_autoptr(TlRunSpec) s = tl_run_spec_load(path, NULL);
    if (s) {
      *out = s->modality;
      return TRUE;
    }
  }
  return FALSE;
}
