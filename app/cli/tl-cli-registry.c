/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Help texts and `info` listings made from the one registry (compute/tl-registry.h), so the
 * CLI never keeps its own list of algorithms, priors, operators or projectors. */
#include "tl-cli.h"
#include "tl-registry.h"
#include "dataset/tl-formats.h"
#include <stdio.h>

char *tl_cli_registry_help(const char *what, gboolean with_summaries) {
  GString *s = g_string_new(NULL);
  if (g_str_equal(what, "algorithm")) {
    const TlAlgorithmClass *const *a = tl_registry_algorithms();
    g_string_append(s, "Algorithm (default mlem):");
    for (guint i = 0; a[i]; i++)
      g_string_append_printf(s, with_summaries ? "\n      %s: %s" : " %s", tl_algorithm_name(a[i]),
                             tl_algorithm_summary(a[i]));
  } else {
    const TlPriorClass *const *p = tl_registry_priors();
    g_string_append(s, "Prior for osl / bsrem (default none):");
    for (guint i = 0; p[i]; i++)
      g_string_append_printf(s, with_summaries ? "\n      %s: %s" : " %s", p[i]->name,
                             p[i]->summary);
  }
  return g_string_free(s, FALSE);
}

void tl_cli_print_registry(FILE *f) {
  const TlAlgorithmClass *const *a = tl_registry_algorithms();
  fprintf(f, "algorithms:\n");
  for (guint i = 0; a[i]; i++) {
    guint fl = tl_algorithm_flags(a[i]);
    fprintf(f, "  %-10s %s%s%s%s\n", tl_algorithm_name(a[i]), tl_algorithm_summary(a[i]),
            fl & TL_ALGO_EMISSION ? " [emission]" : "", fl & TL_ALGO_PRIOR ? " [prior]" : "",
            fl & TL_ALGO_NEEDS_DATA ? " [not list mode]" : "");
  }
  const TlPriorClass *const *p = tl_registry_priors();
  fprintf(f, "priors:\n");
  for (guint i = 0; p[i]; i++) fprintf(f, "  %-10s %s\n", p[i]->name, p[i]->summary);
  const TlOperatorClass *const *o = tl_registry_operators();
  fprintf(f, "operators:\n");
  for (guint i = 0; o[i]; i++)
    fprintf(f, "  %-13s %-4s %s\n", o[i]->name, o[i]->modality, o[i]->summary);
  const TlProjectorInfo *const *pr = tl_registry_projectors();
  fprintf(f, "PET projectors:\n");
  for (guint i = 0; pr[i]; i++) {
    guint fl = pr[i]->flags;
    fprintf(f, "  %-10s %s%s%s%s%s\n", pr[i]->name, pr[i]->summary,
            fl & TL_PROJECTOR_LISTMODE ? " [list mode]" : "", fl & TL_PROJECTOR_BINNED ? " [binned]" : "",
            fl & TL_PROJECTOR_TOF ? " [TOF]" : "", fl & TL_PROJECTOR_DUAL_HEAD ? " [dual-head only]" : "");
  }
}

void tl_cli_print_formats(FILE *f) {
  const TlFormatClass *const *fm = tl_formats();
  fprintf(f, "file formats (r = read, w = write; detected by content):\n");
  for (guint i = 0; fm[i]; i++)
    fprintf(f, "  %-15s %c%c %-15s %s [%s]\n", fm[i]->name, fm[i]->load ? 'r' : '-',
            fm[i]->save ? 'w' : '-', tl_data_kind_name(fm[i]->kind), fm[i]->summary,
            fm[i]->extensions);
}
