/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Run snapshots and their side-by-side comparison.
 *
 * TlSnapshot: a finished or paused run kept by name: a host copy of its image, a line
 * describing its settings, and its curves (objective, RMSE, contrast recovery vs noise).
 *
 * TlCompareView: two snapshots A and B and their difference A - B as three axial views
 * with one crosshair, one slice (the wheel on any view moves all three) and shared
 * window/level for A and B (the difference has its own, symmetric about 0); below, the
 * convergence and contrast-noise curves of both on shared plots (the same quantity of the
 * two runs on one y range). */
#pragma once
#include <gtk/gtk.h>
#include "tl-plot.h"
#include "tl-slice-view.h"

G_BEGIN_DECLS

typedef struct {
  char *name;
  TlImage *image;          /* host copy, owned */
  char *settings;          /* e.g. "osem, 4 subsets, siddon" */
  guint sub_iterations;
  /* Curves at the moment it was kept: x, y pairs (double) */
  GArray *objective_x, *objective_y, *rmse_x, *rmse_y, *cr_x, *cr_y;
  gpointer options;        /* the run's job options (tl-window-run.c's), owned */
  GDestroyNotify options_free;
} TlSnapshot;

/* Reference counted: the window's list and a comparison showing it each hold one. */
TlSnapshot *tl_snapshot_new(const char *name, TlImage *image /* taken */);
TlSnapshot *tl_snapshot_ref(TlSnapshot *s);
void tl_snapshot_unref(TlSnapshot *s);

#define TL_TYPE_COMPARE_VIEW (tl_compare_view_get_type())
G_DECLARE_FINAL_TYPE(TlCompareView, tl_compare_view, TL, COMPARE_VIEW, GtkWidget)

GtkWidget *tl_compare_view_new(void);
/* Both on the same grid (else FALSE + error); the view holds a reference to each. */
gboolean tl_compare_view_set(TlCompareView *self, TlSnapshot *a, TlSnapshot *b, GError **error);
/* A - B, voxel by voxel (NULL before set). */
const TlImage *tl_compare_view_get_difference(TlCompareView *self);
/* 0: A, 1: B, 2: A - B. */
TlSliceView *tl_compare_view_get_slice_view(TlCompareView *self, int which);
void tl_compare_view_set_position(TlCompareView *self, const guint pos[3]);
TlPlot *tl_compare_view_get_convergence_plot(TlCompareView *self);
TlPlot *tl_compare_view_get_contrast_plot(TlCompareView *self);

G_END_DECLS
