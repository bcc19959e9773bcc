/* SPDX-License-Identifier: GPL-3.0-or-later */
/* yardl's compact binary encoding (Microsoft's yardl, "Compact Binary Encoding Reference"),
 * read against the schema each file carries: the magic "yardl", a version (1), the protocol's
 * JSON schema, then the protocol's steps (values and streams of values). The reader knows no
 * model: it decodes whatever the schema describes, so a model that gains a field (PETSIRD main
 * after v0.10.0) needs no new code here. Vectors and arrays of numbers, and of records made
 * only of numbers ("flat" types, e.g. coincidence events), are kept packed as doubles. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TL_YARDL_NULL,
  TL_YARDL_BOOL,
  TL_YARDL_UINT,   /* uint8..uint64, size: varint */
  TL_YARDL_INT,    /* int8..int64, enums and flags (signed base): zig-zag varint */
  TL_YARDL_FLOAT32,
  TL_YARDL_FLOAT64,
  TL_YARDL_COMPLEX32,
  TL_YARDL_COMPLEX64,
  TL_YARDL_STRING,
  TL_YARDL_RECORD,
  TL_YARDL_VECTOR,
  TL_YARDL_ARRAY,
  TL_YARDL_MAP,
  TL_YARDL_UNION,
  TL_YARDL_STREAM,
} TlYardlKind;

typedef struct _TlYardlType TlYardlType;
struct _TlYardlType {
  TlYardlKind kind;
  char *name;            /* the schema's name for named types ("PETSIRD.Header"), else NULL */
  guint n;               /* record fields, union options, map: 2 (key, value) */
  TlYardlType **sub;     /* record fields, union options (NULL entry: null), map key/value */
  char **names;          /* record field names, union tags */
  TlYardlType *item;     /* vector, array, stream items */
  gint64 length;         /* vector: fixed length, -1 = written in the file */
  gint ndims;            /* array: -1 = written in the file */
  gint64 *dims;          /* array: ndims lengths, -1 = written in the file */
  guint width;           /* flat types: numbers per value (0: not flat) */
};

/* A decoded value. Flat types and vectors/arrays of flat types: `num` holds count x width
 * doubles (count = items; 1 for a single flat value). Records: kids = fields. Vectors and
 * arrays of other types: kids = items. Unions: index, kids[0] (n_kids 0 for null). Maps: kids =
 * key, value, key, value... Strings: str. */
typedef struct _TlYardlValue TlYardlValue;
struct _TlYardlValue {
  const TlYardlType *type;
  guint64 count;         /* items (vectors, arrays, maps: entries) */
  double *num;
  char *str;
  guint64 n_kids;
  TlYardlValue **kids;
  guint index;           /* union option */
  guint ndims;
  guint64 *dims;         /* arrays: the dimensions as read */
};

typedef struct _TlYardlReader TlYardlReader;

/* Reads the header and schema of `len` bytes at `data` (kept, not copied: they must outlive the
 * reader). `source` names the file in every GError, with the byte offset. */
TL_API TlYardlReader *tl_yardl_reader_new(const guint8 *data, gsize len, const char *source,
                                          GError **error);
TL_API void tl_yardl_reader_free(TlYardlReader *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlYardlReader, tl_yardl_reader_free)
/* The schema's JSON text and protocol name. */
TL_API const char *tl_yardl_reader_schema(const TlYardlReader *r);
TL_API const char *tl_yardl_reader_protocol(const TlYardlReader *r);
/* The named record's field names in the schema (NULL if absent; do not free), for version
 * checks such as "does ScannerInformation have collimatorType". */
TL_API gboolean tl_yardl_reader_has_field(const TlYardlReader *r, const char *record,
                                          const char *field);
/* The next protocol step, which must be the value step `step`. */
TL_API TlYardlValue *tl_yardl_read_value(TlYardlReader *r, const char *step, GError **error);
/* The next item of the stream step `step`: TRUE with *item set, TRUE with *item NULL at the
 * stream's end (then the reader moves to the next step), FALSE + GError on bad data. */
TL_API gboolean tl_yardl_read_item(TlYardlReader *r, const char *step, TlYardlValue **item,
                                   GError **error);
/* Every step read and no byte left over. */
TL_API gboolean tl_yardl_reader_finish(TlYardlReader *r, GError **error);
/* Byte offset of the next read (for progress). */
TL_API gsize tl_yardl_reader_offset(const TlYardlReader *r);

TL_API void tl_yardl_value_free(TlYardlValue *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlYardlValue, tl_yardl_value_free)

/* Accessors: NULL / 0 when the value is not of the asked shape (never crash on a model that
 * changed: callers turn NULL into a GError). */
TL_API const TlYardlValue *tl_yardl_field(const TlYardlValue *v, const char *name);
TL_API const TlYardlValue *tl_yardl_kid(const TlYardlValue *v, guint64 i);
/* Numbers of a flat value or of a vector/array of flat items: *n = count x width. */
TL_API const double *tl_yardl_numbers(const TlYardlValue *v, guint64 *n);
/* A single number (a flat value of width 1), else `fallback`. */
TL_API double tl_yardl_number(const TlYardlValue *v, double fallback);
TL_API const char *tl_yardl_string(const TlYardlValue *v);
/* The tag of a union's option ("EventTimeBlock"), NULL for null or not a union. */
TL_API const char *tl_yardl_union_tag(const TlYardlValue *v);

G_END_DECLS
