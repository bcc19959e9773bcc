/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli verbs: each takes argc/argv after the verb name and returns an exit status. */
#pragma once
#include <stdio.h>
#include "tomolab-compute.h"
#include "image/tl-image.h"

typedef struct {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} TlCliVerb;

/* --grid NXxNYxNZ@V or NXxNYxNZ@VX,VY,VZ (mm), centred; every number a whole token in range
 * (sizes 1..65535, voxel sizes 1e-6..1e6 mm); validated. */
gboolean tl_cli_parse_grid(const char *text, TlImageGrid *g, GError **error);

/* Strict numbers: the whole token, digits only (no sign, no spaces) / decimal only (no nan,
 * inf or hex), within [min, max]; the message names `what`, the text and the range. */
gboolean tl_cli_parse_uint(const char *what, const char *text, guint64 min, guint64 max,
                           guint64 *out, GError **error);
gboolean tl_cli_parse_double(const char *what, const char *text, double min, double max,
                             double *out, GError **error);

/* Refuses "--NAME 0", "--NAME=0", "-S 0" and "-S0" in argv before option parsing, for counts
 * whose parsed 0 means "not given" (--subsets 0 silently became 10). */
gboolean tl_cli_reject_zero(int argc, char **argv, const char *long_name, char short_name,
                            GError **error);

/* Prints "tomolab-cli VERB: message" on stderr, frees the error, returns 2 (a command line
 * that contradicts itself). */
int tl_cli_usage_error(const char *verb, GError *error);

/* A verb's options: a context with `entries` as its main group, `params` after the verb in
 * --help ("DATA - race reconstruction algorithms") and `description` (NULL: none) below the
 * options; parses argv in place (GOption's --help prints and exits). FALSE: GError. */
gboolean tl_cli_parse_options(const char *params, const GOptionEntry *entries,
                              const char *description, int *argc, char ***argv, GError **error);

/* A file named on the command line and the option that named it (path NULL: not given). */
typedef struct {
  const char *option;
  const char *path;
} TlCliFile;

/* Before any work: no output is an input or another output (same inode, or the same path when
 * it does not exist yet), none is a directory, and each can be created in its folder. */
gboolean tl_cli_check_outputs(const TlCliFile *inputs, gsize n_inputs, const TlCliFile *outputs,
                              gsize n_outputs, GError **error);

/* Between begin and end, Ctrl-C cancels `cancel` (long work stops between GPU submissions and
 * keeps its last complete result); a second Ctrl-C ends the process. end() says whether
 * Ctrl-C was pressed. */
typedef struct _TlCliInterrupt TlCliInterrupt;
TlCliInterrupt *tl_cli_interrupt_begin(GCancellable *cancel);
gboolean tl_cli_interrupt_end(TlCliInterrupt *it);

/* Any image format of the table in (by content) and out (by the name's extension). */
TlImage *tl_cli_load_image(const char *path, GError **error);
gboolean tl_cli_save_image(const TlImage *im, const char *path, GError **error);

int tl_cli_info(int argc, char **argv);
/* From the registry: an --algo / --prior help text ("algorithm" or "prior"; g_free), and the
 * listing `tomolab-cli info` prints. */
char *tl_cli_registry_help(const char *what, gboolean with_summaries);
void tl_cli_print_registry(FILE *f);
/* The format table: name, reads/writes, extensions, summary. */
void tl_cli_print_formats(FILE *f);
int tl_cli_convert(int argc, char **argv);
int tl_cli_kernel(int argc, char **argv);
/* --kernel NAME=FILE options: each file compiled and installed in ctx as the replacement of
 * built-in kernel NAME; compile errors printed as FILE:LINE: on stderr, the GError names both. */
gboolean tl_cli_apply_kernels(TlContext *ctx, char **specs, GError **error);
int tl_cli_ct_simulate(int argc, char **argv);
int tl_cli_ct_recon(int argc, char **argv);
int tl_cli_simulate(int argc, char **argv);
int tl_cli_recon(int argc, char **argv);
int tl_cli_calibrate(int argc, char **argv);
int tl_cli_norm_estimate(int argc, char **argv);
int tl_cli_race(int argc, char **argv);
