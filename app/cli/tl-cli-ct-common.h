/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Helpers shared by the CT verbs (ct-simulate, ct-recon). */
#pragma once
#include "tl-cli.h"
#include "image/tl-image.h"

/* "NXxNYxNZ@V" or "NXxNYxNZ@VX,VY,VZ" (mm), centred on the isocentre. */
/* "A" or "A,B" (B = A when omitted); "AxB" is accepted for sizes too. */
gboolean tl_cli_ct_parse_pair(const char *what, const char *text, double out[2], GError **error);
int tl_cli_ct_fail(const char *verb, GError *error);
