/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Helpers shared by the CT verbs. */
#include "tl-cli-ct-common.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* One decimal number (no hex, inf or nan, which strtod would take). */
static gboolean parse_number(const char *t, gsize len, double *out) {
  g_autofree char *s = g_strndup(t, len);
  if (!*s || strspn(s, "0123456789.eE+-") != strlen(s)) return FALSE;
  char *end = NULL;
  *out = g_ascii_strtod(s, &end);
  return end && !*end && isfinite(*out);
}

gboolean tl_cli_ct_parse_pair(const char *what, const char *text, double out[2], GError **error) {
  gsize cut = strcspn(text, ",x");
  gboolean ok = text[cut] ? parse_number(text, cut, &out[0]) &&
                                parse_number(text + cut + 1, strlen(text + cut + 1), &out[1])
                          : parse_number(text, cut, &out[0]);
  if (!text[cut]) out[1] = out[0];
  if (ok) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s '%s': expected A or A,B (or AxB)", what,
              text);
  return FALSE;
}

int tl_cli_ct_fail(const char *verb, GError *error) {
  fprintf(stderr, "tomolab-cli %s: %s\n", verb, error->message);
  g_error_free(error);
  return 1;
}
