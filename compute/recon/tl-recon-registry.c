/* SPDX-License-Identifier: GPL-3.0-or-later */
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
    &tl_algo_svrg,
    &tl_algo_saga,
    &tl_algo_lbfgsb,
    &tl_algo_pkma,
    &tl_algo_abemml,
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

/* Entry `name` of a NULL-terminated class list whose structs start with their name (both
 * class types do), else a GError listing the known names. */
static gconstpointer find(const void *const *list, const char *name, const char *what,
                          GError **error) {
  for (guint i = 0; name && list[i]; i++)
    if (g_str_equal(*(const char *const *)list[i], name)) return list[i];
  g_autoptr(GString) known = g_string_new(NULL);
  for (guint i = 0; list[i]; i++)
    g_string_append_printf(known, "%s%s", i ? ", " : "", *(const char *const *)list[i]);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown %s '%s' (known: %s)", what,
              name ? name : "(none)", known->str);
  return NULL;
}

const TlAlgorithmClass *tl_recon_find_algorithm(const char *name, GError **error) {
  if (g_strcmp0(name, "sart") == 0) name = "os-sart";
  return find((const void *const *)algorithms, name, "algorithm", error);
}

const TlPriorClass *tl_recon_find_prior(const char *name, GError **error) {
  return find((const void *const *)priors, name, "prior", error);
}
