/* SPDX-License-Identifier: GPL-3.0-or-later */
/* recon and ct-recon build their run as a TlRunSpec (compute/run/): `--run FILE` gives the
 * starting values, every other option sets one key over them (in the order given), the input
 * on the command line sets `data`; `--save-run FILE` writes the run that results. */
#pragma once
#include <glib.h>
#include "run/tl-run-spec.h"

G_BEGIN_DECLS

typedef struct {
  gboolean ct;         /* ct-recon: --filter is the FDK window */
  GPtrArray *pairs;    /* key, value, option text, ... in the order given */
  GPtrArray *kernels;  /* --kernel NAME=FILE, NULL-terminated when built */
  char *run_path, *save_path;
} TlCliRunArgs;

void tl_cli_run_args_init(TlCliRunArgs *a, gboolean ct);
void tl_cli_run_args_clear(TlCliRunArgs *a);
/* The GOptionArgFunc of every run option (user data: the TlCliRunArgs of the option group). */
gboolean tl_cli_run_option(const char *option_name, const char *value, gpointer data,
                           GError **error);
/* The run: the --run file (or defaults), then the options, then `data` (NULL: the file's);
 * validated. GError names the option and its value, or the run file's line. */
TlRunSpec *tl_cli_run_build(TlCliRunArgs *a, const char *data, GError **error);
/* The modality of `--run FILE` in argv, without parsing the other options (recon passes a
 * CT run to ct-recon). FALSE when argv names no readable run file. */
gboolean tl_cli_run_peek_modality(int argc, char **argv, TlRunModality *out);

G_END_DECLS
