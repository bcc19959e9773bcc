/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Drawn with cairo so the same code paints the widget and the exported PNG. */
#include <math.h>
#include "tl-plot.h"
#include "tl-screenshot.h"

typedef struct {
  char *name;
  GdkRGBA colour;
  gboolean dashed;
  GArray *x, *y;  /* double */
  guint group;    /* > 0: the y range is shared with the group */
} Series;

typedef struct {
  double x;
  char *label;
} Marker;

struct _TlPlot {
  GtkWidget parent_instance;
  char *title, *x_label;
  GPtrArray *series;
  GArray *markers;  /* Marker */
};

G_DEFINE_FINAL_TYPE(TlPlot, tl_plot, GTK_TYPE_WIDGET)

static void series_free(gpointer p) {
  Series *s = p;
  g_free(s->name);
  g_array_unref(s->x);
  g_array_unref(s->y);
  g_free(s);
}

static void marker_clear(gpointer p) {
  g_free(((Marker *)p)->label);
}

static void y_range(TlPlot *self, Series *se, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (guint s = 0; s < self->series->len; s++) {
    Series *o = self->series->pdata[s];
    if (o != se && (se->group == 0 || o->group != se->group))
      continue;
    for (guint i = 0; i < o->y->len; i++) {
      double v = g_array_index(o->y, double, i);
      if (isfinite(v)) { *lo = MIN(*lo, v); *hi = MAX(*hi, v); }
    }
  }
}

static void draw(TlPlot *self, cairo_t *cr, double W, double H, gboolean background) {
  if (background) {
    cairo_set_source_rgb(cr, 0.12, 0.12, 0.13);
    cairo_paint(cr);
  }
  const double L = 12, R = 12, T = 22, B = 24;
  double pw = MAX(W - L - R, 1), ph = MAX(H - T - B, 1);
  cairo_set_font_size(cr, 11);
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  cairo_move_to(cr, L, 14);
  cairo_show_text(cr, self->title);
  cairo_set_source_rgba(cr, 1, 1, 1, 0.25);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, L + 0.5, T + 0.5, pw, ph);
  cairo_stroke(cr);

  double xmin = INFINITY, xmax = -INFINITY;
  guint points = 0;
  for (guint s = 0; s < self->series->len; s++)
    points += ((Series *)self->series->pdata[s])->x->len;
  if (points == 0) {
    cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
    cairo_move_to(cr, L + 8, T + ph / 2);
    cairo_show_text(cr, "No data yet");
    return;
  }
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    for (guint i = 0; i < se->x->len; i++) {
      xmin = MIN(xmin, g_array_index(se->x, double, i));
      xmax = MAX(xmax, g_array_index(se->x, double, i));
    }
  }
  if (!(xmax > xmin)) { xmin -= 1; xmax += 1; }
  double legend_y = T + 14;
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    double ymin, ymax;
    y_range(self, se, &ymin, &ymax);
    if (!isfinite(ymin))
      continue;
    if (!(ymax > ymin)) { ymin -= 0.5 * fabs(ymin) + 1e-12; ymax += 0.5 * fabs(ymax) + 1e-12; }
    gdk_cairo_set_source_rgba(cr, &se->colour);
    cairo_set_line_width(cr, 1.5);
    cairo_set_dash(cr, (double[]){4, 3}, se->dashed ? 2 : 0, 0);
    gboolean pen = FALSE;
    for (guint i = 0; i < se->x->len; i++) {
      double v = g_array_index(se->y, double, i);
      if (!isfinite(v)) { pen = FALSE; continue; }
      double px = L + (g_array_index(se->x, double, i) - xmin) / (xmax - xmin) * pw;
      double py = T + ph - (v - ymin) / (ymax - ymin) * ph * 0.9 - ph * 0.05;
      if (pen) cairo_line_to(cr, px, py); else cairo_move_to(cr, px, py);
      pen = TRUE;
      if (se->x->len < 40) {  /* few points: mark them */
        cairo_stroke(cr);
        cairo_arc(cr, px, py, 2.5, 0, 2 * G_PI);
        cairo_fill(cr);
        cairo_move_to(cr, px, py);
      }
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    char text[160];
    g_snprintf(text, sizeof text, "%s  [%.6g … %.6g]", se->name, ymin, ymax);
    cairo_move_to(cr, L + 6, legend_y);
    cairo_show_text(cr, text);
    legend_y += 13;
  }
  /* Markers: where the settings changed (dashed, labelled at the top). */
  for (guint m = 0; m < self->markers->len; m++) {
    const Marker *mk = &g_array_index(self->markers, Marker, m);
    if (mk->x < xmin || mk->x > xmax)
      continue;
    double px = L + (mk->x - xmin) / (xmax - xmin) * pw;
    cairo_set_source_rgba(cr, 1, 1, 1, 0.55);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, (double[]){2, 2}, 2, 0);
    cairo_move_to(cr, px, T);
    cairo_line_to(cr, px, T + ph);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    if (mk->label) {
      cairo_move_to(cr, px + 3, T + ph - 4);
      cairo_show_text(cr, mk->label);
    }
  }
  cairo_set_source_rgb(cr, 0.75, 0.75, 0.75);
  char text[96];
  g_snprintf(text, sizeof text, "%s  %.4g … %.4g", self->x_label, xmin, xmax);
  cairo_move_to(cr, L, H - 7);
  cairo_show_text(cr, text);
}

static void tl_plot_snapshot(GtkWidget *widget, GtkSnapshot *snapshot) {
  double W = gtk_widget_get_width(widget), H = gtk_widget_get_height(widget);
  cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT(0, 0, W, H));
  draw(TL_PLOT(widget), cr, W, H, TRUE);
  cairo_destroy(cr);
}

void tl_plot_clear(TlPlot *self) {
  g_ptr_array_set_size(self->series, 0);
  g_array_set_size(self->markers, 0);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint tl_plot_add_series(TlPlot *self, const char *name, const GdkRGBA *colour, gboolean dashed) {
  Series *s = g_new0(Series, 1);
  s->name = g_strdup(name);
  s->colour = *colour;
  s->dashed = dashed;
  s->x = g_array_new(FALSE, FALSE, sizeof(double));
  s->y = g_array_new(FALSE, FALSE, sizeof(double));
  g_ptr_array_add(self->series, s);
  return self->series->len - 1;
}

void tl_plot_append(TlPlot *self, guint series, double x, double y) {
  g_return_if_fail(series < self->series->len);
  Series *s = self->series->pdata[series];
  g_array_append_val(s->x, x);
  g_array_append_val(s->y, y);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_plot_set_series(TlPlot *self, guint series, const double *x, const double *y, guint n) {
  g_return_if_fail(series < self->series->len);
  Series *s = self->series->pdata[series];
  g_array_set_size(s->x, 0);
  g_array_set_size(s->y, 0);
  g_array_append_vals(s->x, x, n);
  g_array_append_vals(s->y, y, n);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint tl_plot_n_points(TlPlot *self, guint series) {
  g_return_val_if_fail(series < self->series->len, 0);
  return ((Series *)self->series->pdata[series])->x->len;
}

guint tl_plot_n_series(TlPlot *self) { return self->series->len; }

guint tl_plot_get_series(TlPlot *self, guint series, const double **x, const double **y) {
  g_return_val_if_fail(series < self->series->len, 0);
  Series *s = self->series->pdata[series];
  if (x) *x = (const double *)s->x->data;
  if (y) *y = (const double *)s->y->data;
  return s->x->len;
}

const char *tl_plot_get_series_name(TlPlot *self, guint series) {
  g_return_val_if_fail(series < self->series->len, NULL);
  return ((Series *)self->series->pdata[series])->name;
}

void tl_plot_set_series_group(TlPlot *self, guint series, guint group) {
  g_return_if_fail(series < self->series->len);
  ((Series *)self->series->pdata[series])->group = group;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_plot_add_marker(TlPlot *self, double x, const char *label) {
  Marker m = {x, g_strdup(label)};
  g_array_append_val(self->markers, m);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint tl_plot_n_markers(TlPlot *self) { return self->markers->len; }

double tl_plot_get_marker(TlPlot *self, guint i) {
  g_return_val_if_fail(i < self->markers->len, NAN);
  return g_array_index(self->markers, Marker, i).x;
}

/* Rows are the union of x values in order of the first series that has them; series
 * sampled at other x get empty cells. */
gboolean tl_plot_save_csv(TlPlot *self, const char *path, GError **error) {
  GString *out = g_string_new(NULL);
  g_string_append(out, self->x_label);
  for (guint s = 0; s < self->series->len; s++)
    g_string_append_printf(out, ",%s", ((Series *)self->series->pdata[s])->name);
  g_string_append_c(out, '\n');
  guint rows = 0;
  for (guint s = 0; s < self->series->len; s++)
    rows = MAX(rows, ((Series *)self->series->pdata[s])->x->len);
  for (guint i = 0; i < rows; i++) {
    double x = NAN;
    for (guint s = 0; s < self->series->len && isnan(x); s++) {
      Series *se = self->series->pdata[s];
      if (i < se->x->len) x = g_array_index(se->x, double, i);
    }
    g_string_append_printf(out, "%.9g", x);
    for (guint s = 0; s < self->series->len; s++) {
      Series *se = self->series->pdata[s];
      double v = i < se->y->len ? g_array_index(se->y, double, i) : NAN;
      if (isfinite(v)) g_string_append_printf(out, ",%.9g", v);
      else g_string_append_c(out, ',');
    }
    g_string_append_c(out, '\n');
  }
  gboolean ok = g_file_set_contents(path, out->str, out->len, error);
  g_string_free(out, TRUE);
  return ok;
}

void tl_plot_render(TlPlot *self, cairo_t *cr, int width, int height) {
  cairo_save(cr);
  cairo_rectangle(cr, 0, 0, width, height); /* the background paints the clip only */
  cairo_clip(cr);
  draw(self, cr, width, height, TRUE);
  cairo_restore(cr);
}

gboolean tl_plot_save_png(TlPlot *self, const char *path, int width, int height, GError **error) {
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  cairo_t *cr = cairo_create(surface);
  draw(self, cr, width, height, TRUE);
  cairo_destroy(cr);
  return tl_surface_save_png(surface, path, error);
}

static void tl_plot_finalize(GObject *object) {
  TlPlot *self = TL_PLOT(object);
  g_ptr_array_unref(self->series);
  g_array_unref(self->markers);
  g_free(self->title);
  g_free(self->x_label);
  G_OBJECT_CLASS(tl_plot_parent_class)->finalize(object);
}

static void tl_plot_class_init(TlPlotClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = tl_plot_finalize;
  GTK_WIDGET_CLASS(klass)->snapshot = tl_plot_snapshot;
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "tl-plot");
}

static void tl_plot_init(TlPlot *self) {
  self->series = g_ptr_array_new_with_free_func(series_free);
  self->markers = g_array_new(FALSE, FALSE, sizeof(Marker));
  g_array_set_clear_func(self->markers, marker_clear);
  gtk_widget_set_size_request(GTK_WIDGET(self), 200, 120);
  gtk_widget_set_hexpand(GTK_WIDGET(self), TRUE);
}

GtkWidget *tl_plot_new(const char *title, const char *x_label) {
  TlPlot *self = g_object_new(TL_TYPE_PLOT, NULL);
  self->title = g_strdup(title);
  self->x_label = g_strdup(x_label);
  return GTK_WIDGET(self);
}
