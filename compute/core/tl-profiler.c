/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProfile: per-label GPU time, in first-seen order. */
#include "tl-profiler.h"
#include <string.h>

struct _TlProfile {
  GArray *entries;   /* TlProfileEntry */
  GHashTable *index; /* label -> position + 1 */
};

TlProfile *tl_profile_new(void) {
  TlProfile *p = g_new0(TlProfile, 1);
  p->entries = g_array_new(FALSE, TRUE, sizeof(TlProfileEntry));
  p->index = g_hash_table_new(g_str_hash, g_str_equal);
  return p;
}

void tl_profile_clear(TlProfile *p) {
  g_hash_table_remove_all(p->index);
  for (guint i = 0; i < p->entries->len; i++)
    g_free(g_array_index(p->entries, TlProfileEntry, i).label);
  g_array_set_size(p->entries, 0);
}

void tl_profile_free(TlProfile *p) {
  if (!p) return;
  tl_profile_clear(p);
  g_array_free(p->entries, TRUE);
  g_hash_table_destroy(p->index);
  g_free(p);
}

void tl_profile_add(TlProfile *p, const char *label, guint calls, double gpu_ms) {
  tl_profile_add_kernel(p, label, NULL, calls, gpu_ms);
}

char **tl_profile_kernels(const TlProfile *p) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < p->entries->len; i++) {
    const char *k = g_array_index(p->entries, TlProfileEntry, i).kernel;
    gboolean seen = FALSE;
    for (guint j = 0; k && j < out->len && !seen; j++) seen = g_str_equal(out->pdata[j], k);
    if (k && !seen) g_ptr_array_add(out, g_strdup(k));
  }
  g_ptr_array_add(out, NULL);
  return (char **)g_ptr_array_free(out, FALSE);
}

void tl_profile_add_kernel(TlProfile *p, const char *label, const char *kernel, guint calls,
                           double gpu_ms) {
  guint pos = GPOINTER_TO_UINT(g_hash_table_lookup(p->index, label));
  if (pos == 0) {
    TlProfileEntry e = {.label = g_strdup(label)};
    g_array_append_val(p->entries, e);
    pos = p->entries->len;
    /* keys point into the entries, which own the strings */
    g_hash_table_insert(p->index, g_array_index(p->entries, TlProfileEntry, pos - 1).label,
                        GUINT_TO_POINTER(pos));
  }
  TlProfileEntry *e = &g_array_index(p->entries, TlProfileEntry, pos - 1);
  if (kernel) e->kernel = kernel;
  e->calls += calls;
  e->gpu_ms += gpu_ms;
}

void tl_profile_merge(TlProfile *into, const TlProfile *from) {
  for (guint i = 0; i < from->entries->len; i++) {
    const TlProfileEntry *e = &g_array_index(from->entries, TlProfileEntry, i);
    tl_profile_add_kernel(into, e->label, e->kernel, e->calls, e->gpu_ms);
  }
}

TlProfile *tl_profile_new_since(const TlProfile *now, const TlProfile *before) {
  TlProfile *d = tl_profile_new();
  for (guint i = 0; i < now->entries->len; i++) {
    const TlProfileEntry *e = &g_array_index(now->entries, TlProfileEntry, i);
    const TlProfileEntry *b = tl_profile_lookup(before, e->label);
    guint calls = e->calls - (b ? b->calls : 0);
    if (calls > 0)
      tl_profile_add_kernel(d, e->label, e->kernel, calls, e->gpu_ms - (b ? b->gpu_ms : 0));
  }
  return d;
}

guint tl_profile_n_entries(const TlProfile *p) { return p->entries->len; }

const TlProfileEntry *tl_profile_entry(const TlProfile *p, guint i) {
  return i < p->entries->len ? &g_array_index(p->entries, TlProfileEntry, i) : NULL;
}

const TlProfileEntry *tl_profile_lookup(const TlProfile *p, const char *label) {
  guint pos = GPOINTER_TO_UINT(g_hash_table_lookup(p->index, label));
  return pos ? &g_array_index(p->entries, TlProfileEntry, pos - 1) : NULL;
}

double tl_profile_total_ms(const TlProfile *p) {
  double t = 0;
  for (guint i = 0; i < p->entries->len; i++) t += g_array_index(p->entries, TlProfileEntry, i).gpu_ms;
  return t;
}

char *tl_profile_format(const TlProfile *p) {
  GString *s = g_string_new(NULL);
  int w = 6;
  for (guint i = 0; i < p->entries->len; i++)
    w = MAX(w, (int)strlen(g_array_index(p->entries, TlProfileEntry, i).label));
  double total = tl_profile_total_ms(p);
  g_string_append_printf(s, "%-*s %8s %12s %7s\n", w, "kernel", "calls", "GPU ms", "share");
  for (guint i = 0; i < p->entries->len; i++) {
    const TlProfileEntry *e = &g_array_index(p->entries, TlProfileEntry, i);
    g_string_append_printf(s, "%-*s %8u %12.3f %6.1f%%\n", w, e->label, e->calls, e->gpu_ms,
                           total > 0 ? 100.0 * e->gpu_ms / total : 0.0);
  }
  g_string_append_printf(s, "%-*s %8s %12.3f\n", w, "total", "", total);
  return g_string_free(s, FALSE);
}
