/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A race's entrants from text (the CLI's `race --algo`, Python's tomolab.race): each is
 * "ALGORITHM[:KEY=VALUE,...]" with the run description's keys (tl-run-spec.h) that shape a
 * solver: subsets, projector, prior, beta, gamma, epsilon, relaxation, tof, tof-nsigma,
 * tor-fwhm, binned, seed, osem-epochs (its OSEM warm start, PETRIC's "OSEM then BSREM"). Keys
 * that name input files (attenuation, norm, randoms, scatter, kappa) or outputs are refused:
 * every entrant sees the same data model, the dataset's own, and the race's objective: the
 * race's own keys (`base`: the CLI's --kappa and --seed, Python's kappa= and seed=) are every
 * entrant's starting values. */
#pragma once
#include "tl-api.h"
#include "dataset/tl-dataset.h"
#include "pet/tl-recon.h"
#include "run/tl-run-spec.h"

G_BEGIN_DECLS

/* The PET reconstruction of entrant `spec` on `ds` (PET list mode, or a sinogram's bins) and
 * `grid`, from the keys of `base` (NULL: the defaults) with the spec's over them; base's kappa
 * is read and set on the solver (tl_run_spec_apply_kappa); base's randoms = delayeds makes the
 * randoms fitted to ds's delayed events the additive term (other randoms sources: GError). Its
 * solver is tl_recon_solver().
 * The objective is left to the race (never computed by the steps themselves, so they are timed
 * alone). GError naming the spec and the key. */
TL_API TlRecon *tl_run_race_entrant(TlContext *ctx, const TlDataset *ds, const TlImageGrid *grid,
                                    const TlRunSpec *base, const char *spec, GError **error);

G_END_DECLS
