/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Layout in ui/tl-profile-view.ui; the bar and the history strip are drawing areas. */
#include <math.h>
#include "tl-profile-view.h"
#include "tl-axis.h"

struct _TlProfileView {
  GtkBox parent_instance;
  GtkLabel *device_label, *rate_label;
  GtkDrawingArea *bar, *history_area;
  GtkGrid *table;
  GtkToggleButton *expand_button;
  GtkRevealer *revealer;
  TlProfile *last;
  GArray *history;   /* total GPU ms per sub-iteration */
  guint rows;        /* kernel rows in the table */
};

G_DEFINE_FINAL_TYPE(TlProfileView, tl_profile_view, GTK_TYPE_BOX)

/* Distinct colours for the kernels, in the order they appear. */
static void kernel_colour(guint i, double rgb[3]) {
  static const double kPalette[][3] = {{0.90, 0.38, 0.20}, {0.22, 0.56, 0.89}, {0.40, 0.75, 0.35},
                                       {0.85, 0.70, 0.15}, {0.62, 0.40, 0.80}, {0.30, 0.78, 0.78},
                                       {0.88, 0.40, 0.62}, {0.60, 0.60, 0.60}};
  for (int c = 0; c < 3; c++)
    rgb[c] = kPalette[i % G_N_ELEMENTS(kPalette)][c];
}

static void draw_bar(GtkDrawingArea *area, cairo_t *cr, int w, int h, gpointer data) {
  TlProfileView *self = data;
  double total = self->last ? tl_profile_total_ms(self->last) : 0;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.08);
  cairo_rectangle(cr, 0, 0, w, h);
  cairo_fill(cr);
  if (!(total > 0))
    return;
  double x = 0, rgb[3];
  for (guint i = 0; i < tl_profile_n_entries(self->last); i++) {
    const TlProfileEntry *e = tl_profile_entry(self->last, i);
    double dw = e->gpu_ms / total * w;
    kernel_colour(i, rgb);
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_rectangle(cr, x, 0, dw, h);
    cairo_fill(cr);
    x += dw;
  }
}

static void draw_history(GtkDrawingArea *area, cairo_t *cr, int w, int h, gpointer data) {
  TlProfileView *self = data;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.08);
  cairo_rectangle(cr, 0, 0, w, h);
  cairo_fill(cr);
  guint n = self->history->len;
  if (n == 0)
    return;
  double max = 0;
  for (guint i = 0; i < n; i++)
    max = MAX(max, g_array_index(self->history, double, i));
  /* The newest bars at the right; older ones scroll out when they no longer fit. */
  double bw = CLAMP((double)w / n, 2, 12);
  guint first = n > (guint)(w / bw) ? n - (guint)(w / bw) : 0;
  cairo_set_source_rgb(cr, 0.22, 0.56, 0.89);
  for (guint i = first; i < n; i++) {
    double v = g_array_index(self->history, double, i) / (max > 0 ? max : 1) * (h - 2);
    cairo_rectangle(cr, (i - first) * bw, h - v, MAX(bw - 1, 1), v);
  }
  cairo_fill(cr);
  /* the scale: a line at the highest nice tick (tl-axis), labelled in ms */
  TlAxis axis;
  tl_axis_make(&axis, 0, max > 0 ? max : 1, 3, FALSE);
  double top = axis.ticks[axis.n - 1], y = h - top / (max > 0 ? max : 1) * (h - 2);
  cairo_set_source_rgba(cr, 1, 1, 1, 0.35);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, 0, floor(y) + 0.5);
  cairo_line_to(cr, w, floor(y) + 0.5);
  cairo_stroke(cr);
  char value[32], text[48];
  tl_axis_format_value(top, value, sizeof value);
  g_snprintf(text, sizeof text, "%s ms GPU per sub-iteration", value);
  cairo_set_font_size(cr, 10);
  cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
  cairo_move_to(cr, 4, MAX(floor(y) + 11, 11));
  cairo_show_text(cr, text);
}

static GtkWidget *cell(const char *text, float xalign, gboolean numeric) {
  GtkWidget *l = gtk_label_new(text);
  gtk_label_set_xalign(GTK_LABEL(l), xalign);
  if (numeric)
    gtk_widget_add_css_class(l, "tl-value");
  return l;
}

/* The kernels rarely change between sub-iterations: when the rows match, only the
 * numbers are updated (rebuilding ~40 labels per frame costs the main thread). */
static gboolean update_table(TlProfileView *self) {
  guint n = self->last ? tl_profile_n_entries(self->last) : 0;
  if (n == 0 || self->rows != n)
    return FALSE;
  for (guint i = 0; i < n; i++) {
    GtkWidget *label = gtk_grid_get_child_at(self->table, 1, i + 1);
    if (!label || g_strcmp0(gtk_label_get_text(GTK_LABEL(label)), tl_profile_entry(self->last, i)->label))
      return FALSE;
  }
  double total = tl_profile_total_ms(self->last);
  char text[64];
  for (guint i = 0; i < n; i++) {
    const TlProfileEntry *e = tl_profile_entry(self->last, i);
    g_snprintf(text, sizeof text, "%u", e->calls);
    gtk_label_set_text(GTK_LABEL(gtk_grid_get_child_at(self->table, 2, i + 1)), text);
    g_snprintf(text, sizeof text, "%.3f", e->gpu_ms);
    gtk_label_set_text(GTK_LABEL(gtk_grid_get_child_at(self->table, 3, i + 1)), text);
    g_snprintf(text, sizeof text, "%.1f %%", total > 0 ? 100 * e->gpu_ms / total : 0);
    gtk_label_set_text(GTK_LABEL(gtk_grid_get_child_at(self->table, 4, i + 1)), text);
  }
  g_snprintf(text, sizeof text, "%.3f", total);
  gtk_label_set_text(GTK_LABEL(gtk_grid_get_child_at(self->table, 3, n + 1)), text);
  return TRUE;
}

static void fill_table(TlProfileView *self) {
  if (update_table(self))
    return;
  self->rows = self->last ? tl_profile_n_entries(self->last) : 0;
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->table))))
    gtk_grid_remove(self->table, child);
  const char *heads[] = {"", "Kernel", "Calls", "GPU ms", "Share"};
  for (int c = 0; c < 5; c++) {
    GtkWidget *h = cell(heads[c], c < 2 ? 0 : 1, FALSE);
    gtk_widget_add_css_class(h, "dim-label");
    gtk_grid_attach(self->table, h, c, 0, 1, 1);
  }
  if (!self->last)
    return;
  double total = tl_profile_total_ms(self->last);
  for (guint i = 0; i < tl_profile_n_entries(self->last); i++) {
    const TlProfileEntry *e = tl_profile_entry(self->last, i);
    double rgb[3];
    kernel_colour(i, rgb);
    g_autofree char *swatch = g_strdup_printf("<span foreground=\"#%02x%02x%02x\">■</span>",
        (int)(rgb[0] * 255), (int)(rgb[1] * 255), (int)(rgb[2] * 255));
    GtkWidget *sw = gtk_label_new(NULL);
    gtk_label_set_markup(GTK_LABEL(sw), swatch);
    g_autofree char *calls = g_strdup_printf("%u", e->calls);
    g_autofree char *ms = g_strdup_printf("%.3f", e->gpu_ms);
    g_autofree char *share = g_strdup_printf("%.1f %%", total > 0 ? 100 * e->gpu_ms / total : 0);
    gtk_grid_attach(self->table, sw, 0, i + 1, 1, 1);
    gtk_grid_attach(self->table, cell(e->label, 0, FALSE), 1, i + 1, 1, 1);
    gtk_grid_attach(self->table, cell(calls, 1, TRUE), 2, i + 1, 1, 1);
    gtk_grid_attach(self->table, cell(ms, 1, TRUE), 3, i + 1, 1, 1);
    gtk_grid_attach(self->table, cell(share, 1, TRUE), 4, i + 1, 1, 1);
  }
  g_autofree char *tot = g_strdup_printf("%.3f", total);
  gtk_grid_attach(self->table, cell("total", 0, FALSE), 1, tl_profile_n_entries(self->last) + 1, 1, 1);
  gtk_grid_attach(self->table, cell(tot, 1, TRUE), 3, tl_profile_n_entries(self->last) + 1, 1, 1);
}

void tl_profile_view_set_device(TlProfileView *self, const char *name) {
  gtk_label_set_text(self->device_label, name);
}

void tl_profile_view_add(TlProfileView *self, const TlProfile *profile, double seconds, double events) {
  g_clear_pointer(&self->last, tl_profile_free);
  self->last = tl_profile_new();
  tl_profile_merge(self->last, profile);
  double total = tl_profile_total_ms(profile);
  g_array_append_val(self->history, total);
  g_autofree char *rate = g_strdup_printf("%.3g events/s · %.1f ms GPU · %.2f s wall",
                                          seconds > 0 ? events / seconds : 0, total, seconds);
  gtk_label_set_text(self->rate_label, rate);
  fill_table(self);
  gtk_widget_queue_draw(GTK_WIDGET(self->bar));
  gtk_widget_queue_draw(GTK_WIDGET(self->history_area));
}

void tl_profile_view_clear(TlProfileView *self) {
  g_clear_pointer(&self->last, tl_profile_free);
  g_array_set_size(self->history, 0);
  gtk_label_set_text(self->rate_label, "No sub-iteration yet");
  fill_table(self);
  gtk_widget_queue_draw(GTK_WIDGET(self->bar));
  gtk_widget_queue_draw(GTK_WIDGET(self->history_area));
}

const TlProfile *tl_profile_view_get_profile(TlProfileView *self) { return self->last; }
guint tl_profile_view_get_history_length(TlProfileView *self) { return self->history->len; }

static void tl_profile_view_finalize(GObject *object) {
  TlProfileView *self = TL_PROFILE_VIEW(object);
  g_clear_pointer(&self->last, tl_profile_free);
  g_array_unref(self->history);
  G_OBJECT_CLASS(tl_profile_view_parent_class)->finalize(object);
}

static void tl_profile_view_dispose(GObject *object) {
  gtk_widget_dispose_template(GTK_WIDGET(object), TL_TYPE_PROFILE_VIEW);
  G_OBJECT_CLASS(tl_profile_view_parent_class)->dispose(object);
}

static void tl_profile_view_class_init(TlProfileViewClass *klass) {
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
  G_OBJECT_CLASS(klass)->finalize = tl_profile_view_finalize;
  G_OBJECT_CLASS(klass)->dispose = tl_profile_view_dispose;
  gtk_widget_class_set_template_from_resource(wc, "/org/tomolab/Tomolab/ui/tl-profile-view.ui");
  gtk_widget_class_bind_template_child(wc, TlProfileView, device_label);
  gtk_widget_class_bind_template_child(wc, TlProfileView, rate_label);
  gtk_widget_class_bind_template_child(wc, TlProfileView, bar);
  gtk_widget_class_bind_template_child(wc, TlProfileView, history_area);
  gtk_widget_class_bind_template_child(wc, TlProfileView, table);
  gtk_widget_class_bind_template_child(wc, TlProfileView, expand_button);
  gtk_widget_class_bind_template_child(wc, TlProfileView, revealer);
}

static void on_expand(GtkToggleButton *button, TlProfileView *self) {
  gboolean on = gtk_toggle_button_get_active(button);
  gtk_revealer_set_reveal_child(self->revealer, on);
  gtk_button_set_icon_name(GTK_BUTTON(button), on ? "pan-down-symbolic" : "pan-end-symbolic");
}

void tl_profile_view_set_expanded(TlProfileView *self, gboolean expanded) {
  gtk_toggle_button_set_active(self->expand_button, expanded);
}

gboolean tl_profile_view_get_expanded(TlProfileView *self) {
  return gtk_toggle_button_get_active(self->expand_button);
}

static void tl_profile_view_init(TlProfileView *self) {
  self->history = g_array_new(FALSE, FALSE, sizeof(double));
  gtk_widget_init_template(GTK_WIDGET(self));
  gtk_drawing_area_set_draw_func(self->bar, draw_bar, self, NULL);
  gtk_drawing_area_set_draw_func(self->history_area, draw_history, self, NULL);
  g_signal_connect(self->expand_button, "toggled", G_CALLBACK(on_expand), self);
  fill_table(self);
}
