/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C references of the priors of compute/recon/tl-prior.h, in double, written from the
 * formulas there and sharing no code with shaders/recon/prior.comp: the pair priors as a loop
 * over unordered neighbour pairs (each pair once, its potential and both partial derivatives),
 * TV as the sum of its per-voxel terms with the gradient accumulated by the chain rule. For the
 * algorithm tests, tl_ref_prior_gradient has the shape of a gradient callback. */
#pragma once
#include <glib.h>

typedef enum { TL_REF_PRIOR_QUADRATIC, TL_REF_PRIOR_RDP, TL_REF_PRIOR_TV } TlRefPriorKind;

typedef struct {
  TlRefPriorKind kind;
  guint dims[3];       /* x fastest */
  double voxel_mm[3];
  double gamma, epsilon;
} TlRefPrior;

/* "quadratic", "rdp", "tv" -> kind; FALSE for anything else. */
gboolean tl_ref_prior_kind(const char *name, TlRefPriorKind *kind);
guint64 tl_ref_prior_n(const TlRefPrior *p);
/* R(x). */
double tl_ref_prior_value(const TlRefPrior *p, const double *x);
/* g = dR/dx (overwritten); user is a const TlRefPrior *. */
void tl_ref_prior_gradient(const double *x, double *g, void *user);
