/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Race window (tl-race-view.h). The rows make a race description with the run layer's keys
 * (tl_race_spec_set: the keys `tomolab-cli race` and `tomolab --race` read), never options of
 * its own; the race job runs it on a runner of this window's, and each frame redraws from the
 * job's board (tl-race-job.h). */
#include <math.h>
#include <string.h>
#include "tl-race-view.h"
#include "tl-race-job.h"
#include "tl-colormap.h"
#include "tl-screenshot.h"
#include "tl-window-private.h"
#include "tl-registry.h"
#include "recon/tl-race.h"

typedef struct {
  TlWindow *win;               /* the owner (the view is freed when it is destroyed) */
  GtkWindow *window;
  GPtrArray *algos;            /* the registry's PET algorithms (const char *) */
  GtkCheckButton *use[TL_RACE_VIEW_ROWS];
  GtkDropDown *algo[TL_RACE_VIEW_ROWS];
  GtkEntry *settings[TL_RACE_VIEW_ROWS];
  GtkEntry *ref_algo;
  GtkSpinButton *ref_updates, *updates;
  GtkCheckButton *until_target;
  GtkWidget *start, *cancel, *export_csv, *export_png;
  GtkProgressBar *progress;
  GtkLabel *status, *winner;
  GtkDropDown *xaxis, *metric;
  TlPlot *plots[2];
  GtkPicture *pictures[TL_RACE_VIEW_ROWS];
  GtkLabel *captions[TL_RACE_VIEW_ROWS];
  TlRunner *runner;
  TlRaceBoard *board;
  TlRunState state;
  guint rounds, total, shown_serial;
  guint n_values_listed;       /* metric choices listed for the current board */
  char *error_text;
  char *winner_text;
  guint timer;
  guint starts;                /* races started (tests) */
} RaceView;

static const GdkRGBA kColours[TL_RACE_VIEW_ROWS] = {
    {0.96, 0.55, 0.15, 1}, {0.20, 0.55, 0.95, 1}, {0.30, 0.75, 0.35, 1}, {0.75, 0.40, 0.90, 1}};

static RaceView *view_of(GtkWindow *w) { return g_object_get_data(G_OBJECT(w), "tl-race-view"); }

static gboolean running(RaceView *rv) {
  return rv->runner && (rv->state == TL_RUN_PREPARING || rv->state == TL_RUN_RUNNING);
}

static void set_status(RaceView *rv, const char *text) {
  gtk_label_set_text(rv->status, text);
}

static void update_buttons(RaceView *rv) {
  gboolean busy = running(rv);
  gtk_widget_set_sensitive(rv->start, !busy);
  gtk_widget_set_sensitive(rv->cancel, busy);
  gboolean have = rv->board && tl_race_board_n_entrants(rv->board) > 0;
  gtk_widget_set_sensitive(rv->export_csv, have);
  gtk_widget_set_sensitive(rv->export_png, have);
}

/* ---- drawing from the board ---- */

static gboolean x_epochs(RaceView *rv) { return gtk_drop_down_get_selected(rv->xaxis) == 1; }

static void fill_metric_choices(RaceView *rv) {
  guint nv = tl_race_board_n_values(rv->board);
  if (nv == rv->n_values_listed) return;
  g_autoptr(GtkStringList) names = gtk_string_list_new(NULL);
  for (guint v = 0; v < nv; v++) {
    g_autofree char *n = tl_race_board_value_name(rv->board, v);
    gtk_string_list_append(names, n);
  }
  rv->n_values_listed = nv; /* first: the new model's notify::selected redraws */
  gtk_drop_down_set_model(rv->metric, G_LIST_MODEL(names));
  gtk_drop_down_set_selected(rv->metric, 0);
}

/* The PETRIC threshold of metric v (tl-metrics.h), in percent. */
static double threshold(guint v) {
  return 100 * (v == 0 ? TL_METRICS_RMSE_TARGET
                : v == 1 ? TL_METRICS_BACKGROUND_TARGET
                         : TL_METRICS_VOI_TARGET);
}

static void redraw_plots(RaceView *rv) {
  if (!rv->board) return;
  fill_metric_choices(rv);
  gboolean ep = x_epochs(rv);
  const char *xl = ep ? "epochs (data passes)" : "wall-clock seconds (each entrant's own)";
  guint n = tl_race_board_n_entrants(rv->board), nv = tl_race_board_n_values(rv->board);
  guint mv = MIN(gtk_drop_down_get_selected(rv->metric), nv ? nv - 1 : 0);
  double ref = tl_race_board_reference_objective(rv->board);
  g_autofree char *mname = nv ? tl_race_board_value_name(rv->board, mv) : g_strdup("metric");
  for (guint p = 0; p < 2; p++) tl_plot_clear(rv->plots[p]);
  double xmax = 0;
  for (guint i = 0; i < n; i++) {
    g_autofree TlRaceBoardRecord *rec = NULL;
    g_autofree double *val = NULL;
    guint m = tl_race_board_records(rv->board, i, &rec, &val);
    g_autofree char *label = tl_race_board_label(rv->board, i);
    g_autofree double *x = g_new(double, MAX(m, 1)), *gap = g_new(double, MAX(m, 1)),
                      *metric = g_new(double, MAX(m, 1));
    for (guint k = 0; k < m; k++) {
      x[k] = ep ? rec[k].epoch : rec[k].seconds;
      /* the objectives are maximised: the gap to the converged reference, relative, log10 */
      double g = fabs(ref - rec[k].objective) / fabs(ref);
      gap[k] = isfinite(g) && g > 0 ? log10(g) : NAN;
      /* log10 of the percentage: a diverging entrant leaves the others readable */
      double pc = nv ? 100 * val[(gsize)k * nv + mv] : NAN;
      metric[k] = pc > 0 ? log10(pc) : NAN;
      xmax = MAX(xmax, x[k]);
    }
    for (guint p = 0; p < 2; p++) {
      guint s = tl_plot_add_series(rv->plots[p], label, &kColours[i % TL_RACE_VIEW_ROWS], FALSE);
      tl_plot_set_series(rv->plots[p], s, x, p == 0 ? gap : metric, m);
      tl_plot_set_series_group(rv->plots[p], s, 1);
    }
  }
  if (n) {
    tl_plot_set_axis_title(rv->plots[0], 0, "log10 |Φref − Φ| / |Φref|");
    g_autofree char *mt = g_strdup_printf("log10 %s (%% of the reference's background mean)", mname);
    /* the PETRIC threshold as a dashed line across the run */
    guint s = tl_plot_add_series(rv->plots[1], "target", &(GdkRGBA){0.6, 0.6, 0.6, 1}, TRUE);
    double tx[2] = {0, xmax > 0 ? xmax : 1}, ty[2] = {log10(threshold(mv)), log10(threshold(mv))};
    tl_plot_set_series(rv->plots[1], s, tx, ty, 2);
    tl_plot_set_series_group(rv->plots[1], s, 1);
    tl_plot_set_axis_title(rv->plots[1], 0, mt);
  }
  for (guint p = 0; p < 2; p++) tl_plot_set_x_label(rv->plots[p], xl);
}

static void redraw_images(RaceView *rv) {
  guint n = tl_race_board_n_entrants(rv->board);
  float *slices[TL_RACE_VIEW_ROWS] = {0};
  guint w[TL_RACE_VIEW_ROWS] = {0}, h[TL_RACE_VIEW_ROWS] = {0};
  float hi = 0;
  for (guint i = 0; i < MIN(n, TL_RACE_VIEW_ROWS); i++) {
    slices[i] = tl_race_board_slice(rv->board, i, &w[i], &h[i]);
    for (gsize k = 0; slices[i] && k < (gsize)w[i] * h[i]; k++)
      if (isfinite(slices[i][k])) hi = MAX(hi, slices[i][k]);
  }
  const guint32 *lut = tl_colormap_lut(TL_COLORMAP_HOT_METAL);
  for (guint i = 0; i < TL_RACE_VIEW_ROWS; i++) {
    gtk_widget_set_visible(GTK_WIDGET(rv->pictures[i]), i < n);
    gtk_widget_set_visible(GTK_WIDGET(rv->captions[i]), i < n);
    if (i >= n) continue;
    g_autofree char *label = tl_race_board_label(rv->board, i);
    double ep, t = tl_race_board_time_to_target(rv->board, i, &ep);
    g_autofree char *cap = isnan(t) ? g_strdup_printf("%s\ntarget not reached", label)
                                    : g_strdup_printf("%s\ntarget in %.2f s (epoch %.2f)",
                                                      label, t, ep);
    gtk_label_set_text(rv->captions[i], cap);
    if (!slices[i]) continue;
    /* one window for all: the same activity looks the same in every image */
    gsize np = (gsize)w[i] * h[i];
    guint32 *px = g_new(guint32, np);
    for (gsize k = 0; k < np; k++) px[k] = lut[tl_colormap_index(slices[i][k], 0, hi)];
    g_autoptr(GBytes) bytes = g_bytes_new_take(px, np * 4);
    g_autoptr(GdkTexture) tex = gdk_memory_texture_new((int)w[i], (int)h[i],
                                                       GDK_MEMORY_DEFAULT, bytes, w[i] * 4);
    gtk_picture_set_paintable(rv->pictures[i], GDK_PAINTABLE(tex));
    g_free(slices[i]);
  }
}

static void redraw_winner(RaceView *rv) {
  guint n = tl_race_board_n_entrants(rv->board), best = G_MAXUINT;
  double tbest = INFINITY, ebest = NAN;
  for (guint i = 0; i < n; i++) {
    double ep, t = tl_race_board_time_to_target(rv->board, i, &ep);
    if (!isnan(t) && t < tbest) tbest = t, ebest = ep, best = i;
  }
  g_free(rv->winner_text);
  if (best == G_MAXUINT) {
    rv->winner_text = g_strdup("No entrant has reached the PETRIC target yet (RMSE ≤ 1 %, "
                               "background RMSE ≤ 1 %, every VOI ≤ 0.5 %, 10 updates in a row)");
  } else {
    g_autofree char *label = tl_race_board_label(rv->board, best);
    rv->winner_text = g_strdup_printf("Winner: %s, at the PETRIC target after %.2f s of its own "
                                      "(epoch %.2f)", label, tbest, ebest);
  }
  gtk_label_set_text(rv->winner, rv->winner_text);
}

static void redraw(RaceView *rv) {
  if (!rv->board) return;
  rv->shown_serial = tl_race_board_serial(rv->board);
  redraw_plots(rv);
  redraw_images(rv);
  redraw_winner(rv);
  update_buttons(rv);
}

/* ---- the run ---- */

typedef struct {
  TlRaceSpec *spec;
  TlDocument *doc;
  TlRaceBoard *board;
} Factory;

static void factory_free(gpointer p) {
  Factory *f = p;
  tl_race_spec_free(f->spec);
  tl_document_unref(f->doc);
  tl_race_board_unref(f->board);
  g_free(f);
}

static TlJob *factory(TlContext *ctx, gpointer data, GError **error) {
  Factory *f = data;
  return tl_race_job_new(ctx, f->spec, f->doc->ds, f->board, error);
}

static void on_frame(TlFrame *f, gpointer data) {
  RaceView *rv = data;
  rv->state = f->state;
  if (f->has_step) rv->rounds = f->step.sub_iterations;
  if (f->error) {
    g_free(rv->error_text);
    rv->error_text = g_strdup(f->error->message);
    set_status(rv, f->error->message);
  } else if (f->state == TL_RUN_FINISHED) {
    set_status(rv, "The race is over.");
  } else if (f->state == TL_RUN_STOPPED) {
    set_status(rv, "The race was cancelled; the updates made are kept.");
  } else if (f->has_step) {
    g_autofree char *t = g_strdup_printf("Round %u of %u%s%s", rv->rounds, rv->total,
                                         f->step.note ? ": " : "",
                                         f->step.note ? f->step.note : "");
    set_status(rv, t);
  }
  if (rv->board && tl_race_board_serial(rv->board) != rv->shown_serial) redraw(rv);
  update_buttons(rv);
}

static gboolean tick(gpointer data) {
  RaceView *rv = data;
  if (!rv->runner) return G_SOURCE_CONTINUE;
  TlProgressReport r;
  char what[128];
  if (rv->state == TL_RUN_PREPARING && tl_runner_get_progress(rv->runner, &r, what, sizeof what)) {
    g_autofree char *t = tl_progress_format(&r);
    gtk_progress_bar_set_text(rv->progress, t);
    if (r.fraction >= 0) gtk_progress_bar_set_fraction(rv->progress, r.fraction);
    else gtk_progress_bar_pulse(rv->progress);
  } else if (rv->state == TL_RUN_PREPARING) {
    gtk_progress_bar_set_text(rv->progress, "Making the reference and the entrants…");
    gtk_progress_bar_pulse(rv->progress);
  } else {
    g_autofree char *t = g_strdup_printf("%u / %u rounds", rv->rounds, rv->total);
    gtk_progress_bar_set_text(rv->progress, t);
    gtk_progress_bar_set_fraction(rv->progress, rv->total ? (double)rv->rounds / rv->total : 0);
  }
  return G_SOURCE_CONTINUE;
}

TlRaceSpec *tl_race_view_spec(GtkWindow *w, GError **error) {
  RaceView *rv = view_of(w);
  g_autoptr(TlRaceSpec) spec = tl_race_spec_new();
  g_autoptr(GPtrArray) entrants = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < TL_RACE_VIEW_ROWS; i++) {
    if (!gtk_check_button_get_active(rv->use[i])) continue;
    guint a = gtk_drop_down_get_selected(rv->algo[i]);
    const char *name = a < rv->algos->len ? rv->algos->pdata[a] : "mlem";
    g_autofree char *set = g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(rv->settings[i]))));
    if (strchr(set, ';')) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                  "Entrant %u: settings '%s': expected KEY=VALUE pairs separated by commas", i + 1,
                  set);
      return NULL;
    }
    g_ptr_array_add(entrants, *set ? g_strdup_printf("%s:%s", name, set) : g_strdup(name));
  }
  if (entrants->len < 2) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "%u entrants ticked: a race needs 2 to %d", entrants->len, TL_RACE_VIEW_ROWS);
    return NULL;
  }
  g_ptr_array_add(entrants, NULL);
  g_autofree char *algos = g_strjoinv("; ", (char **)entrants->pdata);
  g_autofree char *ref_updates = g_strdup_printf("%d", gtk_spin_button_get_value_as_int(rv->ref_updates));
  g_autofree char *updates = g_strdup_printf("%d", gtk_spin_button_get_value_as_int(rv->updates));
  /* the grid the window reconstructs on (a simulation's: its phantom's), centred as every
   * grid key is */
  const TlDocument *d = rv->win->dataset;
  g_autofree char *grid =
      d && d->ds && !tl_image_grid_equal(&d->grid, &d->ds->grid)
          ? g_strdup_printf("%ux%ux%u@%.9g,%.9g,%.9g", d->grid.dims[0], d->grid.dims[1],
                            d->grid.dims[2], d->grid.voxel_mm[0], d->grid.voxel_mm[1],
                            d->grid.voxel_mm[2])
          : g_strdup("");
  /* the side panel's randoms, as every run of the window takes them */
  TlPetJobOptions po = {0};
  tl_side_panel_get_options(rv->win->side_panel, &po);
  TlPetRandoms kind = po.randoms;
  tl_pet_job_options_clear(&po);
  if (kind != TL_PET_RANDOMS_OFF && kind != TL_PET_RANDOMS_DELAYEDS) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "a race takes randoms from the "
                "data's delayed events or none: choose one of them in the side panel");
    return NULL;
  }
  const char *randoms = kind == TL_PET_RANDOMS_DELAYEDS ? "delayeds" : "none";
  const char *keys[][2] = {
      {"randoms", randoms},
      {"algos", algos},
      {"reference-algo", gtk_editable_get_text(GTK_EDITABLE(rv->ref_algo))},
      {"reference-updates", ref_updates},
      {"updates", updates},
      {"until-target", gtk_check_button_get_active(rv->until_target) ? "true" : "false"},
      {"objective", "true"}, /* the gap is plotted */
      {"nema", rv->win->nema ? "true" : "false"},
      {"data", d && d->path ? d->path : ""},
      {"grid", grid},
  };
  for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
    if (!tl_race_spec_set(spec, keys[k][0], keys[k][1], error)) return NULL;
  if (!tl_race_spec_validate(spec, error)) return NULL;
  return g_steal_pointer(&spec);
}

static void start(RaceView *rv) {
  g_autoptr(GError) error = NULL;
  g_clear_pointer(&rv->error_text, g_free);
  TlDocument *d = rv->win->dataset;
  TlContext *ctx = tl_window_get_context(rv->win);
  if (!ctx || !d || !d->ds ||
      (d->ds->kind != TL_DATASET_PET_LISTMODE && d->ds->kind != TL_DATASET_PET_BINS)) {
    rv->error_text = g_strdup("A race needs PET data: simulate or open list mode or a sinogram "
                              "first");
    set_status(rv, rv->error_text);
    return;
  }
  TlRaceSpec *spec = tl_race_view_spec(rv->window, &error);
  if (!spec) {
    rv->error_text = g_strdup(error->message);
    set_status(rv, rv->error_text);
    return;
  }
  g_clear_pointer(&rv->runner, tl_runner_free);
  g_clear_pointer(&rv->board, tl_race_board_unref);
  rv->board = tl_race_board_new();
  rv->starts++;
  rv->rounds = 0;
  rv->total = spec->updates;
  rv->shown_serial = 0;
  rv->n_values_listed = G_MAXUINT;
  rv->state = TL_RUN_PREPARING;
  Factory *f = g_new0(Factory, 1);
  *f = (Factory){spec, tl_document_ref(d), tl_race_board_ref(rv->board)};
  TlViewRequest view = {{0, 0, 0}, FALSE};
  rv->runner = tl_runner_new(ctx, factory, f, factory_free, &view, spec->updates, TRUE, on_frame, rv);
  set_status(rv, "Making the reference and the entrants…");
  update_buttons(rv);
}

static void on_start(GtkButton *b, RaceView *rv) { start(rv); }
static void on_cancel(GtkButton *b, RaceView *rv) {
  if (rv->runner) tl_runner_stop(rv->runner);
}
static void on_axis(GObject *o, GParamSpec *p, RaceView *rv) { redraw_plots(rv); }

/* ---- exports ---- */

char *tl_race_view_csv(GtkWindow *w) {
  RaceView *rv = view_of(w);
  return rv->board ? tl_race_board_csv(rv->board) : NULL;
}

gboolean tl_race_view_save_csv(GtkWindow *w, const char *path, GError **error) {
  g_autofree char *csv = tl_race_view_csv(w);
  if (!csv) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "%s: no race run yet", path);
    return FALSE;
  }
  return g_file_set_contents(path, csv, -1, error);
}

/* The two plots side by side over the images in a row, as the window shows them. */
gboolean tl_race_view_save_png(GtkWindow *w, const char *path, GError **error) {
  RaceView *rv = view_of(w);
  if (!rv->board) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "%s: no race run yet", path);
    return FALSE;
  }
  const int pw = 640, ph = 400, im = 256, cap = 40;
  guint n = MIN(tl_race_board_n_entrants(rv->board), TL_RACE_VIEW_ROWS);
  int width = 2 * pw, height = ph + im + cap;
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  cairo_t *cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (guint p = 0; p < 2; p++) {
    cairo_save(cr);
    cairo_translate(cr, p * pw, 0);
    tl_plot_render(rv->plots[p], cr, pw, ph);
    cairo_restore(cr);
  }
  for (guint i = 0; i < n; i++) {
    double x0 = i * (width / (double)n) + (width / (double)n - im) / 2;
    GdkPaintable *paint = gtk_picture_get_paintable(rv->pictures[i]);
    if (GDK_IS_TEXTURE(paint)) {
      GdkTexture *t = GDK_TEXTURE(paint);
      int tw = gdk_texture_get_width(t), th = gdk_texture_get_height(t);
      cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, tw, th);
      cairo_surface_flush(img);
      gdk_texture_download(t, cairo_image_surface_get_data(img), cairo_image_surface_get_stride(img));
      cairo_surface_mark_dirty(img);
      cairo_save(cr);
      cairo_translate(cr, x0, ph);
      cairo_scale(cr, (double)im / tw, (double)im / th);
      cairo_set_source_surface(cr, img, 0, 0);
      cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
      cairo_paint(cr);
      cairo_restore(cr);
      cairo_surface_destroy(img);
    }
    g_autofree char *label = tl_race_board_label(rv->board, i);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 12);
    cairo_move_to(cr, x0, ph + im + 16);
    cairo_show_text(cr, label ? label : "");
  }
  cairo_destroy(cr);
  return tl_surface_save_png(s, path, error);
}

typedef gboolean (*SaveFunc)(GtkWindow *w, const char *path, GError **error);

static void chooser_response(GtkNativeDialog *d, int response, gpointer data) {
  RaceView *rv = g_object_get_data(G_OBJECT(d), "race-view");
  SaveFunc save = data;
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    g_autoptr(GError) error = NULL;
    if (path && !save(rv->window, path, &error)) set_status(rv, error->message);
    else if (path) {
      g_autofree char *t = g_strdup_printf("Saved %s", path);
      set_status(rv, t);
    }
  }
  g_object_unref(d);
}

/* GtkFileChooserNative: GTK 4.8 (Debian 12); the portal when sandboxed. */
static void choose(RaceView *rv, const char *title, const char *name, SaveFunc save) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new(title, rv->window,
                                                        GTK_FILE_CHOOSER_ACTION_SAVE, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), name);
  g_object_set_data(G_OBJECT(d), "race-view", rv);
  g_signal_connect(d, "response", G_CALLBACK(chooser_response), save);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static void on_export_csv(GtkButton *b, RaceView *rv) {
  choose(rv, "Export the Race as CSV", "race.csv", tl_race_view_save_csv);
}
static void on_export_png(GtkButton *b, RaceView *rv) {
  choose(rv, "Export the Race as PNG", "race.png", tl_race_view_save_png);
}

/* ---- construction ---- */

static GtkWidget *heading(const char *text) {
  GtkWidget *l = gtk_label_new(text);
  gtk_widget_add_css_class(l, "heading");
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  return l;
}

static GtkSpinButton *spin(double lo, double hi, double value) {
  GtkSpinButton *s = GTK_SPIN_BUTTON(gtk_spin_button_new_with_range(lo, hi, 1));
  gtk_spin_button_set_value(s, value);
  return s;
}

/* The starting rows: PETRIC's field (OSEM then BSREM, preconditioned SVRG, L-BFGS-B). */
static const char *const kDefaults[TL_RACE_VIEW_ROWS][3] = {
    {"1", "bsrem", "subsets=8,prior=rdp,beta=0.1,osem-epochs=1"},
    {"1", "svrg", "subsets=8,prior=rdp,beta=0.1,osem-epochs=1"},
    {"1", "lbfgsb", "prior=rdp,beta=0.1,osem-epochs=1"},
    {"0", "saga", "subsets=8,prior=rdp,beta=0.1,osem-epochs=1"},
};

static GtkWidget *settings_column(RaceView *rv) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_size_request(box, 380, -1);
  gtk_widget_set_margin_start(box, 12);
  gtk_widget_set_margin_end(box, 6);
  gtk_widget_set_margin_top(box, 12);
  gtk_widget_set_margin_bottom(box, 12);
  gtk_box_append(GTK_BOX(box), heading("Entrants (2 to 4, on the window's data)"));
  g_autoptr(GtkStringList) names = gtk_string_list_new(NULL);
  for (guint a = 0; a < rv->algos->len; a++) gtk_string_list_append(names, rv->algos->pdata[a]);
  for (guint i = 0; i < TL_RACE_VIEW_ROWS; i++) {
    GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    rv->use[i] = GTK_CHECK_BUTTON(gtk_check_button_new());
    gtk_check_button_set_active(rv->use[i], g_str_equal(kDefaults[i][0], "1"));
    rv->algo[i] = GTK_DROP_DOWN(gtk_drop_down_new(G_LIST_MODEL(g_object_ref(names)), NULL));
    rv->settings[i] = GTK_ENTRY(gtk_entry_new());
    gtk_widget_set_hexpand(GTK_WIDGET(rv->settings[i]), TRUE);
    gtk_widget_set_tooltip_text(GTK_WIDGET(rv->settings[i]),
                                "KEY=VALUE pairs, commas between: subsets, projector, prior, beta, "
                                "gamma, epsilon, relaxation, tof, binned, seed, osem-epochs");
    g_autoptr(GError) e = NULL;
    tl_race_view_set_entrant(rv->window, i, g_str_equal(kDefaults[i][0], "1"), kDefaults[i][1],
                             kDefaults[i][2], &e);
    gtk_box_append(GTK_BOX(row), GTK_WIDGET(rv->use[i]));
    gtk_box_append(GTK_BOX(row), GTK_WIDGET(rv->algo[i]));
    gtk_box_append(GTK_BOX(row), GTK_WIDGET(rv->settings[i]));
    gtk_box_append(GTK_BOX(box), row);
  }
  gtk_box_append(GTK_BOX(box), heading("Reference (the converged image)"));
  rv->ref_algo = GTK_ENTRY(gtk_entry_new());
  gtk_editable_set_text(GTK_EDITABLE(rv->ref_algo), "bsrem:subsets=8,prior=rdp,beta=0.1,osem-epochs=1");
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(rv->ref_algo));
  GtkWidget *grid = gtk_grid_new();
  gtk_grid_set_row_spacing(GTK_GRID(grid), 6);
  gtk_grid_set_column_spacing(GTK_GRID(grid), 6);
  rv->ref_updates = spin(1, 100000, 400);
  rv->updates = spin(1, 100000, 60);
  GtkWidget *l1 = gtk_label_new("Reference updates"), *l2 = gtk_label_new("Updates per entrant");
  gtk_label_set_xalign(GTK_LABEL(l1), 0);
  gtk_label_set_xalign(GTK_LABEL(l2), 0);
  gtk_grid_attach(GTK_GRID(grid), l1, 0, 0, 1, 1);
  gtk_grid_attach(GTK_GRID(grid), GTK_WIDGET(rv->ref_updates), 1, 0, 1, 1);
  gtk_grid_attach(GTK_GRID(grid), l2, 0, 1, 1, 1);
  gtk_grid_attach(GTK_GRID(grid), GTK_WIDGET(rv->updates), 1, 1, 1, 1);
  gtk_box_append(GTK_BOX(box), grid);
  rv->until_target = GTK_CHECK_BUTTON(gtk_check_button_new_with_label("An entrant at the target stops"));
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(rv->until_target));
  GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  rv->start = gtk_button_new_with_mnemonic("_Start the Race");
  gtk_widget_add_css_class(rv->start, "suggested-action");
  rv->cancel = gtk_button_new_with_mnemonic("_Cancel");
  g_signal_connect(rv->start, "clicked", G_CALLBACK(on_start), rv);
  g_signal_connect(rv->cancel, "clicked", G_CALLBACK(on_cancel), rv);
  gtk_box_append(GTK_BOX(buttons), rv->start);
  gtk_box_append(GTK_BOX(buttons), rv->cancel);
  gtk_box_append(GTK_BOX(box), buttons);
  rv->progress = GTK_PROGRESS_BAR(gtk_progress_bar_new());
  gtk_progress_bar_set_show_text(rv->progress, TRUE);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(rv->progress));
  rv->status = GTK_LABEL(gtk_label_new("Pick the entrants and start."));
  gtk_label_set_wrap(rv->status, TRUE);
  gtk_label_set_xalign(rv->status, 0);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(rv->status));
  GtkWidget *exports = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  rv->export_csv = gtk_button_new_with_mnemonic("Export C_SV…");
  rv->export_png = gtk_button_new_with_mnemonic("Export _PNG…");
  g_signal_connect(rv->export_csv, "clicked", G_CALLBACK(on_export_csv), rv);
  g_signal_connect(rv->export_png, "clicked", G_CALLBACK(on_export_png), rv);
  gtk_box_append(GTK_BOX(exports), rv->export_csv);
  gtk_box_append(GTK_BOX(exports), rv->export_png);
  gtk_box_append(GTK_BOX(box), exports);
  return box;
}

static GtkWidget *results_column(RaceView *rv) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_hexpand(box, TRUE);
  gtk_widget_set_margin_start(box, 6);
  gtk_widget_set_margin_end(box, 12);
  gtk_widget_set_margin_top(box, 12);
  gtk_widget_set_margin_bottom(box, 12);
  GtkWidget *bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_append(GTK_BOX(bar), gtk_label_new("Against"));
  rv->xaxis = GTK_DROP_DOWN(gtk_drop_down_new_from_strings(
      (const char *const[]){"wall-clock time", "epochs", NULL}));
  gtk_box_append(GTK_BOX(bar), GTK_WIDGET(rv->xaxis));
  gtk_box_append(GTK_BOX(bar), gtk_label_new("Metric"));
  rv->metric = GTK_DROP_DOWN(gtk_drop_down_new_from_strings(
      (const char *const[]){"RMSE", "background RMSE", NULL}));
  gtk_box_append(GTK_BOX(bar), GTK_WIDGET(rv->metric));
  g_signal_connect(rv->xaxis, "notify::selected", G_CALLBACK(on_axis), rv);
  g_signal_connect(rv->metric, "notify::selected", G_CALLBACK(on_axis), rv);
  gtk_box_append(GTK_BOX(box), bar);
  GtkWidget *plots = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_set_homogeneous(GTK_BOX(plots), TRUE);
  rv->plots[0] = TL_PLOT(tl_plot_new("Objective gap to the reference", "wall-clock seconds"));
  rv->plots[1] = TL_PLOT(tl_plot_new("PETRIC metric", "wall-clock seconds"));
  for (guint p = 0; p < 2; p++) {
    gtk_widget_set_vexpand(GTK_WIDGET(rv->plots[p]), TRUE);
    gtk_widget_set_size_request(GTK_WIDGET(rv->plots[p]), 380, 300);
    gtk_box_append(GTK_BOX(plots), GTK_WIDGET(rv->plots[p]));
  }
  gtk_box_append(GTK_BOX(box), plots);
  rv->winner = GTK_LABEL(gtk_label_new(""));
  gtk_widget_add_css_class(GTK_WIDGET(rv->winner), "heading");
  gtk_label_set_wrap(rv->winner, TRUE);
  gtk_label_set_xalign(rv->winner, 0);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(rv->winner));
  GtkWidget *images = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_set_homogeneous(GTK_BOX(images), TRUE);
  for (guint i = 0; i < TL_RACE_VIEW_ROWS; i++) {
    GtkWidget *col = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    rv->pictures[i] = GTK_PICTURE(gtk_picture_new());
    gtk_picture_set_can_shrink(rv->pictures[i], TRUE);
    gtk_widget_set_size_request(GTK_WIDGET(rv->pictures[i]), 160, 160);
    rv->captions[i] = GTK_LABEL(gtk_label_new(""));
    gtk_label_set_ellipsize(rv->captions[i], PANGO_ELLIPSIZE_MIDDLE);
    gtk_label_set_justify(rv->captions[i], GTK_JUSTIFY_CENTER);
    gtk_widget_add_css_class(GTK_WIDGET(rv->captions[i]), "caption");
    gtk_widget_set_visible(GTK_WIDGET(rv->pictures[i]), FALSE);
    gtk_widget_set_visible(GTK_WIDGET(rv->captions[i]), FALSE);
    gtk_box_append(GTK_BOX(col), GTK_WIDGET(rv->pictures[i]));
    gtk_box_append(GTK_BOX(col), GTK_WIDGET(rv->captions[i]));
    gtk_box_append(GTK_BOX(images), col);
  }
  gtk_box_append(GTK_BOX(box), images);
  return box;
}

static void view_free(gpointer p) {
  RaceView *rv = p;
  if (rv->timer) g_source_remove(rv->timer);
  g_clear_pointer(&rv->runner, tl_runner_free);
  g_clear_pointer(&rv->board, tl_race_board_unref);
  g_ptr_array_unref(rv->algos);
  g_free(rv->error_text);
  g_free(rv->winner_text);
  g_free(rv);
}

/* The runner's job uses the window's context, freed when the window is finalized: the race's
 * runner is joined when the window is destroyed, before that. */
static void on_window_destroy(GtkWidget *win, gpointer data) {
  GtkWindow *w = g_object_get_data(G_OBJECT(win), "tl-race-window");
  if (!w) return;
  RaceView *rv = view_of(w);
  if (rv->timer) g_source_remove(rv->timer);
  rv->timer = 0;
  g_clear_pointer(&rv->runner, tl_runner_free);
  g_object_set_data(G_OBJECT(win), "tl-race-window", NULL);
  gtk_window_destroy(w);
}

GtkWindow *tl_race_view_window(TlWindow *win) {
  GtkWindow *w = g_object_get_data(G_OBJECT(win), "tl-race-window");
  if (w) return w;
  RaceView *rv = g_new0(RaceView, 1);
  rv->win = win;
  rv->algos = g_ptr_array_new();
  const TlAlgorithmClass *const *all = tl_registry_algorithms();
  /* the registry's PET algorithms: a Poisson model on list mode or bins */
  for (guint i = 0; all[i]; i++)
    if (tl_algorithm_flags(all[i]) & TL_ALGO_EMISSION)
      g_ptr_array_add(rv->algos, (gpointer)tl_algorithm_name(all[i]));
  w = GTK_WINDOW(adw_window_new());
  rv->window = w;
  g_object_set_data_full(G_OBJECT(w), "tl-race-view", rv, view_free);
  gtk_window_set_title(w, "Race");
  gtk_window_set_transient_for(w, GTK_WINDOW(win));
  gtk_window_set_hide_on_close(w, TRUE);
  gtk_window_set_default_size(w, 1280, 800);
  GtkWidget *outer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *header = adw_header_bar_new();
  adw_header_bar_set_title_widget(ADW_HEADER_BAR(header),
                                  adw_window_title_new("Race", "Algorithms head to head, PETRIC's metrics"));
  gtk_box_append(GTK_BOX(outer), header);
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_box_append(GTK_BOX(row), settings_column(rv));
  gtk_box_append(GTK_BOX(row), gtk_separator_new(GTK_ORIENTATION_VERTICAL));
  gtk_box_append(GTK_BOX(row), results_column(rv));
  gtk_widget_set_vexpand(row, TRUE);
  gtk_box_append(GTK_BOX(outer), row);
  adw_window_set_content(ADW_WINDOW(w), outer);
  g_object_set_data(G_OBJECT(win), "tl-race-window", w);
  g_signal_connect(win, "destroy", G_CALLBACK(on_window_destroy), NULL);
  rv->timer = g_timeout_add(200, tick, rv);
  update_buttons(rv);
  return w;
}

static void act_race(GSimpleAction *a, GVariant *p, gpointer win) {
  gtk_window_present(tl_race_view_window(TL_WINDOW(win)));
}

void tl_race_view_install(TlWindow *win) {
  static const GActionEntry entries[] = {{"race", act_race, NULL, NULL, NULL, {0}}};
  g_action_map_add_action_entries(G_ACTION_MAP(win), entries, G_N_ELEMENTS(entries), win);
}

/* ---- for tests ---- */

gboolean tl_race_view_set_entrant(GtkWindow *w, guint i, gboolean enabled, const char *algo,
                                  const char *settings, GError **error) {
  RaceView *rv = view_of(w);
  if (i >= TL_RACE_VIEW_ROWS) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "row %u: expected 0 to %d", i,
                TL_RACE_VIEW_ROWS - 1);
    return FALSE;
  }
  for (guint a = 0; a < rv->algos->len; a++)
    if (g_str_equal(rv->algos->pdata[a], algo)) {
      gtk_check_button_set_active(rv->use[i], enabled);
      gtk_drop_down_set_selected(rv->algo[i], a);
      gtk_editable_set_text(GTK_EDITABLE(rv->settings[i]), settings ? settings : "");
      return TRUE;
    }
  g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
              "algorithm %s: not a PET algorithm of the registry", algo);
  return FALSE;
}

void tl_race_view_set_reference(GtkWindow *w, const char *spec, guint updates) {
  RaceView *rv = view_of(w);
  gtk_editable_set_text(GTK_EDITABLE(rv->ref_algo), spec);
  gtk_spin_button_set_value(rv->ref_updates, updates);
}

void tl_race_view_set_updates(GtkWindow *w, guint updates) {
  gtk_spin_button_set_value(view_of(w)->updates, updates);
}

GtkWidget *tl_race_view_start_button(GtkWindow *w) { return view_of(w)->start; }
gboolean tl_race_view_running(GtkWindow *w) { return running(view_of(w)); }
guint tl_race_view_rounds(GtkWindow *w) { return view_of(w)->rounds; }
guint tl_race_view_starts(GtkWindow *w) { return view_of(w)->starts; }
const char *tl_race_view_error(GtkWindow *w) {
  RaceView *rv = view_of(w);
  return rv->error_text ? rv->error_text : "";
}
const char *tl_race_view_winner_text(GtkWindow *w) {
  RaceView *rv = view_of(w);
  return rv->winner_text ? rv->winner_text : "";
}
TlPlot *tl_race_view_plot(GtkWindow *w, guint i) { return view_of(w)->plots[MIN(i, 1)]; }
void tl_race_view_set_x_epochs(GtkWindow *w, gboolean epochs) {
  gtk_drop_down_set_selected(view_of(w)->xaxis, epochs ? 1 : 0);
}
