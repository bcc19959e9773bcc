/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The one registry front ends list from (CLI, window, Python, tests): operator classes,
 * algorithms and priors, each with a name and a one-line summary. A new operator, algorithm
 * or prior is one file + one line in its table: operators in compute/tl-registry.c (they live
 * in pet/, ct/ and recon/), algorithms and priors in compute/recon/tl-recon-registry.c. */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"
#include "recon/tl-solver.h"
#include "recon/tl-prior.h"
#include "pet/project/tl-projector.h"

G_BEGIN_DECLS

/* NULL-terminated. */
TL_API const TlOperatorClass *const *tl_registry_operators(void);
TL_API const TlAlgorithmClass *const *tl_registry_algorithms(void);
TL_API const TlPriorClass *const *tl_registry_priors(void);

TL_API const TlAlgorithmClass *tl_registry_algorithm(const char *name, GError **error);
TL_API const TlPriorClass *tl_registry_prior(const char *name, GError **error);

TL_API const char *tl_algorithm_name(const TlAlgorithmClass *klass);
TL_API const char *tl_algorithm_summary(const TlAlgorithmClass *klass);
TL_API guint tl_algorithm_flags(const TlAlgorithmClass *klass); /* TlAlgorithmFlags */

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
TL_API const TlProjectorInfo *const *tl_registry_projectors(void);
/* By name; GError naming the known ones. */
TL_API const TlProjectorInfo *tl_registry_projector(const char *name, GError **error);
/* "siddon (default), joseph, ..." over the projectors that have every bit of `flags` (0: all),
 * in the registry's order, for --help texts (g_free). */
TL_API char *tl_registry_projector_help(guint flags);

G_END_DECLS
