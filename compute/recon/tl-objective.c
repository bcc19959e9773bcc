/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The penalised Poisson objective of an emission problem as functions of any image: value,
 * gradient (all data or one subset's share), and the prior's per-voxel weights kappa, for the
 * gradient algorithms (tl-algo-svrg.c, -saga, -lbfgsb, -pkma) and for researchers writing
 * their own (the C and Python API). With ybar = D A x + a and s = A^T D^T 1 over every
 * measurable datum,
 *
 *   Phi(x)          = sum_j (y_j log ybar_j) - s.x - sum_j a_j - beta R(x)
 *   dPhi/dx         = A^T D^T (y / ybar) - s - beta dR/dx
 *   subset k share  = A_k^T D_k^T (y_k / ybar_k) - s_k - (beta / S) dR/dx
 *
 * (data with ybar <= 0 are left out, as in every EM pass). This is the objective of the PETRIC
 * challenge (Thielemans et al. 2024; SIRF's Poisson log-likelihood with linear model and
 * STIR's relative difference prior with kappa) when the prior is rdp with kappa and beta is
 * PETRIC's penalisation factor. kappa as PETRIC computes it (its create_initial_images, after
 * Tsai et al. 2020): the square root of the row sums of minus the log-likelihood's Hessian at
 * an image x (an OSEM image),
 *
 *   kappa = sqrt(max(0, A^T D^T (y D A 1 / ybar^2))).
 */
#include "tl-solver-private.h"
#include <math.h>

static gboolean check(TlSolver *sv, const TlArray *a, const char *what, gboolean emission,
                      GError **error) {
  if (emission && !(sv->klass->flags & TL_ALGO_EMISSION)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: the %s belongs to the Poisson "
                "model: use an emission algorithm", sv->klass->name, tl_operator_label(sv->op),
                what);
    return FALSE;
  }
  if (a && tl_array_length(a) == sv->n_voxels && tl_array_elem_size(a) == sizeof(float))
    return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s on %s: %s of %" G_GUINT64_FORMAT " elements; expected %" G_GUINT64_FORMAT
              " floats (the image grid)", sv->klass->name, tl_operator_label(sv->op), what,
              a ? tl_array_length(a) : 0, sv->n_voxels);
  return FALSE;
}

static gboolean check_subset(TlSolver *sv, guint subset, GError **error) {
  if (subset == G_MAXUINT || subset < sv->n_subsets) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: subset %u; expected < %u "
              "(or all)", sv->klass->name, tl_operator_label(sv->op), subset, sv->n_subsets);
  return FALSE;
}

gboolean tl_solver_objective_at(TlSolver *sv, const TlArray *x, double *objective,
                                double *likelihood, double *prior, GError **error) {
  if (!check(sv, x, "image", TRUE, error)) return FALSE;
  return tl_solver_objective_parts(sv, x, NULL, objective, likelihood, prior, error);
}

/* grad += A_k^T D_k (y_k / ybar_k) at x. */
static gboolean back_ratio(TlSolver *sv, guint k, const TlArray *x, TlArray *grad,
                           TlExprArgs *args, GError **error) {
  if (tl_solver_em_fast(sv)) return tl_operator_em(sv->op, sv->stream, k, x, grad, NULL, error);
  if (!tl_solver_need_scratch(sv, error)) return FALSE;
  tl_expr_args_array(args, "q", sv->q_sub[k]);
  tl_expr_args_array(args, "y", sv->y_sub[k]);
  if (!tl_operator_forward(sv->op, sv->stream, k, x, sv->q_sub[k], error)) return FALSE;
  if (sv->a_sub) {
    tl_expr_args_array(args, "a", sv->a_sub[k]);
    if (!tl_expr_assign(sv->ctx, sv->stream, "q = q + a", args, error)) return FALSE;
  }
  return tl_expr_assign(sv->ctx, sv->stream, "q = select(q > 0, y / q, 0)", args, error) &&
         tl_operator_adjoint(sv->op, sv->stream, k, sv->q_sub[k], grad, error);
}

gboolean tl_solver_data_gradient(TlSolver *sv, guint subset, const TlArray *x, TlArray *grad,
                                 GError **error) {
  if (!check(sv, x, "image", TRUE, error) || !check(sv, grad, "gradient", TRUE, error) ||
      !check_subset(sv, subset, error))
    return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_set_label(args, "data gradient");
  if (!tl_stream_zero(sv->stream, grad, error)) return FALSE;
  guint first = subset == G_MAXUINT ? 0 : subset, last = subset == G_MAXUINT ? sv->n_subsets : subset + 1;
  sv->passes += (double)(last - first) / sv->n_subsets;
  for (guint k = first; k < last; k++)
    if (!back_ratio(sv, k, x, grad, args, error)) return FALSE;
  if (!tl_solver_reduce_image(sv, grad, error)) return FALSE;
  tl_expr_args_array(args, "v", grad);
  tl_expr_args_array(args, "s", subset == G_MAXUINT ? sv->sens_all : sv->sens[subset]);
  return tl_expr_assign(sv->ctx, sv->stream, "v = v - s", args, error);
}

gboolean tl_solver_objective_gradient(TlSolver *sv, guint subset, const TlArray *x,
                                      TlArray *grad, GError **error) {
  if (!tl_solver_data_gradient(sv, subset, x, grad, error)) return FALSE;
  if (!sv->prior || sv->opt.beta == 0) return TRUE;
  if (x == sv->grad) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: the image is the solver's prior "
                "scratch", sv->klass->name);
    return FALSE;
  }
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  double b = subset == G_MAXUINT ? tl_solver_beta(sv) : tl_solver_beta(sv) / sv->n_subsets;
  tl_expr_args_array(args, "v", grad);
  tl_expr_args_array(args, "g", sv->grad);
  tl_expr_args_scalar(args, "b", (float)b);
  tl_expr_args_set_label(args, "objective gradient");
  return tl_prior_gradient(sv->prior, sv->stream, x, sv->grad, error) &&
         tl_expr_assign(sv->ctx, sv->stream, "v = v - b * g", args, error);
}

TlPrior *tl_solver_prior(TlSolver *sv) { return sv->prior; }
TlStream *tl_solver_stream(TlSolver *sv) { return sv->stream; }

gboolean tl_solver_set_kappa(TlSolver *sv, const TlImage *kappa, GError **error) {
  if (!kappa) {
    if (sv->prior) tl_prior_set_kappa(sv->prior, NULL, NULL);
    g_clear_pointer(&sv->kappa, tl_array_free);
    return TRUE;
  }
  if (!tl_image_grid_equal(&kappa->grid, tl_operator_grid(sv->op))) {
    g_autofree char *a = tl_image_grid_key(&kappa->grid);
    g_autofree char *b = tl_image_grid_key(tl_operator_grid(sv->op));
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "the kappa image's grid (%s) is not the reconstruction grid (%s)", a, b);
    return FALSE;
  }
  guint64 n = sv->n_voxels;
  for (guint64 i = 0; i < n; i++)
    if (!(kappa->data[i] >= 0) || !isfinite(kappa->data[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "kappa image: voxel %" G_GUINT64_FORMAT
                  " is %g; expected finite values >= 0", i, kappa->data[i]);
      return FALSE;
    }
  g_autoptr(TlArray) a = tl_array_new_float(sv->ctx, n, error);
  if (!a || !tl_array_upload(a, kappa->data, error)) return FALSE;
  if (sv->prior && !tl_prior_set_kappa(sv->prior, a, error)) return FALSE;
  if (!tl_stream_finish(sv->stream, error)) return FALSE; /* no dispatch reads the old one */
  tl_array_free(sv->kappa);
  sv->kappa = g_steal_pointer(&a);
  return TRUE;
}

TlImage *tl_solver_compute_kappa(TlSolver *sv, const TlImage *image, GError **error) {
  if (!check(sv, sv->x, "kappa", TRUE, error)) return NULL;
  if (!tl_image_grid_equal(&image->grid, tl_operator_grid(sv->op))) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "kappa: the image's grid is not the "
                "reconstruction grid");
    return NULL;
  }
  if (!tl_solver_need_scratch(sv, error)) return NULL;
  guint64 n = sv->n_voxels, qn = MAX(tl_operator_max_subset_length(sv->op), 1);
  g_autoptr(TlArray) x = tl_array_new_float(sv->ctx, n, error);
  g_autoptr(TlArray) ones = x ? tl_array_new_float(sv->ctx, n, error) : NULL;
  g_autoptr(TlArray) h = ones ? tl_array_new_float(sv->ctx, n, error) : NULL;
  g_autoptr(TlArray) yb = h ? tl_array_new_float(sv->ctx, qn, error) : NULL;
  if (!yb || !tl_array_upload(x, image->data, error)) return NULL;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "o", ones);
  tl_expr_args_array(args, "h", h);
  tl_expr_args_set_label(args, "kappa");
  if (!tl_expr_assign(sv->ctx, sv->stream, "o = 1", args, error) ||
      !tl_stream_zero(sv->stream, h, error))
    return NULL;
  for (guint k = 0; k < sv->n_subsets; k++) {
    g_autoptr(TlArray) ybk = tl_array_new_view(yb, 0, tl_operator_subset_length(sv->op, k), error);
    if (!ybk) return NULL;
    tl_expr_args_array(args, "q", sv->q_sub[k]);
    tl_expr_args_array(args, "b", ybk);
    tl_expr_args_array(args, "y", sv->y_sub[k]);
    if (!tl_operator_forward(sv->op, sv->stream, k, x, ybk, error)) return NULL;
    if (sv->a_sub) {
      tl_expr_args_array(args, "a", sv->a_sub[k]);
      if (!tl_expr_assign(sv->ctx, sv->stream, "b = b + a", args, error)) return NULL;
    }
    if (!tl_operator_forward(sv->op, sv->stream, k, ones, sv->q_sub[k], error) ||
        !tl_expr_assign(sv->ctx, sv->stream, "q = select(b > 0, y * q / (b * b), 0)", args,
                        error) ||
        !tl_operator_adjoint(sv->op, sv->stream, k, sv->q_sub[k], h, error))
      return NULL;
  }
  if (!tl_solver_reduce_image(sv, h, error) ||
      !tl_expr_assign(sv->ctx, sv->stream, "h = sqrt(max(h, 0))", args, error) ||
      !tl_stream_finish(sv->stream, error))
    return NULL;
  g_autoptr(TlImage) out = tl_image_new(tl_operator_grid(sv->op));
  if (!tl_array_download(h, out->data, error)) return NULL;
  return g_steal_pointer(&out);
}

/* P = 1 / (s / max(x, delta) + beta H_R(x)) where s > 0, else 0: half the harmonic mean of
 * the EM preconditioner x / s and the inverse of the prior Hessian's diagonal beta H_R, the
 * preconditioner of the winning PETRIC entry (MaGeZ: Ehrhardt, Kereta & Schramm, PETRIC
 * 2024; docs/references.md). Without a prior it is x / s, with which a gradient step of length 1 is the EM
 * update. delta = 1e-3 times the image's mean keeps voxels at 0 movable. */
gboolean tl_solver_precond(TlSolver *sv, const TlArray *x, TlArray *P, GError **error) {
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  double sum = 0;
  tl_expr_args_array(args, "x", (TlArray *)x);
  tl_expr_args_array(args, "P", P);
  tl_expr_args_array(args, "S", sv->sens_all);
  tl_expr_args_set_label(args, "preconditioner");
  if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(x)", args, &sum, error)) return FALSE;
  sv->step_delta = fmax(1e-3 * sum / (double)sv->n_voxels, 1e-30);
  tl_expr_args_scalar(args, "dl", (float)sv->step_delta);
  gboolean prior = sv->prior && sv->opt.beta > 0 && sv->prior->klass->kind != 2;
  if (!prior)
    return tl_expr_assign(sv->ctx, sv->stream, "P = select(S > 0, max(x, dl) / S, 0)", args, error);
  tl_expr_args_array(args, "h", sv->grad);
  tl_expr_args_scalar(args, "b", (float)tl_solver_beta(sv));
  return tl_prior_hessian_diag(sv->prior, sv->stream, x, sv->grad, error) &&
         tl_expr_assign(sv->ctx, sv->stream, "P = select(S > 0, 1 / (S / max(x, dl) + b * h), 0)",
                        args, error);
}

/* The floor x / 10 (a fraction-to-the-boundary rule, as interior-point methods keep) lets a
 * voxel fall at most tenfold per step instead of onto 0 at once. Without it, from the flat
 * start of the registry's list-mode case svrg's first steps (alpha 2) zeroed the whole image, a
 * fixed point when there is no additive term (every ybar = 0 leaves -s as the gradient); and
 * an image with A x = 0 on a datum with y > 0 has Phi = -inf, which the data term's convention
 * (data with ybar <= 0 left out) scores as 0, so lbfgsb's line search took the zero image.
 * Voxels already at 0 stay >= 0.
 * The ceiling 10 max(x, delta) (delta of the last tl_solver_precond) is its mirror: without an
 * additive term a datum whose line crosses only voxels near 0 (OSEM leaves many at exactly 0
 * on sparse data) has ybar near 0 and y / ybar huge, and the preconditioner's delta / s at
 * those voxels (which EM's x c / s multiplies by x = 0) turned it into a step of 1e6 times the
 * image: svrg's first full-gradient step from one OSEM epoch of bench/race's NEMA DMI case
 * (1e5 events) took Phi from -7.0e5 to -3.1e8 even at step 1 (then 5e27 RMSE). */
gboolean tl_solver_floored_step(TlSolver *sv, TlExprArgs *args, const char *out, gboolean masked,
                                float alpha, const char *dir, GError **error) {
  tl_expr_args_scalar(args, "al", alpha);
  tl_expr_args_scalar(args, "dl", (float)sv->step_delta);
  g_autofree char *e =
      masked ? g_strdup_printf("%s = select(P > 0, min(max(x + al * P * (%s), 0.1 * x), "
                               "10 * max(x, dl)), x)", out, dir)
             : g_strdup_printf("%s = min(max(x + al * (%s), 0.1 * x), 10 * max(x, dl))", out, dir);
  return tl_expr_assign(sv->ctx, sv->stream, e, args, error);
}

/* A permutation of 0 .. n-1 (Fisher-Yates) from r: the subset order of an epoch. */
void tl_solver_shuffle(GRand *r, guint *order, guint n) {
  for (guint i = 0; i < n; i++) order[i] = i;
  for (guint i = n; i > 1; i--) {
    guint j = (guint)g_rand_int_range(r, 0, (gint32)i);
    guint t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}
