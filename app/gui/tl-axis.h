/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlAxis: tick positions and labels for a numeric axis, shared by the plots, the colour bars
 * and the profiling strip. Ticks are "nice numbers" (1, 2 or 5 times a power of ten) after
 * Heckbert (1990); labels share one power of ten, given once with the axis' unit. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

#define TL_AXIS_MAX_TICKS 24

typedef struct {
  double lo, hi;        /* the axis' range: the data's (tight) or widened to ticks (loose) */
  double step;          /* between ticks */
  guint n;              /* ticks */
  double ticks[TL_AXIS_MAX_TICKS];
  int exponent;         /* labels show value / 10^exponent (0: as they are) */
  int decimals;         /* digits after the point in the labels */
} TlAxis;

/* A nice number near x > 0: the nearest of 1, 2, 5 x 10^k (round) or the smallest not below x. */
double tl_axis_nice(double x, gboolean round);

/* Ticks for the data range [lo, hi] with about `target` (>= 2) of them. loose: the range is
 * widened to the outer ticks (plots); else the ticks are those inside [lo, hi] (colour bars).
 * A non-finite or empty range becomes a unit-wide one around lo (0 if not finite). */
void tl_axis_make(TlAxis *axis, double lo, double hi, guint target, gboolean loose);

/* Tick label of value v (already without the exponent: "2.5", "-100", "0"). */
void tl_axis_label(const TlAxis *axis, double v, char *buf, gsize size);
/* The common factor for the axis title, "" when exponent is 0, else e.g. "×10⁻⁴". */
void tl_axis_factor(const TlAxis *axis, char *buf, gsize size);
/* A value in full for hover read-outs: 4 significant digits, no exponent between 1e-3 and 1e5. */
void tl_axis_format_value(double v, char *buf, gsize size);

/* Position of v along [0, length] for the axis' range (v = lo at 0). */
static inline double tl_axis_map(const TlAxis *axis, double v, double length) {
  return (v - axis->lo) / (axis->hi - axis->lo) * length;
}

G_END_DECLS
