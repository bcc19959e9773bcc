/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Bq/mL: isotopes, decay correction and the calibration factor (equations in tl-units.h). */
#include "tl-units.h"
#include "tl-error.h"
#include <math.h>
#include <string.h>

/* Half-lives and positron fractions from the evaluated nuclear data (DDEP / ENSDF
 * recommended values, rounded to the digits given): F-18 1.8288 h and 96.86 % beta+; C-11
 * 20.364 min, 99.76 %; N-13 9.965 min, 99.82 %; O-15 122.24 s, 99.89 %; Ga-68 67.83 min,
 * 88.91 %; Rb-82 1.2575 min, 95.43 %; Cu-64 12.7004 h, 17.52 %; Zr-89 78.41 h, 22.74 %. */
static const TlIsotope isotopes[] = {
    {"none", 0, 1.0},
    {"F18", 1.8288 * 3600, 0.9686},
    {"C11", 20.364 * 60, 0.9976},
    {"N13", 9.965 * 60, 0.9982},
    {"O15", 122.24, 0.9989},
    {"Ga68", 67.83 * 60, 0.8891},
    {"Rb82", 1.2575 * 60, 0.9543},
    {"Cu64", 12.7004 * 3600, 0.1752},
    {"Zr89", 78.41 * 3600, 0.2274},
};

const TlIsotope *tl_isotopes(guint *n) {
  if (n) *n = G_N_ELEMENTS(isotopes);
  return isotopes;
}

/* "F-18", "f18", "18F" -> "f18": letters then digits, lower case, '-' dropped. */
static gboolean canonical(const char *name, char out[16]) {
  char letters[8] = {0}, digits[8] = {0};
  gsize nl = 0, nd = 0;
  for (const char *c = name; *c; c++) {
    if (*c == '-') continue;
    if (g_ascii_isalpha(*c) && nl < 7) letters[nl++] = g_ascii_tolower(*c);
    else if (g_ascii_isdigit(*c) && nd < 7) digits[nd++] = *c;
    else return FALSE;
  }
  g_snprintf(out, 16, "%s%s", letters, digits);
  return nl > 0;
}

const TlIsotope *tl_isotope_find(const char *name, GError **error) {
  char want[16], have[16];
  if (name && canonical(name, want))
    for (guint i = 0; i < G_N_ELEMENTS(isotopes); i++)
      if (canonical(isotopes[i].name, have) && strcmp(want, have) == 0) return &isotopes[i];
  g_autoptr(GString) known = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(isotopes); i++)
    g_string_append_printf(known, "%s%s", i ? ", " : "", isotopes[i].name);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "isotope '%s': expected one of %s",
              name ? name : "(null)", known->str);
  return NULL;
}

double tl_decay_correction(const TlIsotope *iso, double start_s, double duration_s) {
  if (!iso || iso->half_life_s <= 0) return 1.0;
  double lambda = G_LN2 / iso->half_life_s, lt = lambda * duration_s;
  /* lambda T / (1 - exp(-lambda T)) through expm1: no cancellation for short frames */
  double frame = lt > 0 ? lt / -expm1(-lt) : 1.0;
  return exp(lambda * start_s) * frame;
}

gboolean tl_quant_validate(const TlQuant *q, GError **error) {
  const char *field = NULL;
  double value = 0;
  if (!(isfinite(q->calibration) && q->calibration > 0)) field = "calibration factor", value = q->calibration;
  else if (!(isfinite(q->duration_s) && q->duration_s > 0)) field = "duration (s)", value = q->duration_s;
  else if (!(isfinite(q->frame_start_s) && q->frame_start_s >= 0)) field = "frame start (s)", value = q->frame_start_s;
  if (field) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s %g: expected a finite value %s", field,
                value, strcmp(field, "frame start (s)") == 0 ? ">= 0" : "> 0");
    return FALSE;
  }
  const TlIsotope *iso = q->isotope;
  if (iso && iso->half_life_s > 0 && q->frame_start_s > 1000 * iso->half_life_s) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "frame start %g s: more than 1000 half-lives of %s (%g s) after the reference "
                "time (expected a start within the isotope's life)",
                q->frame_start_s, iso->name, iso->half_life_s);
    return FALSE;
  }
  return TRUE;
}

double tl_quant_scale(const TlQuant *q) {
  double beta = q->isotope ? q->isotope->positron_fraction : 1.0;
  return tl_decay_correction(q->isotope, q->frame_start_s, q->duration_s) /
         (q->duration_s * q->calibration * beta);
}

gboolean tl_quant_apply(const TlQuant *q, TlImage *image, GError **error) {
  if (!tl_quant_validate(q, error)) return FALSE;
  if (image->unit[0]) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "image already in %s: expected one in arbitrary units (a reconstruction)",
                image->unit);
    return FALSE;
  }
  double k = tl_quant_scale(q);
  guint64 n = tl_image_grid_n_voxels(&image->grid);
  for (guint64 i = 0; i < n; i++) image->data[i] = (float)(image->data[i] * k);
  tl_image_set_unit(image, "Bq/mL");
  return TRUE;
}

gboolean tl_quant_calibrate(const TlQuant *q, double mean_value, double known_bqml,
                            double *calibration, GError **error) {
  TlQuant c = *q;
  c.calibration = 1;
  if (!tl_quant_validate(&c, error)) return FALSE;
  if (!(isfinite(mean_value) && mean_value > 0) || !(isfinite(known_bqml) && known_bqml > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "calibration: mean image value %g over a known %g Bq/mL: expected both finite "
                "and > 0", mean_value, known_bqml);
    return FALSE;
  }
  /* x = F beta A_0 T / DC, solved for F */
  double beta = q->isotope ? q->isotope->positron_fraction : 1.0;
  *calibration = mean_value * tl_decay_correction(q->isotope, q->frame_start_s, q->duration_s) /
                 (q->duration_s * beta * known_bqml);
  return TRUE;
}
