/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A recursive-descent JSON reader (RFC 8259). Every count is bounded by the text's length, and
 * the nesting by TL_JSON_MAX_DEPTH, so hostile text costs at most a few times its size. */
#include "tl-json.h"
#include "tl-error.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end, *start, *source;
} J;

static gboolean fail(J *j, GError **error, const char *what) {
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: JSON at byte %" G_GSIZE_FORMAT ": %s",
              j->source, (gsize)(j->p - j->start), what);
  return FALSE;
}

static void ws(J *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

void tl_json_free(TlJson *v) {
  if (!v) return;
  for (guint i = 0; i < v->n; i++) {
    tl_json_free(v->items[i]);
    if (v->keys) g_free(v->keys[i]);
  }
  g_free(v->items);
  g_free(v->keys);
  g_free(v->string);
  g_free(v);
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static gboolean parse_string(J *j, char **out, GError **error) {
  j->p++; /* the opening quote */
  GString *s = g_string_new(NULL);
  while (TRUE) {
    if (j->p >= j->end) {
      g_string_free(s, TRUE);
      return fail(j, error, "unterminated string");
    }
    unsigned char c = (unsigned char)*j->p;
    if (c == '"') break;
    if (c < 0x20) {
      g_string_free(s, TRUE);
      return fail(j, error, "control character in a string");
    }
    if (c != '\\') {
      g_string_append_c(s, (char)c);
      j->p++;
      continue;
    }
    if (j->end - j->p < 2) {
      g_string_free(s, TRUE);
      return fail(j, error, "unterminated escape");
    }
    char e = j->p[1];
    j->p += 2;
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      g_string_append_c(s, "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
      continue;
    }
    int u = e == 'u' && j->end - j->p >= 4 ? hex4(j->p) : -1;
    if (u < 0) {
      g_string_free(s, TRUE);
      return fail(j, error, "bad escape");
    }
    j->p += 4;
    gunichar cp = (gunichar)u;
    if (u >= 0xD800 && u < 0xDC00) { /* a surrogate pair */
      int lo = j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' ? hex4(j->p + 2) : -1;
      if (lo < 0xDC00 || lo >= 0xE000) {
        g_string_free(s, TRUE);
        return fail(j, error, "unpaired surrogate");
      }
      j->p += 6;
      cp = 0x10000 + (((gunichar)u - 0xD800) << 10) + ((gunichar)lo - 0xDC00);
    } else if ((u >= 0xDC00 && u < 0xE000) || u == 0) {
      g_string_free(s, TRUE);
      return fail(j, error, u ? "unpaired surrogate" : "\\u0000 in a string");
    }
    g_string_append_unichar(s, cp);
  }
  j->p++;
  if (!g_utf8_validate_len(s->str, s->len, NULL)) {
    g_string_free(s, TRUE);
    return fail(j, error, "string is not UTF-8");
  }
  *out = g_string_free(s, FALSE);
  return TRUE;
}

static TlJson *parse_value(J *j, int depth, GError **error);

static gboolean append(TlJson *v, TlJson *item, char *key, guint *cap) {
  if (v->n == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    v->items = g_renew(TlJson *, v->items, *cap);
    if (v->kind == TL_JSON_OBJECT) v->keys = g_renew(char *, v->keys, *cap);
  }
  v->items[v->n] = item;
  if (v->kind == TL_JSON_OBJECT) v->keys[v->n] = key;
  v->n++;
  return TRUE;
}

static TlJson *parse_container(J *j, int depth, GError **error) {
  gboolean object = *j->p == '{';
  char close = object ? '}' : ']';
  TlJson *v = g_new0(TlJson, 1);
  v->kind = object ? TL_JSON_OBJECT : TL_JSON_ARRAY;
  guint cap = 0;
  j->p++;
  ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    return v;
  }
  while (TRUE) {
    char *key = NULL;
    ws(j);
    if (object) {
      if (j->p >= j->end || *j->p != '"') {
        fail(j, error, "expected a member name");
        goto bad;
      }
      if (!parse_string(j, &key, error)) goto bad;
      for (guint i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0) {
          g_autofree char *m = g_strdup_printf("member \"%s\" given twice", key);
          g_free(key);
          fail(j, error, m);
          goto bad;
        }
      ws(j);
      if (j->p >= j->end || *j->p != ':') {
        g_free(key);
        fail(j, error, "expected ':'");
        goto bad;
      }
      j->p++;
    }
    TlJson *item = parse_value(j, depth + 1, error);
    if (!item) {
      g_free(key);
      goto bad;
    }
    append(v, item, key, &cap);
    ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == close) {
      j->p++;
      return v;
    }
    fail(j, error, object ? "expected ',' or '}'" : "expected ',' or ']'");
    goto bad;
  }
bad:
  tl_json_free(v);
  return NULL;
}

static TlJson *parse_value(J *j, int depth, GError **error) {
  if (depth > TL_JSON_MAX_DEPTH) {
    fail(j, error, "nested deeper than " G_STRINGIFY(TL_JSON_MAX_DEPTH));
    return NULL;
  }
  ws(j);
  if (j->p >= j->end) {
    fail(j, error, "expected a value");
    return NULL;
  }
  char c = *j->p;
  if (c == '{' || c == '[') return parse_container(j, depth, error);
  TlJson *v = g_new0(TlJson, 1);
  if (c == '"') {
    v->kind = TL_JSON_STRING;
    if (!parse_string(j, &v->string, error)) g_clear_pointer(&v, tl_json_free);
    return v;
  }
  static const struct { const char *word; TlJsonKind kind; gboolean b; } words[] = {
      {"null", TL_JSON_NULL, FALSE}, {"true", TL_JSON_BOOL, TRUE}, {"false", TL_JSON_BOOL, FALSE}};
  for (guint i = 0; i < G_N_ELEMENTS(words); i++) {
    gsize n = strlen(words[i].word);
    if ((gsize)(j->end - j->p) >= n && memcmp(j->p, words[i].word, n) == 0) {
      v->kind = words[i].kind;
      v->boolean = words[i].b;
      j->p += n;
      return v;
    }
  }
  /* number: -? int frac? exp? (RFC 8259 section 6), converted in the C locale */
  const char *s = j->p;
  if (s < j->end && *s == '-') s++;
  const char *digits = s;
  while (s < j->end && g_ascii_isdigit(*s)) s++;
  gboolean ok = s > digits && !(*digits == '0' && s - digits > 1);
  if (ok && s < j->end && *s == '.') {
    const char *f = ++s;
    while (s < j->end && g_ascii_isdigit(*s)) s++;
    ok = s > f;
  }
  if (ok && s < j->end && (*s == 'e' || *s == 'E')) {
    s++;
    if (s < j->end && (*s == '+' || *s == '-')) s++;
    const char *e = s;
    while (s < j->end && g_ascii_isdigit(*s)) s++;
    ok = s > e;
  }
  if (!ok || s - j->p > 64) {
    g_free(v);
    fail(j, error, "expected a value");
    return NULL;
  }
  char buf[65];
  memcpy(buf, j->p, (gsize)(s - j->p));
  buf[s - j->p] = 0;
  v->kind = TL_JSON_NUMBER;
  v->number = g_ascii_strtod(buf, NULL);
  j->p = s;
  return v;
}

TlJson *tl_json_parse(const char *text, gsize len, const char *source, GError **error) {
  J j = {text, text + len, text, source ? source : "JSON"};
  TlJson *v = parse_value(&j, 0, error);
  if (!v) return NULL;
  ws(&j);
  if (j.p != j.end) {
    tl_json_free(v);
    fail(&j, error, "text after the value");
    return NULL;
  }
  return v;
}

const TlJson *tl_json_get(const TlJson *j, const char *key) {
  if (!j || j->kind != TL_JSON_OBJECT) return NULL;
  for (guint i = 0; i < j->n; i++)
    if (strcmp(j->keys[i], key) == 0) return j->items[i];
  return NULL;
}

const char *tl_json_string(const TlJson *j) {
  return j && j->kind == TL_JSON_STRING ? j->string : NULL;
}
