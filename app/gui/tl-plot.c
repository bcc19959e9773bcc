/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Drawn with cairo so the same code paints the widget and the exported PNG. */
#include <math.h>
#include <string.h>
#include "tl-plot.h"
#include "tl-axis.h"
#include "tl-text.h"
#include "tl-screenshot.h"

typedef struct {
  char *name;
  GdkRGBA colour;
  gboolean dashed;
  GArray *x, *y;  /* double */
  guint group;    /* > 0: the y range is shared with the group */
  char *axis_title; /* its y axis' title (NULL: the series' names) */
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
  /* what the last draw showed (tests read it) */
  GPtrArray *drawn;          /* every text drawn */
  guint clipped;             /* texts that left the widget */
  guint n_ticks[3];          /* x, left y, right y */
  graphene_rect_t plot_area; /* the curves' area, widget pixels */
  double x_lo, x_hi;         /* the x axis' range */
  /* hover */
  gboolean hovering;
  double pointer[2];
  char *hover_text;          /* what the box shows, NULL when none */
};

G_DEFINE_FINAL_TYPE(TlPlot, tl_plot, GTK_TYPE_WIDGET)

static void series_free(gpointer p) {
  Series *s = p;
  g_free(s->name);
  g_free(s->axis_title);
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

/* Series on one y scale: those of one group (> 0), else each series alone. */
static gint64 scale_key(const Series *se, guint index) {
  return se->group > 0 ? -(gint64)se->group : (gint64)index;
}

/* Text at (x, y) (baseline start; upwards reads bottom to top),
 * recorded for the tests with whether it left the widget. */
static void text_at(TlPlot *self, cairo_t *cr, double x, double y, const char *text, gboolean upwards,
                    double W, double H) {
  if (tl_text_draw(cr, x, y, text, upwards, FALSE, W, H))
    self->clipped++;
  g_ptr_array_add(self->drawn, g_strdup(text));
}

static double text_width(cairo_t *cr, const char *text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text, &e);
  return e.x_advance;
}

typedef struct {
  gint64 key;
  TlAxis axis;
  GString *title;   /* the names of its series */
  const GdkRGBA *colour; /* the first series' (titles are drawn in it when alone) */
  guint n_series;
  gboolean titled;  /* a series gave the title */
  double tick_w;    /* widest tick label */
} Scale;

/* The y scales: the first two get an axis (left, right), others are drawn on their own
 * range and say so in the legend. */
static guint make_scales(TlPlot *self, cairo_t *cr, Scale *scales, guint max, guint *which, guint target) {
  guint n = 0;
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    gint64 key = scale_key(se, s);
    guint k = 0;
    while (k < n && scales[k].key != key) k++;
    which[s] = k;
    if (k == max) { which[s] = max - 1; k = max - 1; }
    if (k == n) {
      double lo, hi;
      y_range(self, se, &lo, &hi);
      scales[n] = (Scale){.key = key, .title = g_string_new(NULL), .colour = &se->colour};
      tl_axis_make(&scales[n].axis, lo, hi, target, TRUE);
      n++;
    }
    Scale *sc = &scales[k];
    if (sc->n_series++ > 0 && !sc->titled) g_string_append(sc->title, ", ");
    if (se->axis_title && !sc->titled) g_string_assign(sc->title, se->axis_title);
    else if (!sc->titled) g_string_append(sc->title, se->name);
    sc->titled |= se->axis_title != NULL;
  }
  for (guint k = 0; k < n; k++) {
    char f[32], t[64];
    tl_axis_factor(&scales[k].axis, f, sizeof f);
    if (f[0]) g_string_append_printf(scales[k].title, " (%s)", f);
    for (guint i = 0; i < scales[k].axis.n; i++) {
      tl_axis_label(&scales[k].axis, scales[k].axis.ticks[i], t, sizeof t);
      scales[k].tick_w = MAX(scales[k].tick_w, text_width(cr, t));
    }
  }
  return n;
}

static void draw(TlPlot *self, cairo_t *cr, double W, double H, gboolean background) {
  g_ptr_array_set_size(self->drawn, 0);
  self->clipped = 0;
  memset(self->n_ticks, 0, sizeof self->n_ticks);
  if (background) {
    cairo_set_source_rgb(cr, 0.12, 0.12, 0.13);
    cairo_paint(cr);
  }
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 11);
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  text_at(self, cr, 8, 14, self->title, FALSE, W, H);

  double xmin = INFINITY, xmax = -INFINITY;
  guint points = 0;
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    for (guint i = 0; i < se->y->len; i++)  /* only values count: FDK's objective is NAN */
      points += isfinite(g_array_index(se->y, double, i));
    for (guint i = 0; i < se->x->len; i++) {
      xmin = MIN(xmin, g_array_index(se->x, double, i));
      xmax = MAX(xmax, g_array_index(se->x, double, i));
    }
  }
  if (points == 0) {
    cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
    text_at(self, cr, 16, H / 2, "No data yet", FALSE, W, H);
    self->plot_area = (graphene_rect_t){0};
    return;
  }
  cairo_set_font_size(cr, 10);
  enum { MAX_SCALES = 4 };
  Scale scales[MAX_SCALES];
  guint *which = g_newa(guint, self->series->len + 1);
  /* about one tick per 28 px of the curves' height (estimated before the layout: the title,
   * two legend rows, the x axis), so labels never crowd a short plot */
  double ph_est = H - 14 - 2 * 13 - 8 - (2 * 13 + 10);
  guint n_scales = make_scales(self, cr, scales, MAX_SCALES, which, CLAMP((guint)(ph_est / 28), 2, 6));

  /* The legend: rows of entries under the title, wrapped to the width; never over the curves. */
  const double line_h = 13, sample_w = 18;
  double lx = 8, ly = 14 + line_h;
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    g_autofree char *entry = which[s] >= 2 ? g_strdup_printf("%s (own scale)", se->name) : g_strdup(se->name);
    double w = sample_w + 4 + text_width(cr, entry) + 14;
    if (lx > 8 && lx + w > W - 8) { lx = 8; ly += line_h; }
    gdk_cairo_set_source_rgba(cr, &se->colour);
    cairo_set_line_width(cr, 2);
    cairo_set_dash(cr, (double[]){4, 3}, se->dashed ? 2 : 0, 0);
    cairo_move_to(cr, lx, ly - 4);
    cairo_line_to(cr, lx + sample_w, ly - 4);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    text_at(self, cr, lx + sample_w + 4, ly, entry, FALSE, W, H);
    lx += w;
  }

  /* Margins from what the axes print: tick labels, then the title reading upwards. */
  TlAxis xa;
  tl_axis_make(&xa, xmin, xmax, CLAMP((guint)(W / 70), 3, 8), FALSE);
  double L = 8 + line_h + scales[0].tick_w + 6;
  double R = n_scales > 1 ? 8 + line_h + scales[1].tick_w + 6 : 16;
  double T = ly + 8, B = 2 * line_h + 10;
  /* A y title that would need a font under 9 px to read along its axis goes above the axis
   * instead, horizontally (one row, or two when the left and right ones would meet). */
  gboolean flat[2] = {FALSE, FALSE};
  double flat_w[2] = {0, 0};
  for (guint k = 0; k < MIN(n_scales, 2); k++) {
    cairo_set_font_size(cr, 9);
    flat_w[k] = text_width(cr, scales[k].title->str);
    flat[k] = flat_w[k] > H - T - B - 2 * line_h;
  }
  cairo_set_font_size(cr, 10);
  guint flat_rows = (flat[0] || flat[1]) ? 1 : 0;
  if (flat[0] && flat[1] && flat_w[0] + flat_w[1] + 16 > W - 8)
    flat_rows = 2;
  double flat_y = T + line_h - 4;
  T += flat_rows * line_h;
  double pw = MAX(W - L - R, 1), ph = MAX(H - T - B, 1);
  self->plot_area = GRAPHENE_RECT_INIT(L, T, pw, ph);
  self->x_lo = xa.lo;
  self->x_hi = xa.hi;

  cairo_set_source_rgba(cr, 1, 1, 1, 0.25);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, L + 0.5, T + 0.5, pw, ph);
  cairo_stroke(cr);

  /* x ticks, grid lines and the title with its unit */
  char t[64];
  for (guint i = 0; i < xa.n; i++) {
    double px = L + tl_axis_map(&xa, xa.ticks[i], pw);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.08);
    cairo_move_to(cr, floor(px) + 0.5, T);
    cairo_line_to(cr, floor(px) + 0.5, T + ph);
    cairo_stroke(cr);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.6);
    cairo_move_to(cr, floor(px) + 0.5, T + ph);
    cairo_line_to(cr, floor(px) + 0.5, T + ph + 4);
    cairo_stroke(cr);
    tl_axis_label(&xa, xa.ticks[i], t, sizeof t);
    double w = text_width(cr, t);
    cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    text_at(self, cr, CLAMP(px - w / 2, 1, W - w - 1), T + ph + 4 + 10, t, FALSE, W, H);
    self->n_ticks[0]++;
  }
  {
    char f[32];
    tl_axis_factor(&xa, f, sizeof f);
    g_autofree char *title = f[0] ? g_strdup_printf("%s (%s)", self->x_label, f) : g_strdup(self->x_label);
    double w = text_width(cr, title);
    cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    text_at(self, cr, MAX(L + (pw - w) / 2, 1), H - 5, title, FALSE, W, H);
  }

  /* y axes: the first scale on the left, the second on the right */
  for (guint k = 0; k < MIN(n_scales, 2); k++) {
    const TlAxis *ya = &scales[k].axis;
    double edge = k == 0 ? L : L + pw;
    for (guint i = 0; i < ya->n; i++) {
      double py = T + ph - tl_axis_map(ya, ya->ticks[i], ph);
      if (k == 0) {
        cairo_set_source_rgba(cr, 1, 1, 1, 0.08);
        cairo_move_to(cr, L, floor(py) + 0.5);
        cairo_line_to(cr, L + pw, floor(py) + 0.5);
        cairo_stroke(cr);
      }
      cairo_set_source_rgba(cr, 1, 1, 1, 0.6);
      cairo_move_to(cr, edge, floor(py) + 0.5);
      cairo_line_to(cr, edge + (k == 0 ? -4 : 4), floor(py) + 0.5);
      cairo_stroke(cr);
      tl_axis_label(ya, ya->ticks[i], t, sizeof t);
      double w = text_width(cr, t);
      cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
      text_at(self, cr, k == 0 ? edge - 6 - w : edge + 6, CLAMP(py + 3.5, T + 8, T + ph + 3.5), t, FALSE, W, H);
      self->n_ticks[1 + k]++;
    }
    /* the title reads upwards along the axis, in its series' colour when it has one; a title
     * longer than the axis gets a smaller font rather than being cut */
    const char *title = scales[k].title->str;
    if (scales[k].n_series == 1 || (n_scales > 1 && !scales[k].titled)) gdk_cairo_set_source_rgba(cr, scales[k].colour);
    else cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    if (flat[k]) {
      cairo_set_font_size(cr, 9);
      double w = text_width(cr, title);
      double y = flat_y + (k == 1 && flat_rows == 2 ? line_h : 0);
      text_at(self, cr, k == 0 ? 4 : MAX(W - 4 - w, 0), y, title, FALSE, W, H);
    } else {
      double size = 10;
      while (size > 9 && text_width(cr, title) > ph) cairo_set_font_size(cr, --size);
      double w = text_width(cr, title);
      double tx = k == 0 ? 4 + line_h - 3 : W - 6;
      text_at(self, cr, tx, T + ph / 2 + MIN(w, ph) / 2, title, TRUE, W, H);
    }
    cairo_set_font_size(cr, 10);
  }

  /* the curves, clipped to the plot area */
  cairo_save(cr);
  cairo_rectangle(cr, L, T, pw + 1, ph + 1);
  cairo_clip(cr);
  for (guint s = 0; s < self->series->len; s++) {
    Series *se = self->series->pdata[s];
    const TlAxis *ya = &scales[which[s]].axis;
    gdk_cairo_set_source_rgba(cr, &se->colour);
    cairo_set_line_width(cr, 1.5);
    cairo_set_dash(cr, (double[]){4, 3}, se->dashed ? 2 : 0, 0);
    gboolean pen = FALSE;
    for (guint i = 0; i < se->x->len; i++) {
      double v = g_array_index(se->y, double, i);
      if (!isfinite(v)) { pen = FALSE; continue; }
      double px = L + tl_axis_map(&xa, g_array_index(se->x, double, i), pw);
      double py = T + ph - tl_axis_map(ya, v, ph);
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
  }
  cairo_restore(cr);

  /* Markers: where the settings changed (dashed, labelled at the bottom inside the area). */
  for (guint m = 0; m < self->markers->len; m++) {
    const Marker *mk = &g_array_index(self->markers, Marker, m);
    if (mk->x < xa.lo || mk->x > xa.hi)
      continue;
    double px = L + tl_axis_map(&xa, mk->x, pw);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.55);
    cairo_set_line_width(cr, 1);
    cairo_set_dash(cr, (double[]){2, 2}, 2, 0);
    cairo_move_to(cr, px, T);
    cairo_line_to(cr, px, T + ph);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    if (mk->label) {
      double w = text_width(cr, mk->label);
      text_at(self, cr, px + 3 + w > L + pw ? px - 3 - w : px + 3, T + ph - 4, mk->label, FALSE, W, H);
    }
  }

  /* Hover: the points nearest the pointer's x, their values in a box beside the pointer. */
  g_clear_pointer(&self->hover_text, g_free);
  if (self->hovering && self->pointer[0] >= L && self->pointer[0] <= L + pw && self->pointer[1] >= T &&
      self->pointer[1] <= T + ph) {
    double xv = xa.lo + (self->pointer[0] - L) / pw * (xa.hi - xa.lo);
    GString *lines = g_string_new(NULL);
    double best_x = NAN;
    for (guint s = 0; s < self->series->len; s++) {
      Series *se = self->series->pdata[s];
      guint bi = G_MAXUINT;
      for (guint i = 0; i < se->x->len; i++)
        if (isfinite(g_array_index(se->y, double, i)) &&
            (bi == G_MAXUINT || fabs(g_array_index(se->x, double, i) - xv) < fabs(g_array_index(se->x, double, bi) - xv)))
          bi = i;
      if (bi == G_MAXUINT)
        continue;
      if (isnan(best_x)) best_x = g_array_index(se->x, double, bi);
      char v[32];
      tl_axis_format_value(g_array_index(se->y, double, bi), v, sizeof v);
      g_string_append_printf(lines, "\n%s = %s", se->name, v);
    }
    if (!isnan(best_x)) {
      char xs[32];
      tl_axis_format_value(best_x, xs, sizeof xs);
      g_string_prepend(lines, xs);
      g_string_prepend(lines, " = ");
      g_string_prepend(lines, self->x_label);
      self->hover_text = g_strdup(lines->str);
      double px = L + tl_axis_map(&xa, best_x, pw);
      cairo_set_source_rgba(cr, 1, 1, 1, 0.5);
      cairo_move_to(cr, floor(px) + 0.5, T);
      cairo_line_to(cr, floor(px) + 0.5, T + ph);
      cairo_stroke(cr);
      g_auto(GStrv) rows = g_strsplit(lines->str, "\n", -1);
      double bw = 0, bh = g_strv_length(rows) * line_h + 6;
      for (guint i = 0; rows[i]; i++) bw = MAX(bw, text_width(cr, rows[i]));
      bw += 10;
      double bx = self->pointer[0] + 12, by = self->pointer[1] + 12;
      if (bx + bw > W) bx = self->pointer[0] - 12 - bw;
      if (by + bh > H) by = H - bh;
      bx = MAX(bx, 0);
      by = MAX(by, 0);
      cairo_set_source_rgba(cr, 0.05, 0.05, 0.06, 0.9);
      cairo_rectangle(cr, bx, by, bw, bh);
      cairo_fill(cr);
      cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
      for (guint i = 0; rows[i]; i++)
        text_at(self, cr, bx + 5, by + 3 + line_h * (i + 1) - 3, rows[i], FALSE, W, H);
    }
    g_string_free(lines, TRUE);
  }
  for (guint k = 0; k < n_scales; k++)
    g_string_free(scales[k].title, TRUE);
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

void tl_plot_set_axis_title(TlPlot *self, guint series, const char *title) {
  g_return_if_fail(series < self->series->len);
  Series *s = self->series->pdata[series];
  g_free(s->axis_title);
  s->axis_title = g_strdup(title);
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
  g_free(self->hover_text);
  g_ptr_array_unref(self->drawn);
  G_OBJECT_CLASS(tl_plot_parent_class)->finalize(object);
}

static void tl_plot_class_init(TlPlotClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = tl_plot_finalize;
  GTK_WIDGET_CLASS(klass)->snapshot = tl_plot_snapshot;
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "tl-plot");
}

static void on_motion(GtkEventControllerMotion *m, double x, double y, TlPlot *self) {
  self->hovering = TRUE;
  self->pointer[0] = x;
  self->pointer[1] = y;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_leave(GtkEventControllerMotion *m, TlPlot *self) {
  self->hovering = FALSE;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_plot_hover(TlPlot *self, double x, double y) {
  self->hovering = isfinite(x) && isfinite(y);
  self->pointer[0] = x;
  self->pointer[1] = y;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

const char *tl_plot_get_hover_text(TlPlot *self) { return self->hover_text; }
const GPtrArray *tl_plot_get_drawn_text(TlPlot *self) { return self->drawn; }
guint tl_plot_get_clipped(TlPlot *self) { return self->clipped; }
guint tl_plot_get_tick_count(TlPlot *self, guint axis) { return axis < 3 ? self->n_ticks[axis] : 0; }
graphene_rect_t tl_plot_get_plot_area(TlPlot *self) { return self->plot_area; }

static void tl_plot_init(TlPlot *self) {
  self->series = g_ptr_array_new_with_free_func(series_free);
  self->markers = g_array_new(FALSE, FALSE, sizeof(Marker));
  g_array_set_clear_func(self->markers, marker_clear);
  self->drawn = g_ptr_array_new_with_free_func(g_free);
  gtk_widget_set_size_request(GTK_WIDGET(self), 200, 120);
  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "enter", G_CALLBACK(on_motion), self);
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
  g_signal_connect(motion, "leave", G_CALLBACK(on_leave), self);
  gtk_widget_add_controller(GTK_WIDGET(self), motion);
  gtk_widget_set_hexpand(GTK_WIDGET(self), TRUE);
}

GtkWidget *tl_plot_new(const char *title, const char *x_label) {
  TlPlot *self = g_object_new(TL_TYPE_PLOT, NULL);
  self->title = g_strdup(title);
  self->x_label = g_strdup(x_label);
  return GTK_WIDGET(self);
}

/* The race view switches its x axis between seconds and epochs. */
void tl_plot_set_x_label(TlPlot *self, const char *x_label) {
  g_free(self->x_label);
  self->x_label = g_strdup(x_label);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}
