/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The fixed-point accumulator of deterministic back projections (tl-fixed.h). */
#include "tl-fixed.h"

#define HEAD 4 /* tl_fixed.glsl TL_FIXED_HEAD */

struct _TlFixed {
  TlContext *ctx;
  TlArray *acc;      /* HEAD + 2 n uints */
  guint64 n;         /* elements of the current call */
  TlPipeline *bound, *finish;
};

/* shaders/core/fixed_bound.comp, fixed_finish.comp: Push. */
typedef struct {
  TlPush1D h;
  guint64 x, acc;
  float n;
  guint32 mode, unit, pad;
} BoundPush;
typedef struct {
  TlPush1D h;
  guint64 acc, image;
  float amax;
  guint32 pad;
} FinishPush;
G_STATIC_ASSERT(sizeof(BoundPush) == 40 && sizeof(FinishPush) == 32);

TlFixed *tl_fixed_new(TlContext *ctx) {
  TlFixed *f = g_new0(TlFixed, 1);
  f->ctx = ctx;
  return f;
}

void tl_fixed_free(TlFixed *f) {
  if (!f) return;
  tl_array_free(f->acc);
  tl_pipeline_free(f->bound);
  tl_pipeline_free(f->finish);
  g_free(f);
}

gboolean tl_fixed_begin(TlFixed *f, TlStream *s, guint64 n, GError **error) {
  if (n > TL_FIXED_MAX_ELEMENTS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "fixed-point sums of %" G_GUINT64_FORMAT " elements: at most %" G_GUINT64_FORMAT
                " (32-bit word indices)", n, TL_FIXED_MAX_ELEMENTS);
    return FALSE;
  }
  guint64 words = HEAD + 2 * n;
  if (!f->acc || tl_array_length(f->acc) < words) {
    /* recorded work may still use the old array: finish it before it goes */
    if (f->acc && !tl_stream_finish(s, error)) return FALSE;
    g_clear_pointer(&f->acc, tl_array_free);
    if (!(f->acc = tl_array_new(f->ctx, words, sizeof(guint32), error))) return FALSE;
  }
  f->n = n;
  return tl_stream_zero(s, f->acc, error);
}

guint64 tl_fixed_address(const TlFixed *f) { return tl_array_address(f->acc); }

static gboolean bound(TlFixed *f, TlStream *s, guint64 w, guint64 count, guint32 mode,
                      gboolean unit, GError **error) {
  if (!f->bound && !(f->bound = tl_pipeline_new_builtin(f->ctx, "fixed_bound", sizeof(BoundPush),
                                                        NULL, 0, error)))
    return FALSE;
  BoundPush push = {.x = w, .acc = tl_array_address(f->acc), .n = (float)MAX(count, 1),
                    .mode = mode, .unit = unit};
  return tl_stream_dispatch_1d(s, f->bound, "fixed-point bound", mode == 2 ? 1 : count, &push,
                               error);
}

gboolean tl_fixed_bound_weights(TlFixed *f, TlStream *s, guint64 w, guint64 count,
                                gboolean have_max, GError **error) {
  return (have_max || bound(f, s, w, count, 0, FALSE, error)) &&
         bound(f, s, w, count, 1, FALSE, error) && bound(f, s, w, count, 2, FALSE, error);
}

gboolean tl_fixed_bound_unit(TlFixed *f, TlStream *s, guint64 count, GError **error) {
  return bound(f, s, 0, count, 2, TRUE, error);
}

gboolean tl_fixed_finish(TlFixed *f, TlStream *s, TlArray *image, float amax, GError **error) {
  if (!f->finish && !(f->finish = tl_pipeline_new_builtin(f->ctx, "fixed_finish",
                                                          sizeof(FinishPush), NULL, 0, error)))
    return FALSE;
  FinishPush push = {.acc = tl_array_address(f->acc), .image = tl_array_address(image),
                     .amax = amax};
  return tl_stream_dispatch_1d(s, f->finish, "fixed-point sum", f->n, &push, error);
}
