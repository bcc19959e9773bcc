/* One line per algorithm and per prior: front ends list exactly these. */
#include "tl-recon-registry.h"
#include "tl-solver-private.h"

static const TlAlgorithmClass *const algorithms[] = {
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
