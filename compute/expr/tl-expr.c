/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Expression evaluator: binds names, generates and caches one pipeline per distinct
 * kernel on each TlContext, and records exactly one dispatch per call.
 *
 * The thesis' motivation (Petit 2020, sec. 4.2): with eager operators "there will be
 * an intermediate result from the 1.2 * x computation including traversing n
 * elements. Then this is added to y, resulting in an additional loop over n
 * elements." Here `y = a*x + y` is one kernel reading x and y once and writing y
 * once, whatever the length of the expression. */
#include "tl-expr.h"
#include "tl-expr-ast.h"
#include "tl-glsl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments ---- */

typedef struct {
  TlVarKind kind;
  TlArray *array;
  float value;
} TlExprBinding;

struct _TlExprArgs {
  GHashTable *bind; /* name -> TlExprBinding */
  char *label;
};

TlExprArgs *tl_expr_args_new(void) {
  TlExprArgs *args = g_new0(TlExprArgs, 1);
  args->bind = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  return args;
}

void tl_expr_args_free(TlExprArgs *args) {
  if (!args) return;
  g_hash_table_unref(args->bind);
  g_free(args->label);
  g_free(args);
}

static gboolean valid_name(const char *name) {
  if (!name || !(g_ascii_isalpha(*name) || *name == '_')) return FALSE;
  for (const char *c = name; *c; c++)
    if (!(g_ascii_isalnum(*c) || *c == '_')) return FALSE;
  return TRUE;
}

static void bind(TlExprArgs *args, const char *name, TlExprBinding b) {
  g_return_if_fail(args != NULL);
  g_return_if_fail(valid_name(name));
  g_hash_table_replace(args->bind, g_strdup(name), g_memdup2(&b, sizeof b));
}

void tl_expr_args_array(TlExprArgs *args, const char *name, TlArray *array) {
  g_return_if_fail(array != NULL);
  bind(args, name, (TlExprBinding){ .kind = TL_VAR_ARRAY, .array = array });
}

void tl_expr_args_scalar(TlExprArgs *args, const char *name, float value) {
  bind(args, name, (TlExprBinding){ .kind = TL_VAR_SCALAR, .value = value });
}

void tl_expr_args_set_label(TlExprArgs *args, const char *label) {
  g_return_if_fail(args != NULL);
  g_free(args->label);
  args->label = g_strdup(label);
}

/* ---- per-context cache ---- */

#define TL_EXPR_CACHE_KEY "tl-expr-cache"
/* Element counts are 32-bit in the kernels and SPIR-V indices are signed. */
#define TL_EXPR_MAX_ELEMS (1u << 30)

typedef struct {
  TlContext *ctx;
  GMutex lock;           /* pipelines, counters, partials pool */
  GHashTable *pipelines; /* generated GLSL -> TlPipeline* */
  guint compiles, hits;
  guint32 local_size;    /* workgroup size (power of two) */
  guint32 items;         /* units (elements or pairs) per invocation in assignments */
  guint width;           /* 2: two elements per 64-bit access where possible */
  guint32 max_groups;    /* workgroups of a reduction */
  guint32 min_block;     /* fewest units a reduction workgroup gets */
  GPtrArray *partials;   /* free host arrays of 2*max_groups floats */
  GMutex stream_lock;    /* the internal stream for calls given no stream */
  TlStream *stream;
} TlExprCache;

static void cache_free(gpointer data) {
  TlExprCache *c = data;
  tl_stream_free(c->stream);
  g_ptr_array_unref(c->partials);
  g_hash_table_unref(c->pipelines);
  g_mutex_clear(&c->lock);
  g_mutex_clear(&c->stream_lock);
  g_free(c);
}

static guint32 env_u32(const char *name, guint32 fallback) {
  const char *v = g_getenv(name);
  guint64 x = v ? g_ascii_strtoull(v, NULL, 10) : 0;
  return x > 0 && x <= G_MAXUINT32 ? (guint32)x : fallback;
}

static TlExprCache *cache_get(TlContext *ctx) {
  static GMutex create_lock;
  g_mutex_lock(&create_lock);
  TlExprCache *c = tl_context_get_data(ctx, TL_EXPR_CACHE_KEY);
  if (!c) {
    const TlDeviceInfo *info = tl_context_info(ctx);
    c = g_new0(TlExprCache, 1);
    c->ctx = ctx;
    g_mutex_init(&c->lock);
    g_mutex_init(&c->stream_lock);
    c->pipelines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify)tl_pipeline_free);
    c->partials = g_ptr_array_new_with_free_func((GDestroyNotify)tl_array_free);
    /* Tuned in bench/ops (see bench/README.md). A CPU driver runs each workgroup as
     * one task on one core, so it wants few, long workgroups; a GPU wants many
     * short ones to fill its cores and hide latency. */
    gboolean cpu = info->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    c->local_size = env_u32("TOMOLAB_EXPR_LOCAL_SIZE", cpu ? 512 : 256);
    c->items = env_u32("TOMOLAB_EXPR_ITEMS", cpu ? 32 : 4);
    c->max_groups = env_u32("TOMOLAB_EXPR_GROUPS", cpu ? 128 : 2048);
    c->min_block = cpu ? 16384 : 4096;
    c->width = info->shader_int64 ? 2 : 1;
    if (env_u32("TOMOLAB_EXPR_WIDTH", 0) == 1) c->width = 1;
    /* power of two (the reduction tree halves), within the device limit */
    guint32 lim = MIN(info->max_compute_work_group_invocations, 1024u);
    while (c->local_size > lim) c->local_size /= 2;
    while (c->local_size & (c->local_size - 1)) c->local_size &= c->local_size - 1;
    c->items = MIN(c->items, 1024u); /* keeps tile indices far from 32-bit overflow */
    c->max_groups = MIN(c->max_groups, MIN(info->max_compute_work_group_count[0], 65535u));
    g_debug("expressions on %s: workgroups of %u, %u units per invocation, %u element%s per "
            "access, reductions over up to %u workgroups", info->name, c->local_size, c->items,
            c->width, c->width > 1 ? "s" : "", c->max_groups);
    tl_context_set_data(ctx, TL_EXPR_CACHE_KEY, c, cache_free);
  }
  g_mutex_unlock(&create_lock);
  return c;
}

void tl_expr_cache_stats(TlContext *ctx, guint *compiles, guint *hits) {
  TlExprCache *c = cache_get(ctx);
  g_mutex_lock(&c->lock);
  if (compiles) *compiles = c->compiles;
  if (hits) *hits = c->hits;
  g_mutex_unlock(&c->lock);
}

/* The pipeline for this generated kernel: from the cache, or glslang + driver once. */
static TlPipeline *cache_pipeline(TlExprCache *c, const TlExprParsed *p, const TlExprKernel *k,
                                  GError **error) {
  g_mutex_lock(&c->lock);
  TlPipeline *pipe = g_hash_table_lookup(c->pipelines, k->glsl);
  if (pipe) {
    c->hits++;
    g_mutex_unlock(&c->lock);
    return pipe;
  }
  /* Compiled under the lock so two threads never build the same kernel twice. */
  c->compiles++;
  g_autofree char *name = g_strdup_printf("expr '%s'", p->text);
  g_autofree guint32 *spirv = NULL;
  gsize size = 0;
  if (tl_glsl_compile(k->glsl, name, &spirv, &size, error)) {
    gboolean assign = p->red == TL_RED_NONE;
    TlPipelineDesc d = { .spirv = spirv, .spirv_size = size, .name = name,
                         .local_size = c->local_size, .push_size = k->push_size,
                         .spec = &c->items, .n_spec = assign ? 1 : 0 };
    pipe = tl_pipeline_new(c->ctx, &d, error);
    if (pipe) {
      /* Budgets count elements; an assignment invocation handles items*width. */
      if (assign) tl_pipeline_set_item_cost(pipe, c->items * k->width);
      g_hash_table_insert(c->pipelines, g_strdup(k->glsl), pipe);
    }
  }
  g_mutex_unlock(&c->lock);
  return pipe;
}

/* ---- one call ---- */

typedef struct {
  TlExprParsed *parsed;
  TlExprKernel *kernel;
  TlPipeline *pipeline;
  guint64 n;
  guint8 push[TL_EXPR_PUSH_MAX];
} TlExprCall;

static void call_clear(TlExprCall *call) {
  tl_expr_parsed_free(call->parsed);
  tl_expr_kernel_free(call->kernel);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TlExprCall, call_clear)

/* Parse, bind, check, generate, fetch the pipeline and fill the push block. */
static gboolean call_prepare(TlExprCache *c, TlExprCall *call, const char *text, TlParseMode mode,
                             const TlExprArgs *args, GError **error) {
  g_return_val_if_fail(text != NULL && args != NULL, FALSE);
  call->parsed = tl_expr_parse(text, mode, error);
  if (!call->parsed) return FALSE;
  TlExprParsed *p = call->parsed;
  guint n_vars = p->vars->len;
  g_autofree TlVarKind *kinds = g_new0(TlVarKind, MAX(n_vars, 1));
  g_autofree const TlExprBinding **b = g_new0(const TlExprBinding *, MAX(n_vars, 1));
  int first_array = -1;
  for (guint v = 0; v < n_vars; v++) {
    const char *name = g_ptr_array_index(p->vars, v);
    b[v] = g_hash_table_lookup(args->bind, name);
    if (!b[v]) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "expression '%s': column %u: unknown variable '%s' (not bound in the arguments)",
                  text, g_array_index(p->var_column, guint, v), name);
      return FALSE;
    }
    kinds[v] = b[v]->kind;
    if (kinds[v] != TL_VAR_ARRAY) continue;
    TlArray *a = b[v]->array;
    if (tl_array_context(a) != c->ctx || tl_array_elem_size(a) != sizeof(float)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "expression '%s': array '%s' %s", text, name,
                  tl_array_context(a) != c->ctx ? "belongs to another TlContext"
                                                : "does not hold 4-byte floats");
      return FALSE;
    }
    if (first_array < 0) {
      first_array = (int)v;
      call->n = tl_array_length(a);
    } else if (tl_array_length(a) != call->n) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "expression '%s': arrays '%s' (%" G_GUINT64_FORMAT " elements) and '%s' (%"
                  G_GUINT64_FORMAT " elements) differ in length",
                  text, (const char *)g_ptr_array_index(p->vars, first_array), call->n, name,
                  tl_array_length(a));
      return FALSE;
    }
  }
  if (call->n > TL_EXPR_MAX_ELEMS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "expression '%s': %" G_GUINT64_FORMAT " elements, more than the %u expressions "
                "handle", text, call->n, TL_EXPR_MAX_ELEMS);
    return FALSE;
  }
  /* Pairs need every array 8-byte aligned (buffers practically always are). */
  guint width = c->width;
  for (guint v = 0; v < n_vars; v++)
    if (kinds[v] == TL_VAR_ARRAY && tl_array_address(b[v]->array) % 8 != 0) width = 1;
  call->kernel = tl_expr_codegen(p, kinds, width, error);
  if (!call->kernel) return FALSE;
  call->pipeline = cache_pipeline(c, p, call->kernel, error);
  if (!call->pipeline) return FALSE;

  const TlExprKernel *k = call->kernel;
  memset(call->push, 0, sizeof call->push);
  for (guint v = 0; v < n_vars; v++) {
    if (kinds[v] == TL_VAR_ARRAY) {
      guint64 addr = tl_array_address(b[v]->array);
      memcpy(call->push + k->off_arrays + 8 * k->slot[v], &addr, 8);
    } else {
      memcpy(call->push + k->off_scalars + 4 * k->slot[v], &b[v]->value, 4);
    }
  }
  guint32 n32 = (guint32)call->n;
  memcpy(call->push + k->off_n, &n32, 4);
  return TRUE;
}

static const char *call_label(const TlExprArgs *args, const char *text) {
  return args->label ? args->label : text;
}

gboolean tl_expr_assign(TlContext *ctx, TlStream *stream, const char *expr, const TlExprArgs *args,
                        GError **error) {
  g_return_val_if_fail(ctx != NULL, FALSE);
  TlExprCache *c = cache_get(ctx);
  g_auto(TlExprCall) call = { 0 };
  if (!call_prepare(c, &call, expr, TL_PARSE_ASSIGN, args, error)) return FALSE;
  if (call.n == 0) return TRUE;
  /* Whole tiles of local_size*items units, local_size invocations each; at least
   * one, for the odd last element when there are no pairs. */
  guint64 units = call.n / call.kernel->width;
  guint64 tile = (guint64)c->local_size * c->items;
  guint64 invocations = MAX((units + tile - 1) / tile, 1) * c->local_size;

  if (stream)
    return tl_stream_dispatch_1d(stream, call.pipeline, call_label(args, expr), invocations,
                                 call.push, error);
  g_mutex_lock(&c->stream_lock);
  gboolean ok = (c->stream || (c->stream = tl_stream_new(ctx, error))) &&
                tl_stream_dispatch_1d(c->stream, call.pipeline, call_label(args, expr),
                                      invocations, call.push, error) &&
                tl_stream_finish(c->stream, error);
  g_mutex_unlock(&c->stream_lock);
  return ok;
}

static TlArray *partials_take(TlExprCache *c, GError **error) {
  g_mutex_lock(&c->lock);
  TlArray *a = c->partials->len ? g_ptr_array_steal_index_fast(c->partials, c->partials->len - 1)
                                : NULL;
  g_mutex_unlock(&c->lock);
  return a ? a : tl_array_new_host(c->ctx, 2 * (guint64)c->max_groups, sizeof(float), TRUE, error);
}

static void partials_give(TlExprCache *c, TlArray *a) {
  g_mutex_lock(&c->lock);
  g_ptr_array_add(c->partials, a);
  g_mutex_unlock(&c->lock);
}

/* Records the reduction, finishes the stream and adds the partials in double. */
static gboolean reduce_run(TlExprCache *c, TlStream *s, TlExprCall *call, const char *label,
                           TlArray *partials, double *out, GError **error) {
  const TlExprKernel *k = call->kernel;
  guint64 ls = c->local_size;
  /* Enough workgroups to fill the device, each a contiguous block of whole strides
   * of units (elements or pairs). */
  guint64 units = MAX(call->n / k->width, 1);
  guint64 groups = MIN((guint64)c->max_groups, MAX(units / c->min_block, 1));
  guint64 block = ((units + groups - 1) / groups + ls - 1) / ls * ls;
  groups = (units + block - 1) / block;
  guint64 addr = tl_array_address(partials);
  guint32 block32 = (guint32)block;
  memcpy(call->push + k->off_partials, &addr, 8);
  memcpy(call->push + k->off_block, &block32, 4);
  /* Groups go out in batches that fit the stream's submit budget (so a huge
   * reduction neither trips a GPU watchdog nor ignores cancellation); the push
   * header's base is the first group of the batch. */
  guint64 per = MAX(tl_stream_submit_budget(s) / (block * k->width), 1);
  for (guint64 g0 = 0; g0 < groups; g0 += per) {
    guint64 cnt = MIN(per, groups - g0);
    TlPush1D hdr = { (guint32)g0, (guint32)(cnt * ls) };
    memcpy(call->push, &hdr, sizeof hdr);
    if (!tl_stream_dispatch(s, call->pipeline, label, (guint32)cnt, 1, 1, call->push,
                            cnt * block * k->width, error)) {
      g_autoptr(GError) ignored = NULL;
      tl_stream_finish(s, &ignored); /* batches already submitted still write partials */
      return FALSE;
    }
  }
  if (!tl_stream_finish(s, error)) return FALSE;

  const float *part = tl_array_map(partials);
  TlReduction red = call->parsed->red;
  if (red == TL_RED_MIN || red == TL_RED_MAX) {
    double m = part[0];
    for (guint64 g = 1; g < groups; g++)
      m = red == TL_RED_MIN ? MIN(m, (double)part[2 * g]) : MAX(m, (double)part[2 * g]);
    *out = m;
  } else {
    double sum = 0.0;
    for (guint64 g = 0; g < groups; g++) sum += (double)part[2 * g] + (double)part[2 * g + 1];
    *out = red == TL_RED_L2NORM ? sqrt(sum) : sum;
  }
  return TRUE;
}

gboolean tl_expr_reduce(TlContext *ctx, TlStream *stream, const char *expr, const TlExprArgs *args,
                        double *out, GError **error) {
  g_return_val_if_fail(ctx != NULL && out != NULL, FALSE);
  TlExprCache *c = cache_get(ctx);
  g_auto(TlExprCall) call = { 0 };
  if (!call_prepare(c, &call, expr, TL_PARSE_REDUCE, args, error)) return FALSE;
  if (call.n == 0) {
    TlReduction red = call.parsed->red;
    *out = red == TL_RED_MIN ? INFINITY : red == TL_RED_MAX ? -INFINITY : 0.0;
    return TRUE;
  }
  TlArray *partials = partials_take(c, error);
  if (!partials) return FALSE;
  const char *label = call_label(args, expr);
  gboolean ok;
  if (stream) {
    ok = reduce_run(c, stream, &call, label, partials, out, error);
  } else {
    g_mutex_lock(&c->stream_lock);
    ok = (c->stream || (c->stream = tl_stream_new(ctx, error))) &&
         reduce_run(c, c->stream, &call, label, partials, out, error);
    g_mutex_unlock(&c->stream_lock);
  }
  /* Even after a failure nothing is left running: reduce_run has finished the
   * stream, and a finish that fails (cancelled) has waited for submitted work. */
  partials_give(c, partials);
  return ok;
}
