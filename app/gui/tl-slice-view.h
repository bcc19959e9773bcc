/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSliceView: one 2-D view of the volume (axial, coronal, sagittal or MIP) with a
 * crosshair, colour map, window/level, zoom and pan, a colour bar with ticks and the unit,
 * orientation letters and a mm scale bar. The aspect follows the voxel sizes; a thin slab (a
 * 2-slice volume seen from the side) is stretched to a least on-screen extent and says so.
 * Mouse: click sets the crosshair; wheel moves the slice; Ctrl+wheel zooms about the
 * pointer; drag pans; right-drag sets window/level; Shift+drag draws a profile line;
 * Ctrl+drag draws a spherical ROI (Ctrl+Shift+drag: a circle in the view's plane), or moves
 * (inside) or resizes (on the rim) one already drawn. */
#pragma once
#include <gtk/gtk.h>
#include "tl-colormap.h"
#include "tl-runner.h"
#include "image/tl-roi.h"

G_BEGIN_DECLS

#define TL_TYPE_SLICE_VIEW (tl_slice_view_get_type())
G_DECLARE_FINAL_TYPE(TlSliceView, tl_slice_view, TL, SLICE_VIEW, GtkWidget)

GtkWidget *tl_slice_view_new(int orientation /* TL_VIEW_* */);
int tl_slice_view_get_orientation(TlSliceView *self);
/* The grid the slices come from (for mm, aspect and the crosshair). */
void tl_slice_view_set_grid(TlSliceView *self, const TlImageGrid *grid);
/* A detector image instead of a slice (the projection view): det_u x det_v pixels, square,
 * row 0 at the top; no crosshair, clicks set no position, the wheel is left to the parent
 * (Ctrl+wheel still zooms). */
void tl_slice_view_set_detector(TlSliceView *self, guint det_u, guint det_v, const char *title);
/* Copies the slice; NULL clears the view. */
void tl_slice_view_set_slice(TlSliceView *self, const TlSlice *slice);
void tl_slice_view_set_position(TlSliceView *self, const guint pos[3]);
void tl_slice_view_set_levels(TlSliceView *self, float lo, float hi);
void tl_slice_view_set_colormap(TlSliceView *self, TlColormap c);
/* The colour bar's label (the values' unit). */
void tl_slice_view_set_unit(TlSliceView *self, const char *unit);
const char *tl_slice_view_get_unit(TlSliceView *self);
/* The image as last drawn at voxel resolution (tests compare it between frames). */
GdkTexture *tl_slice_view_get_texture(TlSliceView *self);
const TlSlice *tl_slice_view_get_slice(TlSliceView *self);
/* Pixel (column, row) of the slice -> voxel coordinates (the MIP's y is the crosshair's). */
void tl_slice_view_pixel_to_voxel(TlSliceView *self, double col, double row, double ijk[3]);
/* Nearest-neighbour samples of the slice along a line in pixel coordinates. */
guint tl_slice_view_sample_line(TlSliceView *self, const double line[4], guint n, float *out,
                                double *ijk /* n*3 voxel coordinates, may be NULL */);
double tl_slice_view_get_zoom(TlSliceView *self);
void tl_slice_view_reset_zoom(TlSliceView *self);
/* ROIs drawn where they cut the slice shown (copied; numbered from 1). */
void tl_slice_view_set_rois(TlSliceView *self, const TlRoi *rois, guint n);

/* What the last draw showed, for tests: every text (title, orientation letters, scale bar,
 * colour-bar ticks and unit), how many left the widget, the letters at the image's left,
 * right, top and bottom edges ("LRPA" for an axial slice; "" for a detector image), the scale
 * bar's length in mm (0: none), the colour bar's tick labels, and where the image is drawn. */
const GPtrArray *tl_slice_view_get_drawn_text(TlSliceView *self);
guint tl_slice_view_get_clipped(TlSliceView *self);
const char *tl_slice_view_get_letters(TlSliceView *self);
double tl_slice_view_get_scale_bar_mm(TlSliceView *self);
guint tl_slice_view_get_colorbar_ticks(TlSliceView *self);
graphene_rect_t tl_slice_view_get_image_rect(TlSliceView *self);

/* Signals: "position-changed" (guint i, guint j, guint k), "levels-changed" (double lo,
 * double hi), "hover" (const char *text: mm, voxel and value), "line" (double c0, r0, c1, r1),
 * "roi" (int index: -1 new, else the ROI moved or resized; int kind TlRoiKind; int axis;
 * double x, y, z, radius: mm). */

G_END_DECLS
