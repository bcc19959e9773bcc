/* The registry front ends list from: one line per operator class here; algorithms and priors
 * one line each in compute/recon/tl-recon-registry.c. */
#include "tl-registry.h"
#include "recon/tl-recon-registry.h"
#include "recon/tl-solver-private.h"
#include "recon/tl-csr-operator.h"
#include "ct/tl-ct-operator.h"
#include "pet/tl-pet-operator.h"

static const TlOperatorClass *const operators[] = {
    &tl_pet_listmode_operator_class,
    &tl_pet_binned_operator_class,
    &tl_ct_operator_class,
    &tl_csr_operator_class,
    NULL,
};

const TlOperatorClass *const *tl_registry_operators(void) { return operators; }
const TlAlgorithmClass *const *tl_registry_algorithms(void) { return tl_recon_algorithms(); }
const TlPriorClass *const *tl_registry_priors(void) { return tl_recon_priors(); }

const char *tl_algorithm_name(const TlAlgorithmClass *k) { return k->name; }
const char *tl_algorithm_summary(const TlAlgorithmClass *k) { return k->summary; }
guint tl_algorithm_flags(const TlAlgorithmClass *k) { return k->flags; }

const TlAlgorithmClass *tl_registry_algorithm(const char *name, GError **error) {
  const TlAlgorithmClass *const *all = tl_recon_algorithms();
  const char *want = g_strcmp0(name, "sart") == 0 ? "os-sart" : name;
  guint n = 0;
  for (; all[n]; n++)
    if (g_strcmp0(all[n]->name, want) == 0) return all[n];
  GString *known = g_string_new(NULL);
  for (guint i = 0; i < n; i++) g_string_append_printf(known, "%s%s", i ? ", " : "", all[i]->name);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown algorithm '%s' (known: %s)",
              name ? name : "(none)", known->str);
  g_string_free(known, TRUE);
  return NULL;
}

const TlPriorClass *tl_registry_prior(const char *name, GError **error) {
  const TlPriorClass *const *all = tl_recon_priors();
  guint n = 0;
  for (; all[n]; n++)
    if (g_strcmp0(all[n]->name, name) == 0) return all[n];
  GString *known = g_string_new(NULL);
  for (guint i = 0; i < n; i++) g_string_append_printf(known, "%s%s", i ? ", " : "", all[i]->name);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown prior '%s' (known: %s)",
              name ? name : "(none)", known->str);
  g_string_free(known, TRUE);
  return NULL;
}
