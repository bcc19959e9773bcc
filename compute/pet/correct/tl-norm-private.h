/* SPDX-License-Identifier: GPL-3.0-or-later */
/* What tl-norm.c shares with the estimate (tl-norm-estimate.c) and nobody else. */
#pragma once
#include "tl-norm.h"

G_BEGIN_DECLS

/* A normalisation of layout R, C, B, D (tl_norm_layout) on a copy of s; factors unset. */
TlNorm *tl_norm_alloc(const TlScanner *s, guint R, guint C, guint B, guint D);

/* Whether the scanner accepts pair (a, b) (tl_scanner_pair_allowed on the crystal table). */
static inline gboolean tl_norm_pair_ok(const TlCrystal *c, guint32 mrd, guint32 a, guint32 b) {
  return c[a].group != c[b].group &&
         (c[a].ring > c[b].ring ? c[a].ring - c[b].ring : c[b].ring - c[a].ring) <= mrd;
}

G_END_DECLS
