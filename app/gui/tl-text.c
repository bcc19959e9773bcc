/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "tl-text.h"

gboolean tl_text_draw(cairo_t *cr, double x, double y, const char *text, gboolean upwards,
                      gboolean halo, double W, double H) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text, &e);
  double x0, x1, y0, y1;
  if (upwards) { /* rotated by -pi/2 about (x, y): the extents' axes swap */
    x0 = x + e.y_bearing; x1 = x0 + e.height;
    y1 = y - e.x_bearing; y0 = y1 - e.width;
  } else {
    x0 = x + e.x_bearing; x1 = x0 + e.width;
    y0 = y + e.y_bearing; y1 = y0 + e.height;
  }
  cairo_save(cr);
  cairo_move_to(cr, x, y);
  if (upwards)
    cairo_rotate(cr, -G_PI / 2);
  if (halo) {
    cairo_text_path(cr, text);
    cairo_pattern_t *colour = cairo_pattern_reference(cairo_get_source(cr));
    cairo_set_source_rgba(cr, 0, 0, 0, 0.8);
    cairo_set_line_width(cr, 2.5);
    cairo_stroke_preserve(cr);
    cairo_set_source(cr, colour);
    cairo_fill(cr);
    cairo_pattern_destroy(colour);
  } else {
    cairo_show_text(cr, text);
  }
  cairo_restore(cr);
  return x0 < -0.5 || y0 < -0.5 || x1 > W + 0.5 || y1 > H + 0.5;
}
