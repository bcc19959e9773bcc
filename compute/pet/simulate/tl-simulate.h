/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Monte-Carlo PET simulator (CPU, threaded): annihilations sampled from an activity image,
 * back-to-back photons in isotropic directions, detection on the scanner's crystals,
 * survival exp(-integral of mu) along the line (van Gendt et al. 2021 eq. 6), TOF from a Gaussian
 * timing resolution, Poisson total counts. Optional physics (docs/pet.md, Simulator):
 * Compton scatter in the object (single scatter, Klein-Nishina, tl-compton.h) with the
 * scanner's energy window and resolution, per-crystal efficiencies, and random coincidences
 * either as a uniform share or from the singles rates (Casey & Hoffman), as prompts and as
 * delayed coincidences. Every prompt is tagged true, scattered or random (TlListmode.tags).
 * The same seed gives the same events whatever the number of threads: the work is cut into
 * fixed blocks, each with its own random stream. No positron range, non-collinearity, dead
 * time, or scatter in the crystals. */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"

G_BEGIN_DECLS

#define TL_SIMULATE_DEFAULT_WINDOW_NS 4.57 /* the coincidence window 2 tau */
#define TL_SIMULATE_MAX_EFFICIENCY_SPREAD 0.5

typedef struct {
  double events;           /* expected detected events (trues + scattered + randoms); the
                              total is Poisson(events) (exactly `events` with exact_count) */
  double decays;           /* used when events == 0: expected annihilations instead, so the
                              detected count measures sensitivity and attenuation */
  guint64 seed;
  gboolean tof;            /* needs scanner->tof_bins > 0 */
  double randoms_fraction; /* in [0, 1): share of the detected events that are randoms,
                              uniform over the allowed pairs (no delayeds) */
  gboolean exact_count;    /* no Poisson draw of the totals */
  guint n_threads;         /* 0 = number of processors */
  const char *description; /* stored in the list mode (may be NULL) */
  /* Compton scatter in the object (needs mu): a photon's first interaction scatters it
   * (Klein-Nishina), a second one removes it; every photon's energy is then measured with
   * the scanner's resolution and kept only inside its window (tl_scanner_energy). Off: an
   * interaction removes the photon and energies are not modelled. */
  gboolean scatter;
  /* Crystal efficiencies: a photon reaching crystal i is kept with probability
   * eps_i / max eps. eps = `efficiencies` (n_crystals values > 0) when given, else drawn
   * 1 + spread * N(0, 1), redrawn below 0.05, from (efficiency_seed or seed) when
   * efficiency_spread > 0 (at most TL_SIMULATE_MAX_EFFICIENCY_SPREAD). */
  double efficiency_spread;
  guint64 efficiency_seed; /* 0 = seed: the same map for another seed's noise when set */
  const float *efficiencies;
  /* Randoms from singles: with activity_bq > 0 the acquisition is activity_bq decays per
   * second for duration_s seconds (events and decays must be 0: the decays are activity x
   * duration); the singles rate S_i of each crystal comes from the simulated photons, and
   * pair (i, j) gets Poisson(2 tau S_i S_j T) randoms in the prompts and, independently, as
   * many on average in the delayed window (TlListmode.delayed); TOF bins uniform. Cannot be
   * combined with randoms_fraction. */
  double activity_bq;
  double duration_s;
  double coincidence_window_ns; /* 2 tau (default TL_SIMULATE_DEFAULT_WINDOW_NS) */
  /* Outputs, arrays of scanner->n_crystals owned by the caller (NULL = not wanted). */
  float *efficiencies_out; /* the efficiencies used (all 1 without) */
  double *singles_out;     /* detected single photons per crystal during the simulation (every
                              photon detected, window and efficiency passed, partner or not);
                              the rate is singles_out[i] * activity_bq / stats->decays per s */
} TlSimulateParams;

typedef struct {
  double decays;           /* annihilations the data stand for (sampled ones / cone share) */
  guint64 sampled;         /* annihilations actually sampled (in the acceptance cone) */
  guint64 geometric;       /* pair path: both photons on crystals, pair allowed */
  guint64 attenuated;      /* pair path: of those, lost to attenuation */
  guint64 tof_outside;     /* lost because the TOF bin fell outside the bins */
  guint64 trues, scattered, randoms; /* prompts by tag */
  guint64 delayed;         /* delayed coincidences (randoms from singles) */
  /* photon path (scatter, singles): per photon */
  guint64 photons;         /* photons tracked */
  guint64 interacted;      /* with a first interaction in the object */
  guint64 absorbed;        /* removed in the object (any interaction without scatter, the
                              second one with it) */
  guint64 missed;          /* reaching no crystal */
  guint64 energy_rejected; /* measured energy outside the window */
  guint64 efficiency_rejected; /* lost to the crystal efficiency (both paths) */
  guint64 singles;         /* detected */
  double randoms_expected; /* randoms from singles: sum of 2 tau S_i S_j T over allowed pairs */
  double outside_fraction; /* activity outside the scanner (ignored) */
  double cone_cos;         /* directions sampled with |cos(polar)| <= this */
  double seconds;
} TlSimulateStats;

/* fraction in [0, 1], called on the calling thread. */
typedef void (*TlSimulateProgress)(double fraction, guint64 events, gpointer user_data);

TL_API void tl_simulate_params_init(TlSimulateParams *p);

/* activity: >= 0 and finite; mu (mm^-1, may be NULL = no attenuation) on any grid, inside
 * the scanner. */
TL_API TlListmode *tl_simulate(const TlScanner *scanner, const TlImage *activity, const TlImage *mu,
                        const TlSimulateParams *params, TlSimulateProgress progress,
                        gpointer user_data, GCancellable *cancel, TlSimulateStats *stats,
                        GError **error);

/* The crystal efficiency file (docs/formats.md): '#' header lines (scanner, crystal count,
 * spread, seed), then one value per crystal id, one per line; written atomically. */
TL_API gboolean tl_simulate_save_efficiencies(const TlScanner *scanner, const float *eff,
                                       const TlSimulateParams *params, const char *path,
                                       GError **error);

G_END_DECLS
