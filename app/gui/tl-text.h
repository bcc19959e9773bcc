/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Labels drawn with cairo by the plots and the slice views, each checked against the widget's
 * bounds: a label cut by the edge is a defect the GUI tests count. */
#pragma once
#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

/* Draws text with its baseline starting at (x, y), rotated to read bottom to top when upwards,
 * in the current source colour; with halo, outlined in translucent black so it reads over any
 * image. Returns TRUE when its ink leaves the W x H widget (half a pixel of slack). */
gboolean tl_text_draw(cairo_t *cr, double x, double y, const char *text, gboolean upwards,
                      gboolean halo, double W, double H);

G_END_DECLS
