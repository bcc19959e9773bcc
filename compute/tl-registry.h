/* The one registry front ends list from (CLI, window, Python, tests): operator classes,
 * algorithms and priors, each with a name and a one-line summary. A new operator, algorithm
 * or prior is one file + one line in its table: operators in compute/tl-registry.c (they live
 * in pet/, ct/ and recon/), algorithms and priors in compute/recon/tl-recon-registry.c. */
#pragma once
#include "recon/tl-operator.h"
#include "recon/tl-solver.h"
#include "recon/tl-prior.h"
#include "pet/project/tl-projector.h"

G_BEGIN_DECLS

/* NULL-terminated. */
const TlOperatorClass *const *tl_registry_operators(void);
const TlAlgorithmClass *const *tl_registry_algorithms(void);
const TlPriorClass *const *tl_registry_priors(void);

const TlAlgorithmClass *tl_registry_algorithm(const char *name, GError **error);
const TlPriorClass *tl_registry_prior(const char *name, GError **error);

const char *tl_algorithm_name(const TlAlgorithmClass *klass);
const char *tl_algorithm_summary(const TlAlgorithmClass *klass);
guint tl_algorithm_flags(const TlAlgorithmClass *klass); /* TlAlgorithmFlags */

/* A PET projector as front ends list it: the ray projectors of pet/project (one line each in
 * tl-projector.c's table) and the dual-head system response matrix of pet/srm (one line in
 * tl-registry.c); `name` is what TlReconOptions.projector and `--projector` take. */
typedef struct {
  const char *name;
  const char *label;   /* the window's list */
  const char *summary; /* one line */
  guint flags;         /* TlProjectorFlags */
} TlProjectorInfo;

/* NULL-terminated, in the order front ends show them (the first is the default). */
const TlProjectorInfo *const *tl_registry_projectors(void);
/* By name; GError naming the known ones. */
const TlProjectorInfo *tl_registry_projector(const char *name, GError **error);
/* "siddon (default), joseph, ..." over the projectors that have every bit of `flags` (0: all),
 * in the registry's order, for --help texts (g_free). */
char *tl_registry_projector_help(guint flags);

G_END_DECLS
