/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The registry front ends list from: one line per operator class here; algorithms and priors
 * one line each in compute/recon/tl-recon-registry.c. */
#include "tl-registry.h"
#include "recon/tl-recon-registry.h"
#include "recon/tl-solver-private.h"
#include "recon/tl-csr-operator.h"
#include "ct/tl-ct-operator.h"
#include "pet/tl-pet-operator.h"
#include "pet/srm/tl-srm-operator.h"

static const TlOperatorClass *const operators[] = {
    &tl_pet_listmode_operator_class,
    &tl_pet_binned_operator_class,
    &tl_ct_operator_class,
    &tl_csr_operator_class,
    &tl_pet_srm_operator_class,
    NULL,
};

const TlOperatorClass *const *tl_registry_operators(void) { return operators; }
const TlAlgorithmClass *const *tl_registry_algorithms(void) { return tl_recon_algorithms(); }
const TlPriorClass *const *tl_registry_priors(void) { return tl_recon_priors(); }

const char *tl_algorithm_name(const TlAlgorithmClass *k) { return k->name; }
const char *tl_algorithm_summary(const TlAlgorithmClass *k) { return k->summary; }
guint tl_algorithm_flags(const TlAlgorithmClass *k) { return k->flags; }

const TlAlgorithmClass *tl_registry_algorithm(const char *name, GError **error) {
  return tl_recon_find_algorithm(name, error);
}

const TlPriorClass *tl_registry_prior(const char *name, GError **error) {
  return tl_recon_find_prior(name, error);
}
