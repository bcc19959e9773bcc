/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Built-in kernel sources and run-time replacements (tl-kernels.h). */
#include "tl-kernels.h"
#include "tl-pipeline.h"
#include "tl-shader-sources.h"
#include <string.h>

static const char *const *names_table(void) {
  static const char **names;
  if (g_once_init_enter(&names)) {
    /* the .comp files embedded: "pet/pet_forward.comp" -> "pet_forward" */
    GPtrArray *n = g_ptr_array_new();
    for (gsize i = 0; i < G_N_ELEMENTS(tl_shader_sources); i++) {
      const char *p = tl_shader_sources[i].path, *slash = strchr(p, '/');
      if (slash && g_str_has_suffix(p, ".comp"))
        g_ptr_array_add(n, g_strndup(slash + 1, strlen(slash + 1) - 5));
    }
    g_ptr_array_add(n, NULL);
    g_once_init_leave(&names, (const char **)g_ptr_array_free(n, FALSE));
  }
  return names;
}

const char *const *tl_kernels_names(void) { return names_table(); }

const char *tl_kernels_file(const char *path) {
  for (gsize i = 0; i < G_N_ELEMENTS(tl_shader_sources); i++)
    if (strcmp(tl_shader_sources[i].path, path) == 0) return tl_shader_sources[i].text;
  return NULL;
}

/* "pet/pet_forward.comp" -> "pet" for name "pet_forward" */
const char *tl_kernels_module(const char *name) {
  static GHashTable *modules; /* name -> module, filled once */
  if (g_once_init_enter(&modules)) {
    GHashTable *m = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (gsize i = 0; i < G_N_ELEMENTS(tl_shader_sources); i++) {
      const char *p = tl_shader_sources[i].path, *slash = strchr(p, '/');
      if (!slash || !g_str_has_suffix(p, ".comp")) continue;
      g_hash_table_insert(m, g_strndup(slash + 1, strlen(slash + 1) - 5),
                          g_strndup(p, slash - p));
    }
    g_once_init_leave(&modules, m);
  }
  return g_hash_table_lookup(modules, name);
}

static gboolean expand_into(GString *out, const char *text, const char *module,
                            GHashTable *seen, guint depth, GError **error) {
  if (depth > 16) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "includes nested deeper than 16");
    return FALSE;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *l = lines[i];
    while (*l == ' ' || *l == '\t') l++;
    const char *q1 = g_str_has_prefix(l, "#include") ? strchr(l, '"') : NULL;
    const char *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    if (!q2) {
      g_string_append(out, lines[i]);
      if (lines[i + 1]) g_string_append_c(out, '\n');
      continue;
    }
    g_autofree char *file = g_strndup(q1 + 1, q2 - q1 - 1);
    g_autofree char *here = g_strdup_printf("%s/%s", module, file);
    g_autofree char *core = g_strdup_printf("core/%s", file);
    const char *path = tl_kernels_file(here) ? here : tl_kernels_file(core) ? core : NULL;
    if (!path) {
      g_set_error(error, TL_ERROR, TL_ERROR_SHADER,
                  "line %u: #include \"%s\": no such built-in include (in %s/ or core/)", i + 1,
                  file, module);
      return FALSE;
    }
    if (g_hash_table_contains(seen, path)) {
      g_string_append_printf(out, "// ---- %s (included above)\n", path);
      continue;
    }
    g_hash_table_add(seen, g_strdup(path));
    g_string_append_printf(out, "// ---- begin %s\n", path);
    g_autofree char *dir = g_path_get_dirname(path);
    if (!expand_into(out, tl_kernels_file(path), dir, seen, depth + 1, error)) return FALSE;
    if (out->len && out->str[out->len - 1] != '\n') g_string_append_c(out, '\n');
    g_string_append_printf(out, "// ---- end %s\n", path);
  }
  return TRUE;
}

char *tl_kernels_expand(const char *text, const char *module, GError **error) {
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GString *out = g_string_new(NULL);
  if (!expand_into(out, text, module ? module : "core", seen, 0, error)) {
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}

char *tl_kernels_source(const char *name, GError **error) {
  const char *module = tl_kernels_module(name);
  g_autofree char *path = module ? g_strdup_printf("%s/%s.comp", module, name) : NULL;
  const char *text = path ? tl_kernels_file(path) : NULL;
  if (!text) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no built-in kernel named '%s'", name);
    return NULL;
  }
  return tl_kernels_expand(text, module, error);
}

/* --- replacements, held by the context --- */

typedef struct {
  guint32 *words;
  gsize size;
  char *label;
} Replacement;

typedef struct {
  GMutex lock;
  GHashTable *by_name; /* name -> the Replacement in use */
  GPtrArray *all;      /* owns every Replacement ever made: words handed out stay valid while
                        * the context lives (edits are few and small) */
  guint generation;
} Replacements;

static void replacement_free(gpointer p) {
  Replacement *r = p;
  g_free(r->words);
  g_free(r->label);
  g_free(r);
}

static void replacements_free(gpointer p) {
  Replacements *rs = p;
  g_hash_table_unref(rs->by_name);
  g_ptr_array_unref(rs->all);
  g_mutex_clear(&rs->lock);
  g_free(rs);
}

static Replacements *replacements(TlContext *ctx) {
  static GMutex create;
  g_mutex_lock(&create);
  Replacements *rs = tl_context_get_data(ctx, "tl-kernel-replacements");
  if (!rs) {
    rs = g_new0(Replacements, 1);
    g_mutex_init(&rs->lock);
    rs->by_name = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    rs->all = g_ptr_array_new_with_free_func(replacement_free);
    tl_context_set_data(ctx, "tl-kernel-replacements", rs, replacements_free);
  }
  g_mutex_unlock(&create);
  return rs;
}

gboolean tl_kernels_replace(TlContext *ctx, const char *name, const guint32 *spirv,
                            gsize size_bytes, GError **error) {
  if (!tl_shader_spirv(name, NULL)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no built-in kernel named '%s'", name);
    return FALSE;
  }
  if (!spirv || size_bytes < 20 || size_bytes % 4 || spirv[0] != 0x07230203u) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "kernel %s: the replacement is not SPIR-V",
                name);
    return FALSE;
  }
  Replacement *r = g_new0(Replacement, 1);
  r->words = g_memdup2(spirv, size_bytes);
  r->size = size_bytes;
  r->label = g_strdup_printf("%s (edited)", name);
  Replacements *rs = replacements(ctx);
  g_mutex_lock(&rs->lock);
  g_ptr_array_add(rs->all, r);
  g_hash_table_insert(rs->by_name, g_strdup(name), r);
  rs->generation++;
  g_mutex_unlock(&rs->lock);
  return TRUE;
}

void tl_kernels_revert(TlContext *ctx, const char *name) {
  Replacements *rs = replacements(ctx);
  g_mutex_lock(&rs->lock);
  if (g_hash_table_remove(rs->by_name, name)) rs->generation++;
  g_mutex_unlock(&rs->lock);
}

gboolean tl_kernels_replaced(TlContext *ctx, const char *name) {
  Replacements *rs = replacements(ctx);
  g_mutex_lock(&rs->lock);
  gboolean r = g_hash_table_contains(rs->by_name, name);
  g_mutex_unlock(&rs->lock);
  return r;
}

guint tl_kernels_generation(TlContext *ctx) {
  Replacements *rs = replacements(ctx);
  g_mutex_lock(&rs->lock);
  guint g = rs->generation;
  g_mutex_unlock(&rs->lock);
  return g;
}

const guint32 *tl_kernels_spirv(TlContext *ctx, const char *name, gsize *size_bytes,
                                const char **label) {
  Replacements *rs = replacements(ctx);
  g_mutex_lock(&rs->lock);
  Replacement *r = g_hash_table_lookup(rs->by_name, name);
  const guint32 *words = r ? r->words : NULL;
  if (r) *size_bytes = r->size, *label = r->label;
  g_mutex_unlock(&rs->lock);
  if (words) return words;
  *label = name;
  return tl_shader_spirv(name, size_bytes);
}
