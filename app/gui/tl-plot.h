/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlPlot: a small line plot of named series sharing an x axis. Each series is scaled to
 * its own y range (log-likelihood and RMSE differ by orders of magnitude); the legend
 * gives each range. Exports as CSV (one column per series) and PNG. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TL_TYPE_PLOT (tl_plot_get_type())
G_DECLARE_FINAL_TYPE(TlPlot, tl_plot, TL, PLOT, GtkWidget)

GtkWidget *tl_plot_new(const char *title, const char *x_label);
void tl_plot_clear(TlPlot *self);
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
/* A vertical marker at x (where a run's settings changed); cleared with the series. */
void tl_plot_add_marker(TlPlot *self, double x, const char *label);
guint tl_plot_n_markers(TlPlot *self);
double tl_plot_get_marker(TlPlot *self, guint i);
gboolean tl_plot_save_csv(TlPlot *self, const char *path, GError **error);
gboolean tl_plot_save_png(TlPlot *self, const char *path, int width, int height, GError **error);
/* The plot as the PNG shows it, width x height at cr's origin (composed pictures). */
void tl_plot_render(TlPlot *self, cairo_t *cr, int width, int height);

G_END_DECLS
