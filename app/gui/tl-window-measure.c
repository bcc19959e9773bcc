/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's measuring and comparing (issue 16 items 2, 3): ROIs and their statistics after
 * every sub-iteration, the NEMA NU 2 analysis of a NEMA phantom with its contrast-recovery
 * vs noise curve (a series per run), CSV export, snapshots of runs and their comparison.
 * The statistics are computed on the runner's worker (tl_runner_set_analysis); the main
 * thread only files the numbers.
 *
 * Actions: win.roi-add (dddd: centre x, y, z mm, radius mm: a sphere), win.roi-add-circle
 * (ddddu: the same and the circle's normal axis 0-2), win.roi-clear, win.export-roi-csv (s),
 * win.export-nema-csv (s), win.nema-analysis (the NEMA analysis on any dataset, e.g. an image
 * of the phantom opened from a file), win.snapshot-keep (s: name; "" = "run N at K"),
 * win.snapshot-restart (s: a new run with the side panel's settings, started from the snapshot's
 * image), win.compare (ss); for the menu win.compare-last (the two snapshots kept last) and
 * win.snapshot-restart-last. */
#include <math.h>
#include <string.h>
#include "tl-window-private.h"

typedef struct {
  guint sub_iteration;
  guint run;
  guint roi;
  TlRoi def;
  TlRoiStats st;
} RoiRecord;

typedef struct {
  guint sub_iteration;
  guint run;
  TlNemaResult r;
} NemaRecord;

static void update_roi_label(TlWindow *self, const GArray *stats) {
  GString *s = g_string_new(NULL);
  if (!self->rois->len)
    g_string_append(s, "No ROI: Ctrl+drag on a view\n");
  for (guint i = 0; i < self->rois->len; i++) {
    g_autofree char *d = tl_roi_describe(&g_array_index(self->rois, TlRoi, i));
    const TlRoiStats *st = stats && i < stats->len ? &g_array_index(stats, TlRoiStats, i) : NULL;
    if (st && st->n)
      g_string_append_printf(s, "ROI %u: %s\n  mean %.4g, SD %.4g, %" G_GUINT64_FORMAT " voxels\n", i + 1, d,
                             st->mean, st->sd, st->n);
    else
      g_string_append_printf(s, "ROI %u: %s\n  %s\n", i + 1, d, st ? "no voxel inside the image" : "…");
  }
  if (self->has_nema) {
    const TlNemaResult *r = &self->nema_last;
    g_string_append(s, "NEMA NU 2: CR, N (background)\n");
    for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
      g_string_append_printf(s, "  %2.0f mm  CR %5.1f %%  N %4.1f %%\n", self->nema->diameter_mm[j],
                             100 * r->contrast_recovery[j], 100 * r->variability[j]);
    g_string_append_printf(s, "  lung residual %.1f %%", 100 * r->lung_residual);
  }
  gtk_label_set_text(self->roi_label, s->str);
  g_string_free(s, TRUE);
}

static void send_analysis(TlWindow *self) {
  for (int v = 0; v < TL_N_VIEWS; v++)
    tl_slice_view_set_rois(self->views[v], (const TlRoi *)self->rois->data, self->rois->len);
  if (self->runner)
    tl_runner_set_analysis(self->runner, (const TlRoi *)self->rois->data, self->rois->len, self->nema);
  update_roi_label(self, NULL);
}

/* The NEMA layout on the dataset's grid (the phantom at the scanner's centre, spheres 4:1). */
static gboolean nema_layout(TlWindow *self, GError **error) {
  g_clear_pointer(&self->nema, g_free);
  TlNemaOptions o;
  tl_nema_options_init(&o);
  self->nema = g_new(TlNemaLayout, 1);
  if (!tl_nema_layout_init(self->nema, &self->dataset->grid, &o, error)) {
    g_clear_pointer(&self->nema, g_free);
    return FALSE;
  }
  return TRUE;
}

/* A new dataset: simulated NEMA phantoms get their layout; snapshots of another grid go. */
void tl_window_measure_dataset(TlWindow *self) {
  g_clear_pointer(&self->nema, g_free);
  self->has_nema = FALSE;
  const TlDocument *d = self->dataset;
  if (d && d->truth && g_strcmp0(d->phantom, "nema") == 0) {
    g_autoptr(GError) error = NULL;
    if (!nema_layout(self, &error))
      g_debug("no NEMA analysis: %s", error->message);
  }
  tl_plot_clear(self->contrast_plot);
  g_array_set_size(self->roi_history, 0);
  g_array_set_size(self->nema_history, 0);
  for (guint i = self->snapshots->len; i-- > 0;) {
    TlSnapshot *s = self->snapshots->pdata[i];
    if (!d || !tl_image_grid_equal(&s->image->grid, &d->grid))
      g_ptr_array_remove_index(self->snapshots, i);
  }
  self->run_number = 0;
}

/* A new run: its own contrast-noise series; the analysis requests go to its runner. */
void tl_window_measure_run_started(TlWindow *self) {
  self->run_number++;
  /* snapshots asked of the previous run never come */
  g_queue_clear_full(self->snapshot_names, g_free);
  self->has_nema = FALSE;
  static const GdkRGBA colours[] = {{0.98, 0.6, 0.2, 1}, {0.35, 0.7, 1.0, 1}, {0.5, 0.9, 0.4, 1},
                                    {0.9, 0.4, 0.8, 1}, {0.9, 0.9, 0.3, 1}, {0.6, 0.6, 0.6, 1}};
  if (self->nema) {
    g_autofree char *name = g_strdup_printf("run %u: mean CR", self->run_number);
    self->contrast_series = tl_plot_add_series(self->contrast_plot, name,
                                               &colours[(self->run_number - 1) % G_N_ELEMENTS(colours)], FALSE);
    tl_plot_set_series_group(self->contrast_plot, self->contrast_series, 1);
    tl_plot_set_axis_title(self->contrast_plot, self->contrast_series, "mean contrast recovery (fraction)");
  }
  send_analysis(self);
}

void tl_window_measure_frame(TlWindow *self, const TlFrame *f) {
  if (f->roi_stats) {
    if (f->has_step)
      for (guint i = 0; i < f->roi_stats->len && i < self->rois->len; i++) {
        RoiRecord rec = {f->step.sub_iterations, self->run_number, i, g_array_index(self->rois, TlRoi, i),
                         g_array_index(f->roi_stats, TlRoiStats, i)};
        g_array_append_val(self->roi_history, rec);
      }
    g_array_set_size(self->roi_last, 0);
    g_array_append_vals(self->roi_last, f->roi_stats->data, f->roi_stats->len);
  }
  if (f->has_nema) {
    self->nema_last = f->nema;
    self->has_nema = TRUE;
    if (f->has_step) {
      NemaRecord rec = {f->step.sub_iterations, self->run_number, f->nema};
      g_array_append_val(self->nema_history, rec);
      if (self->contrast_series < tl_plot_n_series(self->contrast_plot))
        tl_plot_append(self->contrast_plot, self->contrast_series, f->nema.mean_variability, f->nema.mean_cr);
    }
  }
  if (f->roi_stats || f->has_nema)
    update_roi_label(self, self->roi_last);
  if (f->snapshot) {
    TlSnapshot *s = tl_snapshot_new(self->snapshot_names->length ? g_queue_peek_head(self->snapshot_names) : "snapshot",
                                    NULL);
    g_free(g_queue_pop_head(self->snapshot_names));
    /* The frame is ours until the handler returns: its volume moves, nothing is copied. */
    s->image = g_steal_pointer(&((TlFrame *)f)->snapshot);
    s->sub_iterations = self->sub_iterations;
    s->settings = g_strdup(self->run_settings);
    const double *x, *y;
    guint n = tl_plot_get_series(self->convergence, 0, &x, &y);
    g_array_append_vals(s->objective_x, x, n);
    g_array_append_vals(s->objective_y, y, n);
    if (tl_plot_n_series(self->convergence) > 1) {
      n = tl_plot_get_series(self->convergence, 1, &x, &y);
      g_array_append_vals(s->rmse_x, x, n);
      g_array_append_vals(s->rmse_y, y, n);
    }
    if (self->nema && self->contrast_series < tl_plot_n_series(self->contrast_plot)) {
      n = tl_plot_get_series(self->contrast_plot, self->contrast_series, &x, &y);
      g_array_append_vals(s->cr_x, x, n);
      g_array_append_vals(s->cr_y, y, n);
    }
    /* A name kept again replaces the older snapshot. */
    for (guint i = 0; i < self->snapshots->len; i++)
      if (g_str_equal(((TlSnapshot *)self->snapshots->pdata[i])->name, s->name)) {
        g_ptr_array_remove_index(self->snapshots, i);
        break;
      }
    g_ptr_array_add(self->snapshots, s);
    g_autofree char *text = g_strdup_printf("Kept \"%s\" (%u sub-iterations)", s->name, s->sub_iterations);
    tl_window_toast(self, text);
  }
}

TlSnapshot *tl_window_get_snapshot(TlWindow *self, const char *name) {
  for (guint i = 0; i < self->snapshots->len; i++)
    if (g_str_equal(((TlSnapshot *)self->snapshots->pdata[i])->name, name))
      return self->snapshots->pdata[i];
  return NULL;
}

guint tl_window_get_n_snapshots(TlWindow *self) { return self->snapshots->len; }

/* ---- Actions ---------------------------------------------------------------------- */

static void add_roi(TlWindow *self, const TlRoi *roi) {
  g_array_append_val(self->rois, *roi);
  send_analysis(self);
}

void tl_window_add_roi(TlWindow *self, const TlRoi *roi) { add_roi(self, roi); }

/* Drawn on a view (Ctrl+drag): a new ROI, or one moved or resized. */
static void on_view_roi(TlSliceView *view, int index, int kind, int axis, double x, double y, double z, double r,
                        TlWindow *self) {
  TlRoi roi = {kind == TL_ROI_CIRCLE ? TL_ROI_CIRCLE : TL_ROI_SPHERE, {x, y, z}, r, (guint)CLAMP(axis, 0, 2)};
  if (index >= 0 && (guint)index < self->rois->len)
    g_array_index(self->rois, TlRoi, index) = roi;
  else
    g_array_append_val(self->rois, roi);
  send_analysis(self);
}

static void act_roi_add(GSimpleAction *a, GVariant *p, gpointer data) {
  TlRoi roi = {TL_ROI_SPHERE, {0}, 0, 2};
  g_variant_get(p, "(dddd)", &roi.centre_mm[0], &roi.centre_mm[1], &roi.centre_mm[2], &roi.radius_mm);
  add_roi(data, &roi);
}

static void act_roi_add_circle(GSimpleAction *a, GVariant *p, gpointer data) {
  TlRoi roi = {TL_ROI_CIRCLE, {0}, 0, 2};
  g_variant_get(p, "(ddddu)", &roi.centre_mm[0], &roi.centre_mm[1], &roi.centre_mm[2], &roi.radius_mm, &roi.axis);
  roi.axis = MIN(roi.axis, 2);
  add_roi(data, &roi);
}

static void act_roi_clear(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  g_array_set_size(self->rois, 0);
  g_array_set_size(self->roi_last, 0);
  send_analysis(self);
}

static void write_csv(TlWindow *self, const char *path, GString *text) {
  g_autoptr(GError) error = NULL;
  if (!g_file_set_contents(path, text->str, text->len, &error))
    tl_window_show_error(self, "Export", error);
  else {
    g_autofree char *t = g_strdup_printf("Wrote %s", path);
    tl_window_toast(self, t);
  }
  g_string_free(text, TRUE);
}

/* One row per ROI and sub-iteration of the current dataset's runs. */
static void act_export_roi_csv(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  GString *s = g_string_new("run,sub-iteration,roi,kind,x_mm,y_mm,z_mm,radius_mm,axis,voxels,mean,sd\n");
  for (guint i = 0; i < self->roi_history->len; i++) {
    const RoiRecord *r = &g_array_index(self->roi_history, RoiRecord, i);
    g_string_append_printf(s, "%u,%u,%u,%s,%.9g,%.9g,%.9g,%.9g,%u,%" G_GUINT64_FORMAT ",%.9g,%.9g\n", r->run,
                           r->sub_iteration, r->roi + 1, r->def.kind == TL_ROI_SPHERE ? "sphere" : "circle",
                           r->def.centre_mm[0], r->def.centre_mm[1], r->def.centre_mm[2], r->def.radius_mm,
                           r->def.axis, r->st.n, r->st.mean, r->st.sd);
  }
  write_csv(self, g_variant_get_string(p, NULL), s);
}

static void act_export_nema_csv(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "run,sub-iteration,%s,mean CR,mean N\n", tl_nema_csv_header());
  for (guint i = 0; i < self->nema_history->len; i++) {
    const NemaRecord *r = &g_array_index(self->nema_history, NemaRecord, i);
    g_autofree char *row = tl_nema_csv_row(&r->r);
    g_string_append_printf(s, "%u,%u,%s,%.6g,%.6g\n", r->run, r->sub_iteration, row, r->r.mean_cr,
                           r->r.mean_variability);
  }
  write_csv(self, g_variant_get_string(p, NULL), s);
}

/* The NEMA analysis on any dataset (an image of the phantom opened from a file). */
static void act_nema_analysis(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  g_autoptr(GError) error = NULL;
  if (!self->dataset)
    return;
  if (!nema_layout(self, &error)) {
    tl_window_show_error(self, "NEMA analysis", error);
    return;
  }
  if (self->contrast_series >= tl_plot_n_series(self->contrast_plot) ||
      tl_plot_n_series(self->contrast_plot) == 0) {
    g_autofree char *name = g_strdup_printf("run %u: mean CR", self->run_number);
    self->contrast_series = tl_plot_add_series(self->contrast_plot, name, &(GdkRGBA){0.98, 0.6, 0.2, 1}, FALSE);
    tl_plot_set_axis_title(self->contrast_plot, self->contrast_series, "mean contrast recovery (fraction)");
  }
  send_analysis(self);
}

static void act_snapshot_keep(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (!self->runner)
    return;
  const char *name = g_variant_get_string(p, NULL);
  /* "" (the menu's Keep Snapshot): named after the run and its sub-iteration */
  g_autofree char *made = name[0] ? NULL : g_strdup_printf("run %u at %u", self->run_number,
                                                            self->sub_iterations);
  g_queue_push_tail(self->snapshot_names, g_strdup(name[0] ? name : made));
  tl_runner_snapshot(self->runner);
}

static void act_snapshot_restart(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  TlSnapshot *s = tl_window_get_snapshot(self, g_variant_get_string(p, NULL));
  if (!s) {
    g_autoptr(GError) e = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "No snapshot named \"%s\"",
                                      g_variant_get_string(p, NULL));
    tl_window_show_error(self, "Restart", e);
    return;
  }
  tl_window_start_run_from(self, s->image, FALSE);
}

static void act_compare(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  const char *na, *nb;
  g_variant_get(p, "(&s&s)", &na, &nb);
  TlSnapshot *sa = tl_window_get_snapshot(self, na), *sb = tl_window_get_snapshot(self, nb);
  g_autoptr(GError) error = NULL;
  if (!sa || !sb) {
    error = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "No snapshot named \"%s\"", sa ? nb : na);
    tl_window_show_error(self, "Compare", error);
    return;
  }
  if (!self->compare_window) {
    self->compare_window = GTK_WINDOW(gtk_window_new());
    gtk_window_set_transient_for(self->compare_window, GTK_WINDOW(self));
    gtk_window_set_destroy_with_parent(self->compare_window, TRUE);
    gtk_window_set_hide_on_close(self->compare_window, TRUE);
    gtk_window_set_default_size(self->compare_window, 900, 520);
    self->compare = TL_COMPARE_VIEW(tl_compare_view_new());
    gtk_window_set_child(self->compare_window, GTK_WIDGET(self->compare));
  }
  if (!tl_compare_view_set(self->compare, sa, sb, &error)) {
    tl_window_show_error(self, "Compare", error);
    return;
  }
  tl_compare_view_set_position(self->compare, self->pos);
  g_autofree char *title = g_strdup_printf("Compare %s and %s", na, nb);
  gtk_window_set_title(self->compare_window, title);
  gtk_window_present(self->compare_window);
}

/* The menu's doors to the named actions: the two snapshots kept last (older as A), the last
 * one to restart from. With fewer, a message says what to do first. */
static const char *last_snapshot(TlWindow *self, guint back) {
  guint n = self->snapshots->len;
  return n > back ? ((TlSnapshot *)self->snapshots->pdata[n - 1 - back])->name : NULL;
}

static void act_compare_last(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (!last_snapshot(self, 1)) {
    tl_window_toast(self, "Keep two snapshots first (Menu → Keep Snapshot)");
    return;
  }
  g_action_group_activate_action(G_ACTION_GROUP(self), "compare",
                                 g_variant_new("(ss)", last_snapshot(self, 1), last_snapshot(self, 0)));
}

static void act_snapshot_restart_last(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (!last_snapshot(self, 0)) {
    tl_window_toast(self, "Keep a snapshot first (Menu → Keep Snapshot)");
    return;
  }
  g_action_group_activate_action(G_ACTION_GROUP(self), "snapshot-restart",
                                 g_variant_new_string(last_snapshot(self, 0)));
}

TlCompareView *tl_window_get_compare_view(TlWindow *self) { return self->compare; }
TlPlot *tl_window_get_contrast_plot(TlWindow *self) { return self->contrast_plot; }

gboolean tl_window_get_roi_stats(TlWindow *self, guint i, TlRoiStats *out) {
  if (i >= self->roi_last->len || i >= self->rois->len)
    return FALSE;
  *out = g_array_index(self->roi_last, TlRoiStats, i);
  return TRUE;
}

gboolean tl_window_get_nema(TlWindow *self, TlNemaResult *out) {
  if (!self->has_nema)
    return FALSE;
  *out = self->nema_last;
  return TRUE;
}

const TlNemaLayout *tl_window_get_nema_layout(TlWindow *self) { return self->nema; }

static const GActionEntry kMeasureActions[] = {
  {"roi-add", act_roi_add, "(dddd)", NULL, NULL, {0}},
  {"roi-add-circle", act_roi_add_circle, "(ddddu)", NULL, NULL, {0}},
  {"roi-clear", act_roi_clear, NULL, NULL, NULL, {0}},
  {"export-roi-csv", act_export_roi_csv, "s", NULL, NULL, {0}},
  {"export-nema-csv", act_export_nema_csv, "s", NULL, NULL, {0}},
  {"nema-analysis", act_nema_analysis, NULL, NULL, NULL, {0}},
  {"snapshot-keep", act_snapshot_keep, "s", NULL, NULL, {0}},
  {"snapshot-restart", act_snapshot_restart, "s", NULL, NULL, {0}},
  {"compare", act_compare, "(ss)", NULL, NULL, {0}},
  {"compare-last", act_compare_last, NULL, NULL, NULL, {0}},
  {"snapshot-restart-last", act_snapshot_restart_last, NULL, NULL, NULL, {0}},
};

void tl_window_measure_init(TlWindow *self) {
  g_action_map_add_action_entries(G_ACTION_MAP(self), kMeasureActions, G_N_ELEMENTS(kMeasureActions), self);
  self->rois = g_array_new(FALSE, FALSE, sizeof(TlRoi));
  for (int v = 0; v < TL_N_VIEWS; v++)
    g_signal_connect(self->views[v], "roi", G_CALLBACK(on_view_roi), self);
  self->roi_last = g_array_new(FALSE, FALSE, sizeof(TlRoiStats));
  self->roi_history = g_array_new(FALSE, FALSE, sizeof(RoiRecord));
  self->nema_history = g_array_new(FALSE, FALSE, sizeof(NemaRecord));
  self->snapshots = g_ptr_array_new_with_free_func((GDestroyNotify)tl_snapshot_unref);
  self->snapshot_names = g_queue_new();
  self->contrast_plot = TL_PLOT(tl_plot_new("Contrast recovery vs noise (NEMA)", "background variability N (fraction)"));
  gtk_box_append(self->plot_box, GTK_WIDGET(self->contrast_plot));
  GtkWidget *scroll = gtk_scrolled_window_new();
  gtk_widget_set_size_request(scroll, 230, -1);
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  self->roi_label = GTK_LABEL(gtk_label_new(NULL));
  gtk_label_set_xalign(self->roi_label, 0);
  gtk_label_set_yalign(self->roi_label, 0);
  gtk_label_set_selectable(self->roi_label, TRUE);
  gtk_label_set_wrap(self->roi_label, TRUE);
  gtk_label_set_wrap_mode(self->roi_label, PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_margin_start(GTK_WIDGET(self->roi_label), 6);
  gtk_widget_set_margin_top(GTK_WIDGET(self->roi_label), 4);
  gtk_widget_add_css_class(GTK_WIDGET(self->roi_label), "tl-value");
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), GTK_WIDGET(self->roi_label));
  gtk_box_append(self->plot_box, scroll);
  update_roi_label(self, NULL);
}

void tl_window_measure_dispose(TlWindow *self) {
  if (self->compare_window)
    gtk_window_destroy(g_steal_pointer(&self->compare_window));
  self->compare = NULL;
  g_clear_pointer(&self->rois, g_array_unref);
  g_clear_pointer(&self->roi_last, g_array_unref);
  g_clear_pointer(&self->roi_history, g_array_unref);
  g_clear_pointer(&self->nema_history, g_array_unref);
  g_clear_pointer(&self->snapshots, g_ptr_array_unref);
  if (self->snapshot_names)
    g_queue_free_full(g_steal_pointer(&self->snapshot_names), g_free);
  g_clear_pointer(&self->nema, g_free);
  g_clear_pointer(&self->run_settings, g_free);
}
