/* Monte-Carlo PET simulator (CPU, threaded): annihilations sampled from an activity image,
 * back-to-back photons in isotropic directions, detection on the scanner's crystals,
 * survival exp(-integral of mu) along the line (seed 000 eq. 6), TOF from a Gaussian
 * timing resolution, optional uniform randoms, Poisson total counts. The same seed gives
 * the same events whatever the number of threads: the work is cut into fixed blocks, each
 * with its own random stream. No scatter, positron range, non-collinearity or dead time. */
#pragma once
#include <gio/gio.h>
#include "image/tl-image.h"
#include "tl-listmode.h"

G_BEGIN_DECLS

typedef struct {
  double events;           /* expected detected events (trues + randoms); the total is
                              Poisson(events) (exactly `events` with exact_count) */
  double decays;           /* used when events == 0: expected annihilations instead, so the
                              detected count measures sensitivity and attenuation */
  guint64 seed;
  gboolean tof;            /* needs scanner->tof_bins > 0 */
  double randoms_fraction; /* in [0, 1): share of the detected events that are randoms */
  gboolean exact_count;    /* no Poisson draw of the totals */
  guint n_threads;         /* 0 = number of processors */
  const char *description; /* stored in the list mode (may be NULL) */
} TlSimulateParams;

typedef struct {
  double decays;           /* annihilations the data stand for (sampled ones / cone share) */
  guint64 sampled;         /* annihilations actually sampled (in the acceptance cone) */
  guint64 geometric;       /* both photons on crystals, pair allowed */
  guint64 attenuated;      /* of those, lost to attenuation */
  guint64 tof_outside;     /* lost because the TOF bin fell outside the bins */
  guint64 trues, randoms;
  double outside_fraction; /* activity outside the scanner (ignored) */
  double cone_cos;         /* directions sampled with |cos(polar)| <= this */
  double seconds;
} TlSimulateStats;

/* fraction in [0, 1], called on the calling thread. */
typedef void (*TlSimulateProgress)(double fraction, guint64 events, gpointer user_data);

void tl_simulate_params_init(TlSimulateParams *p);

/* activity: >= 0 and finite; mu (mm^-1, may be NULL = no attenuation) on any grid. */
TlListmode *tl_simulate(const TlScanner *scanner, const TlImage *activity, const TlImage *mu,
                        const TlSimulateParams *params, TlSimulateProgress progress,
                        gpointer user_data, GCancellable *cancel, TlSimulateStats *stats,
                        GError **error);

G_END_DECLS
