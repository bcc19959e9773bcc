/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A small JSON reader (RFC 8259) into a tree, for the schemas and descriptions that files carry
 * (e.g. the yardl schema at the head of a PETSIRD file). Bounded: nesting depth and sizes are
 * limited, strings must be UTF-8 and hold no NUL, duplicate object keys are refused. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TL_JSON_NULL,
  TL_JSON_BOOL,
  TL_JSON_NUMBER,
  TL_JSON_STRING,
  TL_JSON_ARRAY,
  TL_JSON_OBJECT,
} TlJsonKind;

typedef struct _TlJson TlJson;
struct _TlJson {
  TlJsonKind kind;
  gboolean boolean;
  double number;
  char *string;     /* TL_JSON_STRING */
  guint n;          /* items of an array, members of an object */
  TlJson **items;   /* array items; object member values */
  char **keys;      /* object member names (parallel to items) */
};

#define TL_JSON_MAX_DEPTH 64

/* Parses `len` bytes of text; `source` names it in the GError (with the byte offset). */
TL_API TlJson *tl_json_parse(const char *text, gsize len, const char *source, GError **error);
TL_API void tl_json_free(TlJson *j);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlJson, tl_json_free)

/* A member of an object (NULL when j is not an object or has no such member). */
TL_API const TlJson *tl_json_get(const TlJson *j, const char *key);
/* The string of a string value, else NULL. */
TL_API const char *tl_json_string(const TlJson *j);

G_END_DECLS
