/* SPDX-License-Identifier: GPL-3.0-or-later */
/* yardl compact binary reader. Counts from the file are bounded by the bytes left (every value
 * of a type whose encoding is never empty takes at least one byte), the schema's sizes and type
 * expansion by fixed limits, so no input allocates more than a small multiple of its size. */
#include "tl-yardl.h"
#include "tl-error.h"
#include "tl-json.h"
#include <string.h>

/* Bounds: resolved type nodes (generics are expanded per use), a schema's fixed lengths, the
 * nesting of values, and values decoded without a byte each (zero-width types). */
#define MAX_TYPE_NODES 100000
#define MAX_FIXED_LENGTH (1u << 24)
#define MAX_DEPTH 64
#define MAX_SCHEMA_BYTES (16u << 20)
/* Value nodes per byte of data: a byte can open a few nested records at once, no more (flat
 * values are packed and make no nodes), so hostile data cannot cost much more than its size. */
#define NODES_PER_BYTE 8

/* A parsed schema: its JSON, the protocol's steps and their types, never changed once made.
 * Readers of files that carry the same schema text (byte for byte) share one: every PETSIRD
 * file of a model repeats its 12.9 KB schema, whose parse and generic expansion cost more than
 * a small file's values (fuzz-petsird ran 126 inputs/s, two parses each). The last schema
 * parsed stays cached for the process (one entry, some 100 KB). */
typedef struct {
  gint ref;
  char *text; /* len bytes + NUL */
  gsize len;
  TlJson *json;
  char *protocol;
  guint n_steps;
  char **step_names;
  TlYardlType **step_types;
  GPtrArray *all_types; /* every node made, freed together */
} Schema;

G_LOCK_DEFINE_STATIC(schema_cache);
static Schema *schema_cached;

struct _TlYardlReader {
  const guint8 *data, *p, *end;
  char *source;
  Schema *sc;
  guint step;
  gboolean in_stream;
  guint64 block_left;
  guint64 budget;       /* value nodes the current read may still make */
};

static gboolean bad(TlYardlReader *r, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean bad(TlYardlReader *r, GError **error, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: byte %" G_GSIZE_FORMAT ": %s", r->source,
              (gsize)(r->p - r->data), m);
  return FALSE;
}

/* ---- schema -> types ---- */

typedef struct {
  const char *name;
  TlYardlType *type;
} Binding;

typedef struct {
  Schema *sc;
  const char *source;
  GError **error;
  guint nodes;
} Resolver;

static TlYardlType *node(Resolver *rs, TlYardlKind kind) {
  if (++rs->nodes > MAX_TYPE_NODES) return NULL;
  TlYardlType *t = g_new0(TlYardlType, 1);
  t->kind = kind;
  t->length = -1;
  t->ndims = -1;
  g_ptr_array_add(rs->sc->all_types, t);
  return t;
}

static void type_free(gpointer p) {
  TlYardlType *t = p;
  for (guint i = 0; t->names && i < t->n; i++) g_free(t->names[i]);
  g_free(t->names);
  g_free(t->sub);
  g_free(t->dims);
  g_free(t->name);
  g_free(t);
}

static const struct {
  const char *name;
  TlYardlKind kind;
} primitives[] = {
    {"bool", TL_YARDL_BOOL},           {"uint8", TL_YARDL_UINT},       {"uint16", TL_YARDL_UINT},
    {"uint32", TL_YARDL_UINT},         {"uint64", TL_YARDL_UINT},      {"size", TL_YARDL_UINT},
    {"int8", TL_YARDL_INT},            {"int16", TL_YARDL_INT},        {"int32", TL_YARDL_INT},
    {"int64", TL_YARDL_INT},           {"float32", TL_YARDL_FLOAT32},  {"float64", TL_YARDL_FLOAT64},
    {"complexfloat32", TL_YARDL_COMPLEX32}, {"complexfloat64", TL_YARDL_COMPLEX64},
    {"string", TL_YARDL_STRING},       {"date", TL_YARDL_INT},         {"time", TL_YARDL_INT},
    {"datetime", TL_YARDL_INT},
};

static const TlJson *find_type(const Schema *sc, const char *name) {
  const TlJson *types = tl_json_get(sc->json, "types");
  const char *dot = strrchr(name, '.');
  const char *bare = dot ? dot + 1 : name;
  for (guint i = 0; types && types->kind == TL_JSON_ARRAY && i < types->n; i++) {
    const char *n = tl_json_string(tl_json_get(types->items[i], "name"));
    if (n && strcmp(n, bare) == 0) return types->items[i];
  }
  return NULL;
}

static TlYardlType *resolve(Resolver *rs, const TlJson *j, const Binding *env, guint n_env,
                            int depth);

static gboolean schema_bad(Resolver *rs, const char *what, const char *name) {
  if (rs->error && !*rs->error)
    g_set_error(rs->error, TL_ERROR, TL_ERROR_FORMAT, "%s: schema: %s%s%s", rs->source, what,
                name ? ": " : "", name ? name : "");
  return FALSE;
}

static guint flat_width(const TlYardlType *t) {
  switch (t->kind) {
  case TL_YARDL_BOOL: case TL_YARDL_UINT: case TL_YARDL_INT: case TL_YARDL_FLOAT32:
  case TL_YARDL_FLOAT64:
    return 1;
  case TL_YARDL_COMPLEX32: case TL_YARDL_COMPLEX64:
    return 2;
  default:
    return t->width;
  }
}

/* Whether every value of t takes a byte at least; types that can take none (an empty record, a
 * fixed vector of length 0) are refused, so counts can be bounded by the bytes left. */
static gboolean takes_bytes(const TlYardlType *t) {
  switch (t->kind) {
  case TL_YARDL_RECORD:
    for (guint i = 0; i < t->n; i++)
      if (takes_bytes(t->sub[i])) return TRUE;
    return FALSE;
  case TL_YARDL_VECTOR:
    return t->length < 0 || (t->length > 0 && takes_bytes(t->item));
  case TL_YARDL_ARRAY:
    if (t->ndims < 0) return TRUE;
    for (gint i = 0; i < t->ndims; i++)
      if (t->dims[i] < 0) return TRUE;
      else if (t->dims[i] == 0) return FALSE;
    return takes_bytes(t->item);
  default:
    return TRUE;
  }
}

static void set_width(TlYardlType *t) {
  guint64 w = 0;
  if (t->kind == TL_YARDL_RECORD) {
    for (guint i = 0; i < t->n; i++) {
      guint fw = flat_width(t->sub[i]);
      if (!fw) return;
      w += fw;
    }
  } else if (t->kind == TL_YARDL_VECTOR && t->length >= 0) {
    w = (guint64)t->length * flat_width(t->item);
    if (!flat_width(t->item)) return;
  } else if (t->kind == TL_YARDL_ARRAY && t->ndims >= 0) {
    w = flat_width(t->item);
    for (gint i = 0; i < t->ndims; i++) {
      if (t->dims[i] < 0) return;
      w *= (guint64)t->dims[i];
    }
  } else {
    return;
  }
  if (w > 0 && w <= MAX_FIXED_LENGTH) t->width = (guint)w;
}

static gboolean fixed_length(Resolver *rs, const TlJson *j, gint64 *out) {
  if (!j) return TRUE;
  if (j->kind != TL_JSON_NUMBER || j->number < 0 || j->number > MAX_FIXED_LENGTH ||
      j->number != (double)(gint64)j->number)
    return schema_bad(rs, "a fixed length is not a whole number in [0, 2^24]", NULL);
  *out = (gint64)j->number;
  return TRUE;
}

static TlYardlType *resolve_named(Resolver *rs, const char *name, const TlJson *args,
                                  const Binding *env, guint n_env, int depth) {
  for (guint i = 0; i < n_env; i++)
    if (strcmp(env[i].name, name) == 0) return env[i].type;
  for (guint i = 0; i < G_N_ELEMENTS(primitives); i++)
    if (strcmp(primitives[i].name, name) == 0) return node(rs, primitives[i].kind);
  const TlJson *def = find_type(rs->sc, name);
  if (!def) return schema_bad(rs, "unknown type", name), NULL;
  /* generic parameters bound to the arguments, resolved in the caller's environment */
  const TlJson *params = tl_json_get(def, "typeParameters");
  guint np = params && params->kind == TL_JSON_ARRAY ? params->n : 0;
  guint na = args && args->kind == TL_JSON_ARRAY ? args->n : 0;
  if (np != na) return schema_bad(rs, "wrong number of type arguments for", name), NULL;
  g_autofree Binding *inner = g_new0(Binding, np + 1);
  for (guint i = 0; i < np; i++) {
    inner[i].name = tl_json_string(params->items[i]);
    if (!inner[i].name) return schema_bad(rs, "a type parameter is not a string in", name), NULL;
    if (!(inner[i].type = resolve(rs, args->items[i], env, n_env, depth + 1))) return NULL;
  }
  TlYardlType *t = NULL;
  const TlJson *fields = tl_json_get(def, "fields"), *values = tl_json_get(def, "values");
  if (fields) {
    if (fields->kind != TL_JSON_ARRAY) return schema_bad(rs, "fields is not a list in", name), NULL;
    if (!(t = node(rs, TL_YARDL_RECORD))) return schema_bad(rs, "too many types", NULL), NULL;
    t->n = fields->n;
    t->sub = g_new0(TlYardlType *, t->n);
    t->names = g_new0(char *, t->n);
    for (guint i = 0; i < t->n; i++) {
      const char *fn = tl_json_string(tl_json_get(fields->items[i], "name"));
      if (!fn) return schema_bad(rs, "a field without a name in", name), NULL;
      t->names[i] = g_strdup(fn);
      if (!(t->sub[i] = resolve(rs, tl_json_get(fields->items[i], "type"), inner, np, depth + 1)))
        return NULL;
    }
    if (!takes_bytes(t)) return schema_bad(rs, "a record that can take no bytes", name), NULL;
    set_width(t);
  } else if (values) {
    /* enums and flags: a varint of the base type, signed unless the base says otherwise */
    const char *base = tl_json_string(tl_json_get(def, "base"));
    t = node(rs, base && g_str_has_prefix(base, "uint") ? TL_YARDL_UINT : TL_YARDL_INT);
    if (!t) return schema_bad(rs, "too many types", NULL), NULL;
  } else if (tl_json_get(def, "type")) {
    return resolve(rs, tl_json_get(def, "type"), inner, np, depth + 1); /* an alias */
  } else {
    return schema_bad(rs, "a type that is neither record, enum nor alias", name), NULL;
  }
  t->name = g_strdup(name);
  return t;
}

static TlYardlType *resolve(Resolver *rs, const TlJson *j, const Binding *env, guint n_env,
                            int depth) {
  if (depth > MAX_DEPTH) return schema_bad(rs, "types nested too deeply", NULL), NULL;
  if (!j) return schema_bad(rs, "a type is missing", NULL), NULL;
  if (j->kind == TL_JSON_NULL) return NULL; /* only as a union option, handled there */
  if (j->kind == TL_JSON_STRING) return resolve_named(rs, j->string, NULL, env, n_env, depth);
  if (j->kind == TL_JSON_ARRAY) { /* a union */
    TlYardlType *t = node(rs, TL_YARDL_UNION);
    if (!t) return schema_bad(rs, "too many types", NULL), NULL;
    if (j->n == 0) return schema_bad(rs, "an empty union", NULL), NULL;
    t->n = j->n;
    t->sub = g_new0(TlYardlType *, t->n);
    t->names = g_new0(char *, t->n);
    for (guint i = 0; i < j->n; i++) {
      const TlJson *o = j->items[i];
      if (o->kind == TL_JSON_NULL) continue;
      const TlJson *ty = o->kind == TL_JSON_OBJECT && tl_json_get(o, "tag") ? tl_json_get(o, "type") : o;
      t->names[i] = g_strdup(tl_json_string(tl_json_get(o, "tag")));
      if (ty && ty->kind == TL_JSON_NULL) continue;
      if (!(t->sub[i] = resolve(rs, ty, env, n_env, depth + 1))) return NULL;
    }
    return t;
  }
  if (j->kind != TL_JSON_OBJECT) return schema_bad(rs, "a type is not a name, list or object", NULL), NULL;
  const TlJson *v;
  if ((v = tl_json_get(j, "vector")) || (v = tl_json_get(j, "stream"))) {
    TlYardlType *t = node(rs, tl_json_get(j, "vector") ? TL_YARDL_VECTOR : TL_YARDL_STREAM);
    if (!t) return schema_bad(rs, "too many types", NULL), NULL;
    if (!fixed_length(rs, tl_json_get(v, "length"), &t->length)) return NULL;
    if (!(t->item = resolve(rs, tl_json_get(v, "items"), env, n_env, depth + 1))) return NULL;
    if (!takes_bytes(t)) return schema_bad(rs, "a vector or array that can take no bytes", NULL), NULL;
    set_width(t);
    return t;
  }
  if ((v = tl_json_get(j, "array"))) {
    TlYardlType *t = node(rs, TL_YARDL_ARRAY);
    if (!t) return schema_bad(rs, "too many types", NULL), NULL;
    const TlJson *d = tl_json_get(v, "dimensions");
    if (d && d->kind == TL_JSON_NUMBER) {
      if (d->number < 0 || d->number > 16 || d->number != (double)(int)d->number)
        return schema_bad(rs, "array dimensions not in [0, 16]", NULL), NULL;
      t->ndims = (gint)d->number;
      t->dims = g_new(gint64, t->ndims + 1);
      for (gint i = 0; i < t->ndims; i++) t->dims[i] = -1;
    } else if (d && d->kind == TL_JSON_ARRAY) {
      if (d->n > 16) return schema_bad(rs, "more than 16 array dimensions", NULL), NULL;
      t->ndims = (gint)d->n;
      t->dims = g_new(gint64, t->ndims + 1);
      for (gint i = 0; i < t->ndims; i++) {
        t->dims[i] = -1;
        if (!fixed_length(rs, tl_json_get(d->items[i], "length"), &t->dims[i])) return NULL;
      }
    } else if (d) {
      return schema_bad(rs, "array dimensions are neither a number nor a list", NULL), NULL;
    }
    if (!(t->item = resolve(rs, tl_json_get(v, "items"), env, n_env, depth + 1))) return NULL;
    if (!takes_bytes(t)) return schema_bad(rs, "a vector or array that can take no bytes", NULL), NULL;
    set_width(t);
    return t;
  }
  if ((v = tl_json_get(j, "map"))) {
    TlYardlType *t = node(rs, TL_YARDL_MAP);
    if (!t) return schema_bad(rs, "too many types", NULL), NULL;
    t->n = 2;
    t->sub = g_new0(TlYardlType *, 2);
    if (!(t->sub[0] = resolve(rs, tl_json_get(v, "keys"), env, n_env, depth + 1)) ||
        !(t->sub[1] = resolve(rs, tl_json_get(v, "values"), env, n_env, depth + 1)))
      return NULL;
    return t;
  }
  const char *name = tl_json_string(tl_json_get(j, "name"));
  if (name) return resolve_named(rs, name, tl_json_get(j, "typeArguments"), env, n_env, depth);
  return schema_bad(rs, "an unknown kind of type", NULL), NULL;
}

/* ---- bytes ---- */

static gboolean varint(TlYardlReader *r, guint64 *out, GError **error) {
  guint64 v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end) return bad(r, error, "the file ends inside a number");
    guint8 c = *r->p++;
    if (shift == 63 && (c & 0x7e)) return bad(r, error, "a varint larger than 64 bits");
    v |= (guint64)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *out = v;
      return TRUE;
    }
  }
  return bad(r, error, "a varint longer than 10 bytes");
}

static gboolean fixed(TlYardlReader *r, void *out, gsize n, GError **error) {
  if ((gsize)(r->end - r->p) < n) return bad(r, error, "the file ends inside a number");
  memcpy(out, r->p, n); /* little-endian, as the encoding says; Tomolab's hosts are too */
  r->p += n;
  return TRUE;
}

/* One number of a numeric primitive, appended to out. */
static gboolean number(TlYardlReader *r, const TlYardlType *t, double *out, GError **error) {
  guint64 u;
  switch (t->kind) {
  case TL_YARDL_BOOL:
    if (r->p >= r->end) return bad(r, error, "the file ends inside a boolean");
    if (*r->p > 1) return bad(r, error, "boolean value %u (expected 0 or 1)", *r->p);
    out[0] = *r->p++;
    return TRUE;
  case TL_YARDL_UINT:
    if (!varint(r, &u, error)) return FALSE;
    out[0] = (double)u;
    return TRUE;
  case TL_YARDL_INT:
    if (!varint(r, &u, error)) return FALSE;
    out[0] = (u & 1) ? -(double)(u >> 1) - 1 : (double)(u >> 1);
    return TRUE;
  case TL_YARDL_FLOAT32: case TL_YARDL_COMPLEX32: {
    for (guint i = 0; i < flat_width(t); i++) {
      float f;
      if (!fixed(r, &f, 4, error)) return FALSE;
      out[i] = f;
    }
    return TRUE;
  }
  case TL_YARDL_FLOAT64: case TL_YARDL_COMPLEX64:
    for (guint i = 0; i < flat_width(t); i++)
      if (!fixed(r, &out[i], 8, error)) return FALSE;
    return TRUE;
  default:
    return bad(r, error, "internal: not a number type");
  }
}

/* A flat value's numbers, in field / row-major order. */
static gboolean flat(TlYardlReader *r, const TlYardlType *t, double *out, GError **error) {
  guint w;
  switch (t->kind) {
  case TL_YARDL_RECORD:
    for (guint i = 0; i < t->n; i++) {
      if (!flat(r, t->sub[i], out, error)) return FALSE;
      out += flat_width(t->sub[i]);
    }
    return TRUE;
  case TL_YARDL_VECTOR: case TL_YARDL_ARRAY:
    w = flat_width(t->item);
    for (guint i = 0; i < t->width / w; i++)
      if (!flat(r, t->item, out + (gsize)i * w, error)) return FALSE;
    return TRUE;
  default:
    return number(r, t, out, error);
  }
}

/* A count read from the file, bounded by what the bytes left can hold. */
static gboolean count(TlYardlReader *r, guint64 *n, const char *what, GError **error) {
  if (!varint(r, n, error)) return FALSE;
  guint64 left = (guint64)(r->end - r->p);
  if (*n > left) /* every value takes a byte at least (types of none are refused) */
    return bad(r, error, "%s %" G_GUINT64_FORMAT " (expected at most %" G_GUINT64_FORMAT
               ", what the bytes left can hold)", what, *n, left);
  return TRUE;
}

static TlYardlValue *value(TlYardlReader *r, const TlYardlType *t, int depth, GError **error);

/* `n` items of `item` into v (packed when flat). */
static gboolean items(TlYardlReader *r, TlYardlValue *v, const TlYardlType *item, guint64 n,
                      int depth, GError **error) {
  v->count = n;
  guint w = flat_width(item);
  if (w) {
    guint64 left = (guint64)(r->end - r->p);
    if (n > left || n * w > left) /* a number takes a byte at least */
      return bad(r, error, "%" G_GUINT64_FORMAT " values of %u numbers cannot fit in the %"
                 G_GUINT64_FORMAT " bytes left", n, w, left);
    v->num = g_try_new(double, n * w + 1);
    if (!v->num) return bad(r, error, "out of memory for %" G_GUINT64_FORMAT " values", n);
    for (guint64 i = 0; i < n; i++)
      if (!flat(r, item, v->num + i * w, error)) return FALSE;
  } else {
    v->kids = g_try_new0(TlYardlValue *, n + 1);
    if (!v->kids) return bad(r, error, "out of memory for %" G_GUINT64_FORMAT " values", n);
    for (guint64 i = 0; i < n; i++) {
      if (!(v->kids[i] = value(r, item, depth + 1, error))) return FALSE;
      v->n_kids = i + 1;
    }
  }
  return TRUE;
}

static TlYardlValue *value(TlYardlReader *r, const TlYardlType *t, int depth, GError **error) {
  if (depth > MAX_DEPTH) return bad(r, error, "values nested too deeply"), NULL;
  if (r->budget == 0) return bad(r, error, "more values than the bytes left can hold"), NULL;
  r->budget--;
  g_autoptr(TlYardlValue) v = g_new0(TlYardlValue, 1);
  v->type = t;
  guint w = flat_width(t);
  if (w) {
    v->count = 1;
    v->num = g_new(double, w);
    return flat(r, t, v->num, error) ? g_steal_pointer(&v) : NULL;
  }
  guint64 n;
  switch (t->kind) {
  case TL_YARDL_STRING:
    if (!count(r, &n, "string length", error)) return NULL;
    if (n > (guint64)(r->end - r->p)) return bad(r, error, "string past the end"), NULL;
    if (memchr(r->p, 0, n) || !g_utf8_validate_len((const char *)r->p, n, NULL))
      return bad(r, error, "string that is not UTF-8 text"), NULL;
    v->str = g_strndup((const char *)r->p, n);
    r->p += n;
    return g_steal_pointer(&v);
  case TL_YARDL_RECORD:
    v->kids = g_new0(TlYardlValue *, t->n + 1);
    for (guint i = 0; i < t->n; i++) {
      if (!(v->kids[i] = value(r, t->sub[i], depth + 1, error))) return NULL;
      v->n_kids = i + 1;
    }
    return g_steal_pointer(&v);
  case TL_YARDL_VECTOR:
    if (t->length >= 0) n = (guint64)t->length;
    else if (!count(r, &n, "vector length", error)) return NULL;
    return items(r, v, t->item, n, depth, error) ? g_steal_pointer(&v) : NULL;
  case TL_YARDL_ARRAY: {
    guint64 nd = t->ndims >= 0 ? (guint64)t->ndims : 0;
    if (t->ndims < 0) {
      if (!varint(r, &nd, error)) return NULL;
      if (nd > 16) return bad(r, error, "array of %" G_GUINT64_FORMAT " dimensions (at most 16)", nd), NULL;
    }
    v->ndims = (guint)nd;
    v->dims = g_new(guint64, nd + 1);
    n = 1;
    for (guint i = 0; i < nd; i++) {
      if (t->ndims >= 0 && t->dims[i] >= 0) v->dims[i] = (guint64)t->dims[i];
      else if (!count(r, &v->dims[i], "array dimension", error)) return NULL;
      if (v->dims[i] && n > G_MAXUINT32 * (guint64)G_MAXUINT32 / v->dims[i])
        return bad(r, error, "array larger than 2^64 values"), NULL;
      n *= v->dims[i];
    }
    return items(r, v, t->item, n, depth, error) ? g_steal_pointer(&v) : NULL;
  }
  case TL_YARDL_MAP:
    if (!count(r, &n, "map size", error)) return NULL;
    v->count = n;
    v->kids = g_try_new0(TlYardlValue *, 2 * n + 1);
    if (!v->kids) return bad(r, error, "out of memory"), NULL;
    for (guint64 i = 0; i < 2 * n; i++) {
      if (!(v->kids[i] = value(r, t->sub[i % 2], depth + 1, error))) return NULL;
      v->n_kids = i + 1;
    }
    return g_steal_pointer(&v);
  case TL_YARDL_UNION:
    if (!varint(r, &n, error)) return NULL;
    if (n >= t->n)
      return bad(r, error, "union option %" G_GUINT64_FORMAT " (expected below %u)", n, t->n), NULL;
    v->index = (guint)n;
    if (t->sub[n]) {
      v->kids = g_new0(TlYardlValue *, 2);
      if (!(v->kids[0] = value(r, t->sub[n], depth + 1, error))) return NULL;
      v->n_kids = 1;
    }
    return g_steal_pointer(&v);
  default:
    return bad(r, error, "a stream inside a value"), NULL;
  }
}

void tl_yardl_value_free(TlYardlValue *v) {
  if (!v) return;
  for (guint64 i = 0; i < v->n_kids; i++) tl_yardl_value_free(v->kids[i]);
  g_free(v->kids);
  g_free(v->num);
  g_free(v->str);
  g_free(v->dims);
  g_free(v);
}

/* ---- the reader ---- */

static void schema_unref(Schema *sc) {
  if (!sc || !g_atomic_int_dec_and_test(&sc->ref)) return;
  g_free(sc->text);
  tl_json_free(sc->json);
  g_free(sc->protocol);
  for (guint i = 0; i < sc->n_steps; i++) g_free(sc->step_names[i]);
  g_free(sc->step_names);
  g_free(sc->step_types);
  if (sc->all_types) g_ptr_array_unref(sc->all_types);
  g_free(sc);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Schema, schema_unref)

void tl_yardl_reader_free(TlYardlReader *r) {
  if (!r) return;
  g_free(r->source);
  schema_unref(r->sc);
  g_free(r);
}

/* The n schema bytes at text parsed and resolved; `source` names the file in errors. */
static Schema *schema_parse(const char *text, gsize n, const char *source, GError **error) {
  g_autoptr(Schema) sc = g_new0(Schema, 1);
  sc->ref = 1;
  sc->text = g_malloc(n + 1);
  memcpy(sc->text, text, n);
  sc->text[n] = 0;
  sc->len = n;
  sc->all_types = g_ptr_array_new_with_free_func(type_free);
  g_autofree char *what = g_strdup_printf("%s: schema", source);
  if (!(sc->json = tl_json_parse(text, n, what, error))) return NULL;
  const TlJson *proto = tl_json_get(sc->json, "protocol");
  const TlJson *seq = tl_json_get(proto, "sequence");
  const char *pname = tl_json_string(tl_json_get(proto, "name"));
  Resolver rs = {sc, source, error, 0};
  if (!pname || !seq || seq->kind != TL_JSON_ARRAY || seq->n == 0 || seq->n > 1024)
    return schema_bad(&rs, "no protocol name and steps", NULL), NULL;
  sc->protocol = g_strdup(pname);
  sc->step_names = g_new0(char *, seq->n);
  sc->step_types = g_new0(TlYardlType *, seq->n);
  sc->n_steps = seq->n;
  for (guint i = 0; i < seq->n; i++) {
    const char *sn = tl_json_string(tl_json_get(seq->items[i], "name"));
    if (!sn) return schema_bad(&rs, "a protocol step without a name", NULL), NULL;
    sc->step_names[i] = g_strdup(sn);
    if (!(sc->step_types[i] = resolve(&rs, tl_json_get(seq->items[i], "type"), NULL, 0, 0))) {
      if (!*error) schema_bad(&rs, rs.nodes > MAX_TYPE_NODES ? "too many types" : "a step of type null", sn);
      return NULL;
    }
  }
  return g_steal_pointer(&sc);
}

TlYardlReader *tl_yardl_reader_new(const guint8 *data, gsize len, const char *source,
                                   GError **error) {
  g_autoptr(TlYardlReader) r = g_new0(TlYardlReader, 1);
  r->data = r->p = data;
  r->end = data + len;
  r->source = g_strdup(source ? source : "yardl data");
  guint32 version = 0;
  if (len < 9 || memcmp(data, "yardl", 5) != 0)
    return bad(r, error, "no yardl magic (expected the bytes 'yardl' at the start)"), NULL;
  r->p += 5;
  if (!fixed(r, &version, 4, error)) return NULL;
  if (GUINT32_FROM_LE(version) != 1)
    return bad(r, error, "yardl binary version %u (expected 1)", GUINT32_FROM_LE(version)), NULL;
  guint64 n;
  if (!varint(r, &n, error)) return NULL;
  if (n > (guint64)(r->end - r->p) || n > MAX_SCHEMA_BYTES)
    return bad(r, error, "schema of %" G_GUINT64_FORMAT " bytes (expected at most %" G_GSIZE_FORMAT ")",
               n, MIN((gsize)(r->end - r->p), (gsize)MAX_SCHEMA_BYTES)), NULL;
  G_LOCK(schema_cache);
  if (schema_cached && schema_cached->len == n && memcmp(schema_cached->text, r->p, n) == 0) {
    r->sc = schema_cached;
    g_atomic_int_inc(&r->sc->ref);
  }
  G_UNLOCK(schema_cache);
  if (!r->sc) {
    if (!(r->sc = schema_parse((const char *)r->p, n, r->source, error))) return NULL;
    g_atomic_int_inc(&r->sc->ref);
    G_LOCK(schema_cache);
    Schema *old = schema_cached;
    schema_cached = r->sc;
    G_UNLOCK(schema_cache);
    schema_unref(old);
  }
  r->p += n;
  return g_steal_pointer(&r);
}

const char *tl_yardl_reader_schema(const TlYardlReader *r) { return r->sc->text; }
const char *tl_yardl_reader_protocol(const TlYardlReader *r) { return r->sc->protocol; }
gsize tl_yardl_reader_offset(const TlYardlReader *r) { return (gsize)(r->p - r->data); }

gboolean tl_yardl_reader_has_field(const TlYardlReader *r, const char *record, const char *field) {
  const TlJson *fields = tl_json_get(find_type(r->sc, record), "fields");
  for (guint i = 0; fields && fields->kind == TL_JSON_ARRAY && i < fields->n; i++) {
    const char *n = tl_json_string(tl_json_get(fields->items[i], "name"));
    if (n && strcmp(n, field) == 0) return TRUE;
  }
  return FALSE;
}

static gboolean at_step(TlYardlReader *r, const char *step, gboolean stream, GError **error) {
  if (r->step >= r->sc->n_steps)
    return bad(r, error, "step '%s' read after the protocol's last step", step);
  if (strcmp(r->sc->step_names[r->step], step) != 0)
    return bad(r, error, "step '%s' asked for where the protocol has '%s'", step, r->sc->step_names[r->step]);
  if ((r->sc->step_types[r->step]->kind == TL_YARDL_STREAM) != stream)
    return bad(r, error, "step '%s' is %sa stream", step, stream ? "not " : "");
  return TRUE;
}

TlYardlValue *tl_yardl_read_value(TlYardlReader *r, const char *step, GError **error) {
  if (!at_step(r, step, FALSE, error)) return NULL;
  r->budget = NODES_PER_BYTE * (guint64)(r->end - r->p) + 1024;
  TlYardlValue *v = value(r, r->sc->step_types[r->step], 0, error);
  if (v) r->step++;
  return v;
}

gboolean tl_yardl_read_item(TlYardlReader *r, const char *step, TlYardlValue **item,
                            GError **error) {
  *item = NULL;
  if (!at_step(r, step, TRUE, error)) return FALSE;
  if (!r->in_stream || r->block_left == 0) {
    if (!count(r, &r->block_left, "stream block length", error)) return FALSE;
    r->in_stream = TRUE;
    if (r->block_left == 0) { /* the end of the stream */
      r->in_stream = FALSE;
      r->step++;
      return TRUE;
    }
  }
  r->budget = NODES_PER_BYTE * (guint64)(r->end - r->p) + 1024;
  if (!(*item = value(r, r->sc->step_types[r->step]->item, 0, error))) return FALSE;
  r->block_left--;
  return TRUE;
}

gboolean tl_yardl_reader_finish(TlYardlReader *r, GError **error) {
  if (r->step < r->sc->n_steps)
    return bad(r, error, "the data stop before the protocol's step '%s'", r->sc->step_names[r->step]);
  if (r->p != r->end)
    return bad(r, error, "%" G_GSIZE_FORMAT " bytes after the protocol's last step",
               (gsize)(r->end - r->p));
  return TRUE;
}

/* ---- accessors ---- */

const TlYardlValue *tl_yardl_field(const TlYardlValue *v, const char *name) {
  if (!v || v->type->kind != TL_YARDL_RECORD || v->num) return NULL;
  for (guint i = 0; i < v->type->n && i < v->n_kids; i++)
    if (strcmp(v->type->names[i], name) == 0) return v->kids[i];
  return NULL;
}

const TlYardlValue *tl_yardl_kid(const TlYardlValue *v, guint64 i) {
  if (!v || i >= v->n_kids) return NULL;
  if (v->type->kind == TL_YARDL_UNION) return i == 0 ? v->kids[0] : NULL;
  return v->kids[i];
}

const double *tl_yardl_numbers(const TlYardlValue *v, guint64 *n) {
  *n = 0;
  if (!v || !v->num) return NULL;
  const TlYardlType *t = v->type;
  guint w = flat_width(t);
  if (!w && (t->kind == TL_YARDL_VECTOR || t->kind == TL_YARDL_ARRAY)) w = flat_width(t->item);
  *n = v->count * w;
  return v->num;
}

double tl_yardl_number(const TlYardlValue *v, double fallback) {
  guint64 n;
  const double *x = tl_yardl_numbers(v, &n);
  return x && n == 1 && flat_width(v->type) == 1 ? x[0] : fallback;
}

const char *tl_yardl_string(const TlYardlValue *v) { return v ? v->str : NULL; }

const char *tl_yardl_union_tag(const TlYardlValue *v) {
  if (!v || v->type->kind != TL_YARDL_UNION || !v->n_kids) return NULL;
  return v->type->names[v->index];
}
