/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProjectionView: one projection (detector image) of a CT dataset, drawn by a
 * TlSliceView in detector mode (colour map, window/level, zoom), with a view-index slider;
 * the wheel over the image moves through the views. The projections are the dataset's,
 * on the host: nothing is read back from the device. */
#pragma once
#include "tl-dataset.h"
#include "tl-slice-view.h"

G_BEGIN_DECLS

#define TL_TYPE_PROJECTION_VIEW (tl_projection_view_get_type())
G_DECLARE_FINAL_TYPE(TlProjectionView, tl_projection_view, TL, PROJECTION_VIEW, GtkBox)

GtkWidget *tl_projection_view_new(void);
/* A CT dataset (holds a reference), or NULL / a dataset without CT data to clear. Shows
 * the first view, levels over all projections (min to max). */
void tl_projection_view_set_dataset(TlProjectionView *self, TlDocument *d);
/* As the slider does; clamped to the views. */
void tl_projection_view_set_view(TlProjectionView *self, guint view);
guint tl_projection_view_get_view(TlProjectionView *self);
guint tl_projection_view_get_n_views(TlProjectionView *self);
void tl_projection_view_set_colormap(TlProjectionView *self, TlColormap c);
TlSliceView *tl_projection_view_get_image(TlProjectionView *self);

G_END_DECLS
