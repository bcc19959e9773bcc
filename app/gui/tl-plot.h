/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlPlot: a small line plot of named series sharing an x axis, with ticks and labelled axes
 * (tl-axis). Series of one group share a y scale; otherwise each series has its own
 * (log-likelihood and RMSE differ by orders of magnitude): the first scale is the left axis,
 * the second the right one, titled with their series' names (which carry the units). The
 * legend sits between the title and the curves. Hovering shows the values nearest the
 * pointer. Exports as CSV (one column per series) and PNG. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TL_TYPE_PLOT (tl_plot_get_type())
G_DECLARE_FINAL_TYPE(TlPlot, tl_plot, TL, PLOT, GtkWidget)

GtkWidget *tl_plot_new(const char *title, const char *x_label);
void tl_plot_clear(TlPlot *self);
void tl_plot_set_x_label(TlPlot *self, const char *x_label);
/* Returns the series index; `dashed` for reference curves (ground truth). */
guint tl_plot_add_series(TlPlot *self, const char *name, const GdkRGBA *colour, gboolean dashed);
/* NAN y values are kept in the CSV and skipped in the drawing. */
void tl_plot_append(TlPlot *self, guint series, double x, double y);
void tl_plot_set_series(TlPlot *self, guint series, const double *x, const double *y, guint n);
guint tl_plot_n_points(TlPlot *self, guint series);
guint tl_plot_n_series(TlPlot *self);
/* The series' points (borrowed) and name. */
guint tl_plot_get_series(TlPlot *self, guint series, const double **x, const double **y);
const char *tl_plot_get_series_name(TlPlot *self, guint series);
/* Series with the same group (> 0) share one y range (the same quantity of two runs). */
void tl_plot_set_series_group(TlPlot *self, guint series, guint group);
/* The title of the y axis the series is on, with its unit (default: its series' names). */
void tl_plot_set_axis_title(TlPlot *self, guint series, const char *title);
/* A vertical marker at x (where a run's settings changed); cleared with the series. */
void tl_plot_add_marker(TlPlot *self, double x, const char *label);
guint tl_plot_n_markers(TlPlot *self);
double tl_plot_get_marker(TlPlot *self, guint i);
gboolean tl_plot_save_csv(TlPlot *self, const char *path, GError **error);
gboolean tl_plot_save_png(TlPlot *self, const char *path, int width, int height, GError **error);
/* The plot as the PNG shows it, width x height at cr's origin (composed pictures). */
void tl_plot_render(TlPlot *self, cairo_t *cr, int width, int height);

/* Hover as the pointer at (x, y) in widget pixels would (NAN: none); the box's text after the
 * next draw: "x label = X" then "name = value" per series, lines split by '\n'. */
void tl_plot_hover(TlPlot *self, double x, double y);
const char *tl_plot_get_hover_text(TlPlot *self);
/* What the last draw showed, for tests: every text (title, legend, tick labels, axis titles),
 * how many left the widget's bounds, the ticks on axis 0 (x), 1 (left y), 2 (right y), and
 * the curves' area. */
const GPtrArray *tl_plot_get_drawn_text(TlPlot *self);
guint tl_plot_get_clipped(TlPlot *self);
guint tl_plot_get_tick_count(TlPlot *self, guint axis);
graphene_rect_t tl_plot_get_plot_area(TlPlot *self);

G_END_DECLS
