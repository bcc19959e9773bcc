/* CGLS: conjugate gradients on the normal equations A^T A x = A^T y of seed 001 eq. 2.6,
 * min 1/2 |A x - y|^2, in the residual form that never forms A^T A (Hestenes & Stiefel
 * 1952; Paige & Saunders' CGLS):
 *
 *   r = y - A x,  s = A^T r,  p = s,  gamma = |s|^2
 *   each iteration:  q = A p,  alpha = gamma / |q|^2,  x += alpha p,  r -= alpha q,
 *                    s = A^T r,  gamma' = |s|^2,  p = s + (gamma' / gamma) p
 *
 * x_k minimises |y - A x| over the growing Krylov spaces, so |r_k| never increases (the
 * test checks it). Every vector operation is one fused expression; the three reductions
 * per iteration finish the stream (they are the cancellation points). */
#include "tl-ct-recon-private.h"

static gboolean bind(TlCtRecon *r, GError **error) {
  const TlCtGeometry *g = tl_ct_projector_geometry(r->proj);
  TlCtViews all = tl_ct_views_all(g);
  if (!r->r && !(r->r = tl_array_new_float(r->ctx, tl_ct_views_n_pixels(g, &all), error)))
    return FALSE;
  if (!r->p && !(r->p = tl_array_new_float(r->ctx, r->n_voxels, error))) return FALSE;
  tl_expr_args_array(r->args, "r", r->r);
  tl_expr_args_array(r->args, "p", r->p);
  tl_expr_args_array(r->args, "q", r->q_big);
  tl_expr_args_array(r->args, "s", r->vol);
  tl_expr_args_array(r->args, "y", r->y[0]);
  tl_expr_args_array(r->args, "x", r->x);
  tl_expr_args_array(r->args, "n", r->next);
  return TRUE;
}

/* (Re)starts from the current image. */
gboolean tl_ct_cgls_init(TlCtRecon *r, GError **error) {
  double rr;
  if (!bind(r, error) ||
      !tl_ct_projector_forward(r->proj, r->stream, &r->views[0], r->x, r->q_big, FALSE, error) ||
      !tl_ct_recon_expr(r, "r = y - q", error) ||
      !tl_ct_projector_back(r->proj, r->stream, &r->views[0], r->r, r->vol, FALSE, error) ||
      !tl_ct_recon_expr(r, "p = s", error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(s, s)", r->args, &r->gamma, error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(r, r)", r->args, &rr, error))
    return FALSE;
  r->cgls_objective = 0.5 * rr;
  r->cgls_ready = TRUE;
  return TRUE;
}

gboolean tl_ct_cgls_step(TlCtRecon *r, double *objective, GError **error) {
  if (!r->cgls_ready && !tl_ct_cgls_init(r, error)) return FALSE;
  if (!bind(r, error)) return FALSE;
  double delta;
  if (!tl_ct_projector_forward(r->proj, r->stream, &r->views[0], r->p, r->q_big, FALSE, error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(q, q)", r->args, &delta, error))
    return FALSE;
  if (!(delta > 0) || !(r->gamma > 0)) {
    /* A^T r = 0: x already solves the normal equations; keep it */
    *objective = r->cgls_objective;
    return tl_ct_recon_expr(r, "n = x", error);
  }
  double gamma_new, rr;
  tl_expr_args_scalar(r->args, "a", (float)(r->gamma / delta));
  if (!tl_ct_recon_expr(r, "n = x + a * p", error) || !tl_ct_recon_expr(r, "r = r - a * q", error) ||
      !tl_ct_projector_back(r->proj, r->stream, &r->views[0], r->r, r->vol, FALSE, error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(s, s)", r->args, &gamma_new, error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(r, r)", r->args, &rr, error))
    return FALSE;
  tl_expr_args_scalar(r->args, "b", (float)(gamma_new / r->gamma));
  if (!tl_ct_recon_expr(r, "p = s + b * p", error)) return FALSE;
  r->gamma = gamma_new;
  r->cgls_objective = 0.5 * rr;
  *objective = r->cgls_objective;
  return TRUE;
}
