/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Images in real units: Bq/mL from a reconstruction, the acquisition's duration, a calibration
 * factor and the isotope's decay (issue 13 item 6).
 *
 * A reconstruction x (tl-recon.h) is in counts per unit sensitivity: its total is the
 * number of detected annihilations the model explains, spread over the voxels. For an
 * acquisition of T seconds that starts t_s after the reference time (injection or the
 * activity assay), a voxel holding A_0 Bq/mL at the reference time emits positrons at
 *   beta A_0 exp(-lambda t),   lambda = ln 2 / T_half,  beta = the positron fraction,
 * so the frame records, per mL,
 *   beta A_0 integral_{t_s}^{t_s + T} exp(-lambda t) dt = beta A_0 T / DC,
 *   DC = exp(lambda t_s) lambda T / (1 - exp(-lambda T))            (decay correction)
 * DC brings the frame's mean rate back to the rate at the reference time (DC = 1 without
 * decay). A scanner maps a rate of positron emissions per mL to image values per second
 * by one factor, F (the calibration factor, image value per second per Bq/mL of positron
 * emitters, found once by scanning a known concentration):
 *   x = F beta A_0 T / DC   =>   A_0 = x DC / (T F beta).
 * A simulation has no decay (isotope "none": lambda = 0, beta = 1) and a known activity
 * image, so F found on one simulation brings another one back in its truth's units. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "image/tl-image.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;          /* "F18" */
  double half_life_s;
  double positron_fraction;  /* beta+ emissions per decay */
} TlIsotope;

/* The table (positron emitters of PET; "none" first: no decay, beta = 1); n_isotopes set. */
TL_API const TlIsotope *tl_isotopes(guint *n_isotopes);
/* By name, case-insensitive, with or without '-', element first or mass first ("F18",
 * "f-18", "18F"); GError naming the name and listing the known ones. */
TL_API const TlIsotope *tl_isotope_find(const char *name, GError **error);

/* DC above for a frame [start_s, start_s + duration_s] (iso NULL or "none": 1). */
TL_API double tl_decay_correction(const TlIsotope *iso, double start_s, double duration_s);

typedef struct {
  double calibration;       /* F > 0: image value per second per Bq/mL of positron emitters */
  double duration_s;        /* T > 0 */
  double frame_start_s;     /* t_s >= 0 after the reference time */
  const TlIsotope *isotope; /* NULL = none */
} TlQuant;

/* Finite, F > 0, T > 0, t_s >= 0 and t_s below 1000 half-lives (exp(lambda t_s) stays
 * finite); the GError names the field and the value. */
TL_API gboolean tl_quant_validate(const TlQuant *q, GError **error);
/* The factor DC / (T F beta) that takes an image to Bq/mL. */
TL_API double tl_quant_scale(const TlQuant *q);
/* Every voxel times tl_quant_scale, unit "Bq/mL". GError (image unchanged) for an invalid q
 * or an image already in a unit. */
TL_API gboolean tl_quant_apply(const TlQuant *q, TlImage *image, GError **error);
/* The calibration factor from a scan of a known concentration: the mean image value m over a
 * region of uniform activity known_bqml (Bq/mL at the reference time), with q's duration,
 * frame start and isotope (q->calibration ignored): F = m DC / (T beta known). GError for
 * m <= 0, known <= 0 or anything non-finite. */
TL_API gboolean tl_quant_calibrate(const TlQuant *q, double mean_value, double known_bqml,
                            double *calibration, GError **error);

G_END_DECLS
