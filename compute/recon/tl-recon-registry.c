/* One line per algorithm and per prior: front ends list exactly these. */
#include "tl-recon-registry.h"
#include "tl-solver-private.h"

static const TlAlgorithmClass *const algorithms[] = {
    &tl_algo_mlem,
    &tl_algo_osem,
    &tl_algo_osl,
    &tl_algo_bsrem,
    &tl_algo_sirt,
    &tl_algo_os_sart,
    &tl_algo_cgls,
    NULL,
};

static const TlPriorClass *const priors[] = {
    &tl_prior_quadratic,
    &tl_prior_rdp,
    &tl_prior_tv,
    NULL,
};

const TlAlgorithmClass *const *tl_recon_algorithms(void) { return algorithms; }
const TlPriorClass *const *tl_recon_priors(void) { return priors; }
