/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The registry front ends list from: one line per operator class here; algorithms and priors
 * one line each in compute/recon/tl-recon-registry.c; ray projectors one line each in
 * compute/pet/project/tl-projector.c, the system-matrix projector here. */
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

/* The projectors that are not TlProjectorClasses, one line each: "srm" is TlRecon's binned
 * dual-head operator on the precomputed matrix (pet/srm/tl-srm.h). */
static const TlProjectorInfo other_projectors[] = {
    {"srm", "System response matrix",
     "precomputed dual-head system response matrix with crystal penetration", TL_PROJECTOR_BINNED |
     TL_PROJECTOR_DUAL_HEAD},
};

const TlProjectorInfo *const *tl_registry_projectors(void) {
  static TlProjectorInfo ray[32];
  static const TlProjectorInfo *list[G_N_ELEMENTS(ray) + G_N_ELEMENTS(other_projectors) + 1];
  static gsize done;
  if (g_once_init_enter(&done)) {
    guint n = 0;
    for (const TlProjectorClass *const *k = tl_projector_classes(); *k && n < G_N_ELEMENTS(ray);
         k++, n++) {
      ray[n] = (TlProjectorInfo){(*k)->name, (*k)->label, (*k)->summary, (*k)->flags};
      list[n] = &ray[n];
    }
    for (gsize i = 0; i < G_N_ELEMENTS(other_projectors); i++) list[n++] = &other_projectors[i];
    list[n] = NULL;
    g_once_init_leave(&done, 1);
  }
  return list;
}

const TlProjectorInfo *tl_registry_projector(const char *name, GError **error) {
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++)
    if (name && g_str_equal((*p)->name, name)) return *p;
  g_autoptr(GString) known = g_string_new(NULL);
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++)
    g_string_append_printf(known, "%s%s", known->len ? ", " : "", (*p)->name);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown projector '%s' (known: %s)",
              name ? name : "(null)", known->str);
  return NULL;
}

char *tl_registry_projector_help(guint flags) {
  GString *s = g_string_new(NULL);
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++) {
    if (((*p)->flags & flags) != flags) continue;
    g_string_append_printf(s, "%s%s%s", s->len ? ", " : "", (*p)->name,
                           s->len ? "" : " (default)");
    if ((*p)->flags & TL_PROJECTOR_DUAL_HEAD) g_string_append(s, " (binned dual-head data only)");
  }
  return g_string_free(s, FALSE);
}
