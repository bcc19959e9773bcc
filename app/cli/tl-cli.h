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

/* --grid NXxNYxNZ@V or NXxNYxNZ@VX,VY,VZ (mm), centred; validated. */
gboolean tl_cli_parse_grid(const char *text, TlImageGrid *g, GError **error);

/* Between begin and end, Ctrl-C cancels `cancel` (long work stops between GPU submissions and
 * keeps its last complete result); a second Ctrl-C ends the process. end() says whether
 * Ctrl-C was pressed. */
typedef struct _TlCliInterrupt TlCliInterrupt;
TlCliInterrupt *tl_cli_interrupt_begin(GCancellable *cancel);
gboolean tl_cli_interrupt_end(TlCliInterrupt *it);

int tl_cli_info(int argc, char **argv);
/* From the registry: an --algo / --prior help text ("algorithm" or "prior"; g_free), and the
 * listing `tomolab-cli info` prints. */
char *tl_cli_registry_help(const char *what, gboolean with_summaries);
void tl_cli_print_registry(FILE *f);
int tl_cli_ct_simulate(int argc, char **argv);
int tl_cli_ct_recon(int argc, char **argv);
int tl_cli_simulate(int argc, char **argv);
int tl_cli_recon(int argc, char **argv);
