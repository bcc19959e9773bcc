/* Internal to the CT solvers: the state shared by tl-ct-recon.c (SIRT, SART, MLEM and the
 * common machinery) and tl-ct-cgls.c. */
#pragma once
#include "tl-ct-recon.h"
#include "expr/tl-expr.h"

struct _TlCtRecon {
  TlContext *ctx;
  TlCtReconOptions opt;
  TlCtProjector *proj;
  TlImageGrid grid;
  guint64 n_voxels;
  guint n_subsets;
  TlCtViews *views;     /* per subset */
  TlArray **y;          /* per subset: the data of its views */
  TlArray **rinv;       /* SIRT/SART, per subset: 1 / row sums */
  TlArray **cinv;       /* SIRT/SART/MLEM, per subset: 1 / column sums; NULL = recomputed */
  TlArray *cinv_tmp;    /* the recomputed one */
  TlArray *q_big, *q_small; /* scratch projections: subsets of ceil(N/S) and floor(N/S) views */
  TlArray *x, *next, *vol;  /* image, next image, back projection */
  TlArray *truth;
  gboolean fp_valid;    /* one subset: q_big holds A x of the current image */
  /* CGLS */
  TlArray *r, *p;       /* residual y - A x (projections), direction (volume) */
  double gamma;         /* |A^T r|^2 */
  gboolean cgls_ready;  /* r, p, gamma belong to x (FALSE after a cancel: restart) */
  double cgls_objective;

  TlStream *stream;
  TlProfile *profile;
  GCancellable *cancellable;
  TlExprArgs *args;
  TlCtReconCallback cb;
  gpointer cb_data;
  guint sub_iterations;
};

/* Records `expr` on the recon's stream with its args. */
gboolean tl_ct_recon_expr(TlCtRecon *r, const char *expr, GError **error);
/* A scratch projection array whose length is exactly subset s's. */
TlArray *tl_ct_recon_scratch(TlCtRecon *r, guint s);

gboolean tl_ct_cgls_init(TlCtRecon *r, GError **error);
/* One CGLS iteration; the new image goes to r->next; *objective = 1/2 |r|^2 after it. */
gboolean tl_ct_cgls_step(TlCtRecon *r, double *objective, GError **error);
