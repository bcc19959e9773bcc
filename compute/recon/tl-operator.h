/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlOperator: a linear map A from an image grid to a data vector, cut into subsets, the only
 * thing reconstruction algorithms see of a scanner (PETSc's MatShell: mult / multTranspose
 * callbacks plus a context pointer; elsa's LinearOperator, Petit 2020 ch. 3).
 *
 * The data model (every operator):
 *
 *   ybar = D A x + a
 *
 * A: the class's system matrix (PET list mode or bins, CT views, an explicit sparse matrix);
 * D: an optional diagonal of per-datum factors (PET: attenuation x normalisation), held by
 *    the operator so every algorithm and fast path sees D A as "the" matrix;
 * a: an optional additive per-datum term (randoms + scatter), held by the problem
 *    (recon/tl-problem.h), since only the algorithms' ratio needs it.
 *
 * Data order: the data vector is stored subset after subset. Subset s is the data range
 * [first(s), first(s) + length(s)); whole-vector arrays (measured data, D, a) are in this
 * order, and the per-subset calls take arrays of exactly length(s) elements (a view of the
 * whole vector, tl_array_new_view, is the natural argument). An operator with one subset is
 * the plain matrix.
 *
 * Calls record work on a TlStream and return before it runs; arrays must outlive that work.
 * An operator is used by one thread at a time. A new operator is one file implementing
 * TlOperatorClass (+ one line in compute/tl-registry.c so front ends list it). */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

typedef struct _TlOperator TlOperator;

typedef enum {
  /* Each datum is one recorded event with count 1 and the data vector is the event list:
   * algorithms that need an explicit measured vector of all possible data (least squares)
   * do not apply. */
  TL_OPERATOR_LISTMODE = 1 << 0,
  /* The class applies D itself inside its kernels (forward, adjoint and em): the base does
   * not multiply by D around the class's calls. */
  TL_OPERATOR_NATIVE_DIAG = 1 << 1,
} TlOperatorFlags;

typedef struct {
  const char *name;     /* "pet-listmode", "pet-binned", "ct", "csr" */
  const char *modality; /* "pet", "ct" or "any" */
  const char *summary;
  guint flags;          /* TlOperatorFlags */
  void (*finalize)(TlOperator *op);
  /* y = A_s x (y: length(s) floats, overwritten). */
  gboolean (*forward)(TlOperator *op, TlStream *s, guint subset, const TlArray *x, TlArray *y,
                      GError **error);
  /* x += A_s^T w (w: length(s) floats; x accumulates). The exact adjoint of forward. */
  gboolean (*adjoint)(TlOperator *op, TlStream *s, guint subset, const TlArray *w, TlArray *x,
                      GError **error);
  /* Optional. out = sum over every datum of subset s that the system COULD measure of
   * d_j a_j. (the EM "sensitivity" / column sums). For list mode and sparse bins these are
   * all detectable pairs of the subset, not only the recorded ones. NULL: out = A_s^T D_s 1
   * over the stored data (correct whenever the stored data are every datum). */
  gboolean (*sensitivity)(TlOperator *op, TlStream *s, guint subset, TlArray *out,
                          GError **error);
  /* Optional. The measured counts m of the stored data in data order (list mode: 1 per
   * event; binned: each bin's count), for problems that take their data from the operator. */
  gboolean (*counts)(TlOperator *op, TlStream *s, TlArray *m, GError **error);
  /* Optional fused EM pass (van Gendt et al. 2021 Listing 1), with m the operator's own counts and
   * no
   * additive term:  corr += A_s^T D_s (m_s / (D_s A_s x))  over data with D_s A_s x > 0.
   * With partials != NULL the same pass also writes sum m_j log (D_s A_s x)_j over those data
   * as float partial sums into `partials` (tl_operator_em_partials long); their sum (in double,
   * on the host) is the data term of the Poisson log-likelihood at x. */
  gboolean (*em)(TlOperator *op, TlStream *s, guint subset, const TlArray *x, TlArray *corr,
                 TlArray *partials, GError **error);
  /* Number of float partial sums em() writes for subset s (0: em has no log-likelihood). */
  guint64 (*em_partials)(TlOperator *op, guint subset);
  /* Optional (tl_operator_kernel_used): whether replacing built-in kernel `name` changes em
   * (em TRUE) or forward and adjoint (FALSE) of subset s as configured now; appends the
   * built-in kernels they run to `runs` (static strings, no duplicates). */
  gboolean (*kernel_used)(const TlOperator *op, guint subset, gboolean em, const char *name,
                          GPtrArray *runs);
} TlOperatorClass;

struct _TlOperator {
  const TlOperatorClass *klass;
  TlContext *ctx;
  TlImageGrid grid;     /* the image side */
  guint n_subsets;
  guint64 *first;       /* n_subsets + 1 entries: subset s is [first[s], first[s + 1]) */
  TlArray *diag;        /* D (whole data vector) or NULL; owned */
  TlArray *scratch;     /* D w for classes without NATIVE_DIAG; lazily made */
  char *label;          /* e.g. "pet-listmode joseph, 10 subsets"; owned */
  gpointer priv;
};

/* For implementations: fills the common part; `lengths` are the n_subsets data lengths. */
TL_API void tl_operator_init(TlOperator *op, const TlOperatorClass *klass, TlContext *ctx,
                      const TlImageGrid *grid, guint n_subsets, const guint64 *lengths);
TL_API void tl_operator_free(TlOperator *op);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlOperator, tl_operator_free)

TL_API const char *tl_operator_name(const TlOperator *op);   /* the class name */
TL_API const char *tl_operator_label(const TlOperator *op);  /* class + settings, for titles */
TL_API void tl_operator_set_label(TlOperator *op, const char *label);
TL_API const TlImageGrid *tl_operator_grid(const TlOperator *op);
TL_API guint64 tl_operator_n_voxels(const TlOperator *op);
TL_API guint tl_operator_n_subsets(const TlOperator *op);
TL_API guint64 tl_operator_n_data(const TlOperator *op);     /* whole data vector */
TL_API guint64 tl_operator_subset_first(const TlOperator *op, guint subset);
TL_API guint64 tl_operator_subset_length(const TlOperator *op, guint subset);
TL_API guint64 tl_operator_max_subset_length(const TlOperator *op);
TL_API gboolean tl_operator_is_listmode(const TlOperator *op);
TL_API TlContext *tl_operator_context(const TlOperator *op);

/* D: a float array of tl_operator_n_data() factors (finite, >= 0), copied; NULL removes it.
 * Multiplies into any D already set when `combine` (attenuation x normalisation). */
TL_API gboolean tl_operator_set_diag(TlOperator *op, const TlArray *d, gboolean combine,
                              GError **error);
TL_API const TlArray *tl_operator_diag(const TlOperator *op);

/* y = D_s A_s x. */
TL_API gboolean tl_operator_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                             TlArray *y, GError **error);
/* x += A_s^T D_s w. */
TL_API gboolean tl_operator_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                             TlArray *x, GError **error);
/* out = column sums of D_s A_s over every measurable datum of subset s (see the class). */
TL_API gboolean tl_operator_sensitivity(TlOperator *op, TlStream *s, guint subset, TlArray *out,
                                 GError **error);
/* The operator's own measured counts (FALSE + TL_ERROR_UNSUPPORTED without). */
TL_API gboolean tl_operator_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error);
TL_API gboolean tl_operator_has_counts(const TlOperator *op);
/* The fused EM pass (FALSE + TL_ERROR_UNSUPPORTED when the class has none). */
TL_API gboolean tl_operator_has_em(const TlOperator *op);
/* Whether an edit of built-in kernel `name` (core/tl-kernels.h) changes em (em TRUE) or
 * forward and adjoint (FALSE) of subset s: the kernel editor and recon --kernel refuse an edit
 * the run would never use. `runs` (NULL or a GPtrArray without free function) gets the kernels
 * the pass runs. TRUE for classes that do not say. */
TL_API gboolean tl_operator_kernel_used(const TlOperator *op, guint subset, gboolean em, const char *name,
                                 GPtrArray *runs);
TL_API gboolean tl_operator_em(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                        TlArray *corr, TlArray *partials, GError **error);
TL_API guint64 tl_operator_em_partials(TlOperator *op, guint subset);

G_END_DECLS
