/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProfileView: the profiling strip under the slice views: one line (GPU ms and events/s of
 * the last sub-iteration, the device) and, expanded, per-kernel GPU time of the last sub-iteration as
 * a stacked bar and a table (label, calls, ms, share), events/s, the device, and a strip
 * with the total GPU time of every sub-iteration so far. */
#pragma once
#include <gtk/gtk.h>
#include "tl-profiler.h"

G_BEGIN_DECLS

#define TL_TYPE_PROFILE_VIEW (tl_profile_view_get_type())
G_DECLARE_FINAL_TYPE(TlProfileView, tl_profile_view, TL, PROFILE_VIEW, GtkBox)

void tl_profile_view_set_device(TlProfileView *self, const char *name);
/* A sub-iteration's profile, its wall time and how many events it processed. */
void tl_profile_view_add(TlProfileView *self, const TlProfile *profile, double seconds, double events);
void tl_profile_view_clear(TlProfileView *self);
/* Collapsed (the one line) or expanded (the table, bar and history too); collapsed at first. */
void tl_profile_view_set_expanded(TlProfileView *self, gboolean expanded);
gboolean tl_profile_view_get_expanded(TlProfileView *self);
/* For tests: the rows shown, as a copy of the last profile (NULL before any). */
const TlProfile *tl_profile_view_get_profile(TlProfileView *self);
guint tl_profile_view_get_history_length(TlProfileView *self);

G_END_DECLS
