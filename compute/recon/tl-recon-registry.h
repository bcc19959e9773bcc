/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The recon module's half of the registry (compute/tl-registry.h is what front ends use):
 * every algorithm and prior class, one line each in tl-recon-registry.c. */
#pragma once
#include "tl-solver.h"
#include "tl-prior.h"

G_BEGIN_DECLS

const TlAlgorithmClass *const *tl_recon_algorithms(void); /* NULL-terminated */
const TlPriorClass *const *tl_recon_priors(void);         /* NULL-terminated */
/* By name ("sart" is os-sart); GError naming the known ones. */
const TlAlgorithmClass *tl_recon_find_algorithm(const char *name, GError **error);
const TlPriorClass *tl_recon_find_prior(const char *name, GError **error);

/* The classes (defined one per file). */
extern const TlAlgorithmClass tl_algo_mlem;
extern const TlAlgorithmClass tl_algo_osem;
extern const TlAlgorithmClass tl_algo_osl;
extern const TlAlgorithmClass tl_algo_bsrem;
extern const TlAlgorithmClass tl_algo_sirt;
extern const TlAlgorithmClass tl_algo_os_sart;
extern const TlAlgorithmClass tl_algo_cgls;
extern const TlAlgorithmClass tl_algo_svrg;
extern const TlAlgorithmClass tl_algo_saga;
extern const TlAlgorithmClass tl_algo_lbfgsb;
extern const TlAlgorithmClass tl_algo_pkma;
extern const TlAlgorithmClass tl_algo_abemml;
extern const TlPriorClass tl_prior_quadratic;
extern const TlPriorClass tl_prior_rdp;
extern const TlPriorClass tl_prior_tv;

G_END_DECLS
