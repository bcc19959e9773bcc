/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProfile: GPU time per dispatch label, from timestamp queries written around
 * each labelled dispatch. Entries keep the order in which labels first appeared. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  char *label;
  guint calls;
  double gpu_ms;
  /* the built-in kernel dispatched under the label (core/tl-kernels.h name, static), NULL for
   * generated ones (expressions): what a run calls, for the kernel editor */
  const char *kernel;
} TlProfileEntry;

typedef struct _TlProfile TlProfile;

TL_API TlProfile *tl_profile_new(void);
TL_API void tl_profile_free(TlProfile *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlProfile, tl_profile_free)

TL_API void tl_profile_add(TlProfile *p, const char *label, guint calls, double gpu_ms);
/* The same, with the built-in kernel dispatched (a static name, or NULL). */
TL_API void tl_profile_add_kernel(TlProfile *p, const char *label, const char *kernel, guint calls,
                           double gpu_ms);
/* The built-in kernels of the entries, each once, in order (g_strfreev; empty: none). */
TL_API char **tl_profile_kernels(const TlProfile *p);
TL_API void tl_profile_merge(TlProfile *into, const TlProfile *from);
TL_API void tl_profile_clear(TlProfile *p);
/* What `now` gained since the snapshot `before` (labels with new calls only); caller frees.
 * A running total per step: keep a snapshot, take the difference after each step. */
TL_API TlProfile *tl_profile_new_since(const TlProfile *now, const TlProfile *before);
TL_API guint tl_profile_n_entries(const TlProfile *p);
TL_API const TlProfileEntry *tl_profile_entry(const TlProfile *p, guint i);
TL_API const TlProfileEntry *tl_profile_lookup(const TlProfile *p, const char *label);
TL_API double tl_profile_total_ms(const TlProfile *p);
/* Table "label calls ms share" for CLI --profile; caller frees. */
TL_API char *tl_profile_format(const TlProfile *p);

G_END_DECLS
