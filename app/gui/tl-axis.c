/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Nice-number ticks: Heckbert (1990), "Nice numbers for graph labels", Graphics Gems I. The
 * range is rounded up to a nice number, the spacing rounded to the nearest one for the tick
 * count wanted; loose labelling widens the range to whole ticks. */
#include <math.h>
#include <string.h>
#include "tl-axis.h"

double tl_axis_nice(double x, gboolean round) {
  if (!(x > 0) || !isfinite(x))
    return 1;
  double e = floor(log10(x)), f = x / pow(10, e), nf;
  if (round)
    nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else
    nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nf * pow(10, e);
}

void tl_axis_make(TlAxis *axis, double lo, double hi, guint target, gboolean loose) {
  memset(axis, 0, sizeof *axis);
  if (!isfinite(lo)) lo = isfinite(hi) ? hi : 0;
  if (!isfinite(hi)) hi = lo;
  if (hi < lo) { double t = lo; lo = hi; hi = t; }
  if (!(hi > lo)) {
    /* one value: a unit of its own magnitude around it */
    double w = lo != 0 ? fabs(lo) * 0.5 : 1;
    lo -= w;
    hi += w;
  }
  target = CLAMP(target, 2, TL_AXIS_MAX_TICKS - 1);
  double d = tl_axis_nice(tl_axis_nice(hi - lo, FALSE) / (target - 1), TRUE);
  double first, last;
  for (int tries = 0; tries < 64; tries++) {
    first = loose ? floor(lo / d) : ceil(lo / d);
    last = loose ? ceil(hi / d) : floor(hi / d);
    if (last - first + 1 > TL_AXIS_MAX_TICKS)
      d *= 2;  /* only for a target near the maximum */
    else if (last - first + 1 < 2)
      d = tl_axis_nice(d / 2, TRUE);  /* tight: a short range between two ticks (1 .. 4 by 5) */
    else
      break;
  }
  axis->step = d;
  axis->lo = loose ? first * d : lo;
  axis->hi = loose ? last * d : hi;
  for (double k = first; k <= last && axis->n < TL_AXIS_MAX_TICKS; k++) {
    double v = k * d;
    axis->ticks[axis->n++] = fabs(v) < d * 1e-9 ? 0 : v;  /* no "-0" from rounding */
  }
  /* One power of ten for all labels once they would need more than 5 digits. */
  double big = MAX(fabs(axis->ticks[0]), fabs(axis->ticks[axis->n ? axis->n - 1 : 0]));
  big = MAX(big, MAX(fabs(lo), fabs(hi)));
  axis->exponent = (big >= 1e5 || (big > 0 && big < 1e-2)) ? (int)floor(log10(big)) : 0;
  double scaled = d / pow(10, axis->exponent);
  axis->decimals = MAX(0, (int)-floor(log10(scaled) + 1e-9));
}

void tl_axis_label(const TlAxis *axis, double v, char *buf, gsize size) {
  double s = v / pow(10, axis->exponent);
  g_snprintf(buf, size, "%.*f", axis->decimals, s);
  /* "-0.0" -> "0.0": a rounded tiny value has no sign */
  if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
    memmove(buf, buf + 1, strlen(buf));
}

void tl_axis_factor(const TlAxis *axis, char *buf, gsize size) {
  static const char *const digits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  if (axis->exponent == 0) {
    g_strlcpy(buf, "", size);
    return;
  }
  GString *s = g_string_new("×10");
  if (axis->exponent < 0)
    g_string_append(s, "⁻");
  char num[16];
  g_snprintf(num, sizeof num, "%d", ABS(axis->exponent));
  for (const char *c = num; *c; c++)
    g_string_append(s, digits[*c - '0']);
  g_strlcpy(buf, s->str, size);
  g_string_free(s, TRUE);
}

void tl_axis_format_value(double v, char *buf, gsize size) {
  double a = fabs(v);
  if (v == 0)
    g_strlcpy(buf, "0", size);
  else if (a >= 1e-3 && a < 1e5)
    g_snprintf(buf, size, "%.4g", v);
  else
    g_snprintf(buf, size, "%.3e", v);
}
