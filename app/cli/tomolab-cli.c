/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli: the headless front end of the compute core. */
#include "tl-cli.h"
#include "image/tl-file.h"
#include "tl-progress.h"
#include <unistd.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

static const TlCliVerb verbs[] = {
    {"calibrate", "the calibration factor (Bq/mL) from a reconstructed phantom of known concentration", tl_cli_calibrate},
    {"info", "Vulkan devices, features and limits; or what data files hold (info FILE...)", tl_cli_info},
    {"convert", "a data file into another format of the same kind (image, list mode, ...)", tl_cli_convert},
    {"ct-simulate", "CT projections of a phantom (cone or parallel beam) into a .tlct scan", tl_cli_ct_simulate},
    {"ct-recon", "FDK, SIRT, SART, CGLS or MLEM of a .tlct CT scan into an image", tl_cli_ct_recon},
    {"kernel", "built-in GLSL kernels: list, print, check an edited one (recon --kernel)", tl_cli_kernel},
    {"norm-estimate", "the normalisation (crystal efficiencies, geometric factors) from a cylinder scan", tl_cli_norm_estimate},
    {"race", "2 to 8 algorithms on the same PET data, timed to the PETRIC target against a reference", tl_cli_race},
    {"recon", "list-mode or binned MLEM/OSEM of a list-mode file into an image", tl_cli_recon},
    {"simulate", "Monte-Carlo PET acquisition of a phantom into a list-mode file", tl_cli_simulate},
};

static void usage(FILE *f) {
  fprintf(f, "Usage: tomolab-cli VERB [OPTIONS]\n\nVerbs:\n");
  for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++)
    fprintf(f, "  %-13s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(f, "\n'tomolab-cli VERB --help' describes each verb.\n"
             "Environment: TOMOLAB_DEVICE=<index|name substring> picks the device;\n"
             "TOMOLAB_VALIDATE=1 turns the Vulkan validation layer on.\n");
}

/* The library's long steps (sensitivity images, scatter estimation, large loads, conversions;
 * tl-progress.h) on stderr: a line rewritten in place on a terminal, else a line per report
 * (once a second) that a log keeps. A step says nothing before it has run half a second (its
 * last report only when an earlier one was shown): a reconstruction's 64 subset sensitivity
 * images, each a fraction of a second, would otherwise write two lines apiece, and a log cut to
 * its tail would lose what came before them. Steps are reported one at a time (tl-progress.h),
 * so one flag serves. */
static void on_progress(const TlProgressReport *r, gpointer data) {
  static gboolean shown;
  if (!shown && r->elapsed_s < 0.5) return;
  shown = !r->done;
  gboolean tty = GPOINTER_TO_INT(data);
  g_autofree char *text = tl_progress_format(r);
  if (tty)
    fprintf(stderr, "\r\033[K%s: %s%s", r->what, text, r->done ? "\n" : "");
  else
    fprintf(stderr, "%s: %s\n", r->what, text);
  fflush(stderr);
}

static gboolean quiet_asked(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) return TRUE;
  return FALSE;
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "");
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("tomolab-cli 0.1.0\n");
    return 0;
  }
  /* temp files and folders of killed saves here (image/tl-file.h); a save elsewhere cleans
   * its own folder */
  tl_file_remove_stale_temps(".");
  gboolean tty = isatty(STDERR_FILENO);
  g_autoptr(TlProgress) progress = quiet_asked(argc, argv) ? NULL
      : tl_progress_new(on_progress, GINT_TO_POINTER(tty), NULL);
  if (progress) {
    tl_progress_set_interval(progress, tty ? 0.25 : 1.0);
    tl_progress_push(progress);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++)
    if (strcmp(argv[1], verbs[i].name) == 0) {
      int status = verbs[i].run(argc - 1, argv + 1);
      if (progress) tl_progress_pop(progress);
      return status;
    }
  if (progress) tl_progress_pop(progress);
  fprintf(stderr, "tomolab-cli: unknown verb '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
