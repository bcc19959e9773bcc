/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's files: open (dialog, drag and drop, recent files), save the image as NIfTI,
 * export the views (PNG, written after the next paint) and the plots, choose a mu-map for
 * attenuation correction, a normalisation (also dropped on the window), a randoms or a scatter
 * estimate. Each has a dialog action and a "-to" / "-file" action
 * taking the path (tests and scripts use those).
 * Dialogs: GtkFileDialog on GTK >= 4.10, GtkFileChooserNative on 4.8 (Debian 12). */
#include <math.h>
#include "tl-screenshot.h"
#include "tl-window-private.h"
#include "dataset/tl-formats.h"
#include "tl-data-view.h"

/* ---- Open ------------------------------------------------------------------------- */

typedef struct {
  char *path;
} OpenSpec;

static void open_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancel) {
  GError *error = NULL;
  /* a large file's load and the centre search report to the window's progress bar */
  g_autoptr(TlProgress) progress = tl_window_progress_for_load(source);
  tl_progress_push(progress);
  TlDocument *d = tl_document_load(task_data, &error);
  /* CT data whose format stores no centre of rotation: searched now, as the CLI's default */
  TlContext *ctx = tl_window_get_context(source);
  if (d && ctx && !tl_document_find_centre(d, ctx, &error))
    g_clear_pointer(&d, tl_document_unref);
  tl_progress_pop(progress);
  if (d)
    g_task_return_pointer(task, d, (GDestroyNotify)tl_document_unref);
  else
    g_task_return_error(task, error);
}

static void apply_run(TlWindow *self, const TlRunSpec *s, const char *path);
#define PENDING_RUN "tl-pending-run"

static void open_done(GObject *source, GAsyncResult *res, gpointer user_data) {
  g_autoptr(GError) error = NULL;
  TlDocument *d = g_task_propagate_pointer(G_TASK(res), &error);
  if (g_cancellable_is_cancelled(g_task_get_cancellable(G_TASK(res))))
    return; /* the window is gone */
  TlWindow *self = TL_WINDOW(source);
  self->busy--;
  g_autofree char *run_path = g_strdup(g_object_get_data(G_OBJECT(self), PENDING_RUN));
  g_object_set_data(G_OBJECT(self), PENDING_RUN, NULL);
  if (!d) {
    /* The previous dataset and run were never touched: they stay. */
    tl_window_show_error(self, run_path ? "Open Run: could not open its data" : "Could not open the file", error);
    tl_window_update_actions(self);
    return;
  }
  g_autofree char *uri = g_filename_to_uri(d->path, NULL, NULL);
  if (uri)
    gtk_recent_manager_add_item(gtk_recent_manager_get_default(), uri);
  tl_window_set_dataset(self, d, FALSE);
  tl_window_update_recent(self);
  if (run_path) { /* read again: the file is small, and the run opened is the one applied */
    g_autoptr(TlRunSpec) s = tl_run_spec_load(run_path, &error);
    if (s) apply_run(self, s, run_path);
    else tl_window_show_error(self, "Open Run", error);
  }
}

void tl_window_open_path(TlWindow *self, const char *path) {
  self->busy++;
  g_autoptr(GTask) task = g_task_new(self, self->cancellable, open_done, NULL);
  g_task_set_task_data(task, g_strdup(path), g_free);
  g_task_run_in_thread(task, open_thread);
}

/* ---- Dialogs ---------------------------------------------------------------------- */

typedef void (*PathFunc)(TlWindow *self, const char *path);

static GtkFileFilter *filter_new(const char *pattern, const char *name) {
  GtkFileFilter *f = gtk_file_filter_new();
  gtk_file_filter_set_name(f, name);
  g_auto(GStrv) patterns = g_strsplit(pattern, ";", -1);
  for (char **p = patterns; *p; p++)
    gtk_file_filter_add_pattern(f, *p);
  return f;
}

#if GTK_CHECK_VERSION(4, 10, 0)
/* GtkFileDialog: newer than GDK_VERSION_MAX_ALLOWED (4.8), hence the guard. */
G_GNUC_BEGIN_IGNORE_DEPRECATIONS
typedef struct {
  TlWindow *window;
  PathFunc func;
  gboolean save;
} Choice;

static void dialog_done(GObject *source, GAsyncResult *res, gpointer data) {
  Choice *c = data;
  g_autoptr(GError) error = NULL;  /* dismissed: nothing to do */
  g_autoptr(GFile) file = c->save ? gtk_file_dialog_save_finish(GTK_FILE_DIALOG(source), res, &error)
                                  : gtk_file_dialog_open_finish(GTK_FILE_DIALOG(source), res, &error);
  g_autofree char *path = file ? g_file_get_path(file) : NULL;
  if (path)
    c->func(c->window, path);
  g_object_unref(c->window);
  g_free(c);
}

static void choose(TlWindow *self, const char *title, gboolean save, const char *name,
                   const char *pattern, const char *filter_name, PathFunc func) {
  GtkFileDialog *d = gtk_file_dialog_new();
  gtk_file_dialog_set_title(d, title);
  gtk_file_dialog_set_modal(d, TRUE);
  if (name)
    gtk_file_dialog_set_initial_name(d, name);
  if (pattern) {
    GtkFileFilter *f = filter_new(pattern, filter_name);
    GListStore *filters = g_list_store_new(GTK_TYPE_FILE_FILTER);
    g_list_store_append(filters, f);
    gtk_file_dialog_set_filters(d, G_LIST_MODEL(filters));
    gtk_file_dialog_set_default_filter(d, f);
    g_object_unref(filters);
    g_object_unref(f);
  }
  Choice *c = g_new0(Choice, 1);
  *c = (Choice){g_object_ref(self), func, save};
  if (save)
    gtk_file_dialog_save(d, GTK_WINDOW(self), NULL, dialog_done, c);
  else
    gtk_file_dialog_open(d, GTK_WINDOW(self), NULL, dialog_done, c);
  g_object_unref(d);  /* the operation keeps it */
}
G_GNUC_END_IGNORE_DEPRECATIONS
#else
/* GtkFileChooserNative: GTK 4.8 (Debian 12); it uses the portal when sandboxed. */
static void chooser_response(GtkNativeDialog *dialog, int response, gpointer data) {
  TlWindow *self = g_object_get_data(G_OBJECT(dialog), "window");
  PathFunc func = data;
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog));
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    if (path)
      func(self, path);
  }
  g_object_unref(dialog);
}

static void choose(TlWindow *self, const char *title, gboolean save, const char *name,
                   const char *pattern, const char *filter_name, PathFunc func) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new(title, GTK_WINDOW(self),
      save ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_OPEN, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  if (name)
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), name);
  if (pattern) {
    GtkFileFilter *f = filter_new(pattern, filter_name);
    gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), f);
    g_object_unref(f);
  }
  g_object_set_data(G_OBJECT(d), "window", self);
  g_signal_connect(d, "response", G_CALLBACK(chooser_response), func);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}
#endif

static void save_image(TlWindow *self, const char *path) {
  if (self->runner)
    tl_runner_save(self->runner, path);  /* read back between two sub-iterations */
}

typedef struct {
  TlWindow *window;
  char *path;
  gulong handler;
} ExportView;

/* Right after a paint the layout is current; between frames a label changed by a new
 * sub-iteration may have queued a resize, and a widget waiting for one draws nothing. */
static void export_view_after_paint(GdkFrameClock *clock, ExportView *e) {
  g_signal_handler_disconnect(clock, e->handler);
  TlWindow *self = e->window;
  g_autoptr(GError) error = NULL;
  if (!tl_widget_save_png(GTK_WIDGET(self->view_grid), e->path, &error)) {
    tl_window_show_error(self, "Export", error);
  } else {
    g_autofree char *text = g_strdup_printf("Saved %s", e->path);
    tl_window_toast(self, text);
  }
  g_object_unref(self);
  g_free(e->path);
  g_free(e);
}

static void export_view(TlWindow *self, const char *path) {
  GdkFrameClock *clock = gtk_widget_get_frame_clock(GTK_WIDGET(self));
  if (!clock) {
    g_autoptr(GError) error = g_error_new(G_IO_ERROR, G_IO_ERROR_FAILED, "The window is not shown");
    tl_window_show_error(self, "Export", error);
    return;
  }
  ExportView *e = g_new0(ExportView, 1);
  e->window = g_object_ref(self);
  e->path = g_strdup(path);
  e->handler = g_signal_connect(clock, "after-paint", G_CALLBACK(export_view_after_paint), e);
  gtk_widget_queue_draw(GTK_WIDGET(self->view_grid));
}

/* PREFIX-convergence.{csv,png}, when a line was drawn PREFIX-profile.{csv,png}, and with the
 * data view's profiles PREFIX-sinogram-profile.{csv,png}. */
static void export_plots(TlWindow *self, const char *path) {
  g_autofree char *prefix = g_str_has_suffix(path, ".csv") || g_str_has_suffix(path, ".png")
                                ? g_strndup(path, strlen(path) - 4) : g_strdup(path);
  /* with the data view open, its profiles of the shown sinogram plane too */
  TlDataView *dv = tl_window_get_data_view(self);
  struct { TlPlot *plot; const char *name; } plots[] = {{self->convergence, "convergence"},
                                                        {self->line_plot, "profile"},
                                                        {dv ? tl_data_view_get_profile_plot(dv) : NULL,
                                                         "sinogram-profile"}};
  for (gsize i = 0; i < G_N_ELEMENTS(plots); i++) {
    if (!plots[i].plot || tl_plot_n_series(plots[i].plot) == 0)
      continue;
    g_autoptr(GError) error = NULL;
    g_autofree char *csv = g_strdup_printf("%s-%s.csv", prefix, plots[i].name);
    g_autofree char *png = g_strdup_printf("%s-%s.png", prefix, plots[i].name);
    if (!tl_plot_save_csv(plots[i].plot, csv, &error) ||
        !tl_plot_save_png(plots[i].plot, png, 640, 360, &error)) {
      tl_window_show_error(self, "Export", error);
      return;
    }
  }
  g_autofree char *text = g_strdup_printf("Saved %s-*.csv and .png", prefix);
  tl_window_toast(self, text);
}

static void act_open(GSimpleAction *a, GVariant *p, gpointer data) {
  g_autofree char *patterns = tl_formats_patterns(TL_DATA_N_KINDS, FALSE);
  choose(data, "Open", FALSE, NULL, patterns, "List mode, CT data and images", tl_window_request_open);
}
/* The side panel keeps the path; the file is read when the next job is made. */
static void set_attenuation(TlWindow *self, const char *path) {
  tl_side_panel_set_attenuation_file(self->side_panel, path);
}
static void act_open_attenuation(GSimpleAction *a, GVariant *p, gpointer data) {
  g_autofree char *patterns = tl_formats_patterns(TL_DATA_IMAGE, FALSE);
  choose(data, "Attenuation Map (mm⁻¹)", FALSE, NULL, patterns, "Images", set_attenuation);
}
static void act_attenuation_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_attenuation(data, g_variant_get_string(p, NULL));
}
/* The model's other inputs, kept by the side panel and read when the next job is made (a
 * normalisation or scatter estimate of another scanner fails the run with its message). */
static void set_norm(TlWindow *self, const char *path) { tl_side_panel_set_norm_file(self->side_panel, path); }
static void set_randoms(TlWindow *self, const char *path) { tl_side_panel_set_randoms_file(self->side_panel, path); }
static void set_scatter(TlWindow *self, const char *path) { tl_side_panel_set_scatter_file(self->side_panel, path); }
static void act_open_norm(GSimpleAction *a, GVariant *p, gpointer data) {
  g_autofree char *patterns = tl_formats_patterns(TL_DATA_PET_NORM, FALSE);
  choose(data, "Normalisation", FALSE, NULL, patterns, "Normalisations", set_norm);
}
static void act_norm_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_norm(data, g_variant_get_string(p, NULL));
}

/* The run keys sensitivity and sensitivity-out (the side panel's two rows): an image to use,
 * an image to write. */
static void set_sens(TlWindow *self, const char *path) {
  tl_side_panel_set_sensitivity_file(self->side_panel, path);
}
static void set_sens_out(TlWindow *self, const char *path) {
  tl_side_panel_set_sensitivity_out(self->side_panel, path);
}
static void act_open_sens(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Sensitivity Image", FALSE, NULL, NULL, NULL, set_sens);
}
static void act_save_sens(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Write the Sensitivity Image", TRUE, "sensitivity.nii", NULL, NULL, set_sens_out);
}
static void act_sens_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_sens(data, g_variant_get_string(p, NULL));
}
static void act_sens_out_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_sens_out(data, g_variant_get_string(p, NULL));
}
static void act_open_randoms(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Randoms Estimate", FALSE, NULL, NULL, NULL, set_randoms);
}
static void act_randoms_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_randoms(data, g_variant_get_string(p, NULL));
}
static void act_open_scatter(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Scatter Estimate", FALSE, NULL, "*.tlsc", "Scatter estimates", set_scatter);
}
static void act_scatter_file(GSimpleAction *a, GVariant *p, gpointer data) {
  set_scatter(data, g_variant_get_string(p, NULL));
}
static void act_open_file(GSimpleAction *a, GVariant *p, gpointer data) {
  tl_window_request_open(data, g_variant_get_string(p, NULL));
}
static void act_save_image(GSimpleAction *a, GVariant *p, gpointer data) {
  g_autofree char *patterns = tl_formats_patterns(TL_DATA_IMAGE, TRUE);
  choose(data, "Save Image", TRUE, "image.nii.gz", patterns, "Images", save_image);
}
static void act_save_image_to(GSimpleAction *a, GVariant *p, gpointer data) {
  save_image(data, g_variant_get_string(p, NULL));
}
static void act_export_view(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Export View", TRUE, "view.png", "*.png", "PNG", export_view);
}
static void act_export_view_to(GSimpleAction *a, GVariant *p, gpointer data) {
  export_view(data, g_variant_get_string(p, NULL));
}
static void act_export_plots(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Export Plots", TRUE, "tomolab", NULL, NULL, export_plots);
}
static void act_export_plots_to(GSimpleAction *a, GVariant *p, gpointer data) {
  export_plots(data, g_variant_get_string(p, NULL));
}
/* The menu's CSV exports of the measurements (tl-window-measure.c writes them). */
static void export_roi_csv(TlWindow *self, const char *path) {
  g_action_group_activate_action(G_ACTION_GROUP(self), "export-roi-csv", g_variant_new_string(path));
}
static void export_nema_csv(TlWindow *self, const char *path) {
  g_action_group_activate_action(G_ACTION_GROUP(self), "export-nema-csv", g_variant_new_string(path));
}
static void act_export_roi_csv_dialog(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Export ROI Statistics", TRUE, "rois.csv", "*.csv", "CSV", export_roi_csv);
}
static void act_export_nema_csv_dialog(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Export NEMA Analysis", TRUE, "nema.csv", "*.csv", "CSV", export_nema_csv);
}

/* Runs (compute/run/tl-run-spec.h, docs/formats.md "Run files"): the side panel's settings
 * as the text form `tomolab-cli recon --run` reads (the run the window's jobs are made from),
 * and back. */
static void save_run(TlWindow *self, const char *path) {
  g_autoptr(GError) error = NULL;
  gboolean phantom_mu = FALSE;
  g_autoptr(TlRunSpec) s = tl_window_get_run(self, &phantom_mu, &error);
  if (s && phantom_mu)
    error = g_error_new(TL_ERROR, TL_ERROR_UNSUPPORTED,
                        "attenuation: the simulated phantom's mu-map is no file a run can name "
                        "(save it, or simulate with tomolab-cli simulate --mu, and choose the file)");
  if (!s || error || !tl_run_spec_save(s, path, &error)) {
    tl_window_show_error(self, "Save Run", error);
    return;
  }
  g_autofree char *text = g_strdup_printf("Saved the run %s", path);
  tl_window_toast(self, text);
}

/* The run's settings into the side panel, as if chosen there (the data shown are the run's). */
static void apply_run(TlWindow *self, const TlRunSpec *s, const char *path) {
  g_autoptr(GError) error = NULL;
  TlSidePanel *p = self->side_panel;
  GString *text = g_string_new(NULL);
  g_string_printf(text, "Run %s applied", path);
  if (s->modality == TL_RUN_CT) {
    if (!tl_side_panel_get_ct(p)) {
      error = g_error_new(TL_ERROR, TL_ERROR_INVALID_ARG, "modality = ct: the data shown are "
                          "not CT projections");
      tl_window_show_error(self, "Open Run", error);
      g_string_free(text, TRUE);
      return;
    }
    tl_side_panel_set_ct_algorithm(p, tl_run_spec_algorithm(s), MAX(tl_run_spec_subsets(s), 1),
                                   tl_run_spec_iterations(s));
    tl_side_panel_set_prior(p, s->prior ? s->prior : "", s->beta, s->gamma);
    tl_side_panel_set_projector(p, tl_run_spec_projector(s));
    tl_side_panel_set_fdk_filter(p, s->fdk_filter);
    double c = s->centre && !g_str_equal(s->centre, "auto") ? g_ascii_strtod(s->centre, NULL) : NAN;
    if (isfinite(c) && !tl_side_panel_set_centre(p, c))
      g_string_append(text, "; its centre is not used (these data have none)");
  } else {
    TlPetJobOptions o = {0};
    guint iterations = 0;
    g_autofree char *ignored = NULL;
    if (tl_side_panel_get_ct(p)) {
      error = g_error_new(TL_ERROR, TL_ERROR_INVALID_ARG, "modality = pet: the data shown are "
                          "CT projections");
    }
    if (error || !tl_pet_job_options_from_run(s, &o, &iterations, &ignored, &error)) {
      tl_window_show_error(self, "Open Run", error);
      g_string_free(text, TRUE);
      return;
    }
    tl_side_panel_set_pet_algorithm(p, o.algorithm, o.subsets, iterations);
    tl_side_panel_set_prior(p, o.prior, o.beta, o.gamma);
    tl_side_panel_set_projector(p, o.projector);
    tl_side_panel_set_tof(p, o.tof);
    if (o.mu_path) tl_side_panel_set_attenuation_file(p, o.mu_path);
    if (o.norm_path) tl_side_panel_set_norm_file(p, o.norm_path);
    else tl_side_panel_set_norm(p, FALSE);
    if (o.randoms_path) tl_side_panel_set_randoms_file(p, o.randoms_path);
    gboolean randoms_ok = tl_side_panel_set_randoms(p, o.randoms);
    if (o.scatter_path) tl_side_panel_set_scatter_file(p, o.scatter_path);
    gboolean scatter_ok = tl_side_panel_set_scatter(p, o.scatter, o.scatter_rounds, o.scatter_restart);
    tl_side_panel_set_quant(p, o.quant, o.calibration, o.isotope, o.frame_start_s,
                            o.duration_s > 0 ? o.duration_s : NAN);
    tl_side_panel_set_filter(p, &o.filter, o.filter_every);
    tl_side_panel_set_rays(p, o.rays_tangential, o.rays_axial);
    tl_side_panel_set_sensitivity_file(p, o.sensitivity_path);
    tl_side_panel_set_sensitivity_out(p, o.sensitivity_out_path);
    if (!randoms_ok) g_string_append(text, "; its randoms are not offered for these data");
    if (!scatter_ok) g_string_append(text, "; its scatter is not offered here");
    if (ignored) g_string_append_printf(text, "; not used by the window: %s", ignored);
    tl_pet_job_options_clear(&o);
  }
  tl_window_toast(self, text->str);
  g_string_free(text, TRUE);
}

/* Open Run: the run's data are opened (unless shown already), then its settings applied once
 * they are in (opening resets what the data allow); a run without data applies to what is
 * shown. */
static void open_run(TlWindow *self, const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlRunSpec) s = tl_run_spec_load(path, &error);
  if (!s || !tl_run_spec_validate(s, &error)) {
    tl_window_show_error(self, "Open Run", error);
    return;
  }
  if (s->data && (!self->dataset || g_strcmp0(self->dataset->path, s->data) != 0)) {
    g_object_set_data_full(G_OBJECT(self), PENDING_RUN, g_strdup(path), g_free);
    tl_window_open_path(self, s->data);
    return;
  }
  apply_run(self, s, path);
}

static void act_save_run(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Save Run", TRUE, "run.txt", NULL, NULL, save_run);
}
static void act_save_run_to(GSimpleAction *a, GVariant *p, gpointer data) {
  save_run(data, g_variant_get_string(p, NULL));
}
static void act_open_run(GSimpleAction *a, GVariant *p, gpointer data) {
  choose(data, "Open Run (run file or image sidecar)", FALSE, NULL, NULL, NULL, open_run);
}
static void act_open_run_file(GSimpleAction *a, GVariant *p, gpointer data) {
  open_run(data, g_variant_get_string(p, NULL));
}

static const GActionEntry kFileActions[] = {
  {"save-run", act_save_run, NULL, NULL, NULL, {0}},
  {"save-run-to", act_save_run_to, "s", NULL, NULL, {0}},
  {"open-run", act_open_run, NULL, NULL, NULL, {0}},
  {"open-run-file", act_open_run_file, "s", NULL, NULL, {0}},
  {"open", act_open, NULL, NULL, NULL, {0}},
  {"open-file", act_open_file, "s", NULL, NULL, {0}},
  {"open-attenuation", act_open_attenuation, NULL, NULL, NULL, {0}},
  {"attenuation-file", act_attenuation_file, "s", NULL, NULL, {0}},
  {"open-norm", act_open_norm, NULL, NULL, NULL, {0}},
  {"norm-file", act_norm_file, "s", NULL, NULL, {0}},
  {"open-sensitivity", act_open_sens, NULL, NULL, NULL, {0}},
  {"save-sensitivity", act_save_sens, NULL, NULL, NULL, {0}},
  {"sensitivity-file", act_sens_file, "s", NULL, NULL, {0}},
  {"sensitivity-out-file", act_sens_out_file, "s", NULL, NULL, {0}},
  {"open-randoms", act_open_randoms, NULL, NULL, NULL, {0}},
  {"randoms-file", act_randoms_file, "s", NULL, NULL, {0}},
  {"open-scatter", act_open_scatter, NULL, NULL, NULL, {0}},
  {"scatter-file", act_scatter_file, "s", NULL, NULL, {0}},
  {"save-image", act_save_image, NULL, NULL, NULL, {0}},
  {"save-image-to", act_save_image_to, "s", NULL, NULL, {0}},
  {"export-view", act_export_view, NULL, NULL, NULL, {0}},
  {"export-view-to", act_export_view_to, "s", NULL, NULL, {0}},
  {"export-plots", act_export_plots, NULL, NULL, NULL, {0}},
  {"export-roi-csv-dialog", act_export_roi_csv_dialog, NULL, NULL, NULL, {0}},
  {"export-nema-csv-dialog", act_export_nema_csv_dialog, NULL, NULL, NULL, {0}},
  {"export-plots-to", act_export_plots_to, "s", NULL, NULL, {0}},
};

/* ---- Recent files and drag and drop ----------------------------------------------- */

#define TL_RECENT_MAX 5

void tl_window_update_recent(TlWindow *self) {
  g_menu_remove_all(self->recent_section);
  GList *items = gtk_recent_manager_get_items(gtk_recent_manager_get_default());
  guint n = 0;
  for (GList *l = items; l && n < TL_RECENT_MAX; l = l->next) {
    GtkRecentInfo *info = l->data;
    const char *uri = gtk_recent_info_get_uri(info);
    if (!gtk_recent_info_has_application(info, g_get_application_name() ? g_get_application_name() : "") &&
        !tl_formats_known_extension(uri))
      continue;
    g_autofree char *path = g_filename_from_uri(uri, NULL, NULL);
    if (!path || !g_file_test(path, G_FILE_TEST_EXISTS))
      continue;
    g_autoptr(GMenuItem) item = g_menu_item_new(gtk_recent_info_get_display_name(info), NULL);
    g_menu_item_set_action_and_target_value(item, "win.open-file", g_variant_new_string(path));
    g_menu_append_item(self->recent_section, item);
    n++;
  }
  g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
}

static gboolean on_drop(GtkDropTarget *target, const GValue *value, double x, double y, gpointer data) {
  TlWindow *self = data;
  if (self->state != TL_WINDOW_READY || !G_VALUE_HOLDS(value, GDK_TYPE_FILE_LIST))
    return FALSE;
  GSList *files = g_value_get_boxed(value);
  g_autofree char *path = files ? g_file_get_path(files->data) : NULL;
  if (!path)
    return FALSE;
  /* a normalisation is no dataset: it joins the model of the data shown (detected by content,
   * a header read: quick enough for the main thread) */
  const TlFormatClass *f = tl_format_detect(path, NULL);
  if (f && f->kind == TL_DATA_PET_NORM) {
    set_norm(self, path);
    return TRUE;
  }
  tl_window_request_open(self, path);
  return TRUE;
}

void tl_window_files_init(TlWindow *self) {
  g_action_map_add_action_entries(G_ACTION_MAP(self), kFileActions, G_N_ELEMENTS(kFileActions), self);
  GtkDropTarget *drop = gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect(drop, "drop", G_CALLBACK(on_drop), self);
  gtk_widget_add_controller(GTK_WIDGET(self->stack), GTK_EVENT_CONTROLLER(drop));
  tl_window_update_recent(self);
}
