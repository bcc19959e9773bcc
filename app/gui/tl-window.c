/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow: opens the TlContext on a GTask worker (vkCreateInstance and the validation
 * layer take a second or more) so the main thread only ever draws; simulations run on
 * GTask workers and reconstructions on the TlRunner's thread.
 *
 * Actions: win.run, win.pause, win.run-pause, win.step, win.stop, win.restart,
 * win.simulate (a{sv}, see tl_document_simulate), win.simulate-dialog, win.confirm-replace (b:
 * the answer to "Replace the current reconstruction?"), win.show-profiling,
 * win.show-mip, win.show-device, win.reset-zoom; files in tl-window-files.c; ROIs, NEMA,
 * snapshots and comparisons in tl-window-measure.c. */
#include <math.h>
#include <string.h>
#include "tl-background.h"
#include "tl-simulate-dialog.h"
#include "tl-lessons.h"
#include "tl-window-private.h"
#include "tl-race-view.h"
#include "expr/tl-kernel-edit.h"

G_DEFINE_FINAL_TYPE(TlWindow, tl_window, ADW_TYPE_APPLICATION_WINDOW)
G_DEFINE_ENUM_TYPE(TlWindowState, tl_window_state,
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_LOADING, "loading"),
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_READY, "ready"),
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_FAILED, "failed"))

enum { PROP_0, PROP_SELECTOR, PROP_STATE, N_PROPS };
static GParamSpec *props[N_PROPS];
enum { SIG_FRAME, N_SIGNALS };
static guint signals[N_SIGNALS];

/* ---- Device ---------------------------------------------------------------------- */

typedef struct {
  TlContext *ctx;
  GArray *devices;
  GError *error;
} TlLoadResult;

static void load_result_free(gpointer data) {
  TlLoadResult *r = data;
  g_clear_pointer(&r->ctx, tl_context_free);
  g_clear_pointer(&r->devices, g_array_unref);
  g_clear_error(&r->error);
  g_free(r);
}

typedef struct {
  const char *selector;
  TlLoadResult *r;
} LoadCall;

static gpointer load_context(gpointer data) {
  LoadCall *c = data;
  /* The list is only shown, so failing to enumerate is not an error by itself:
   * tl_context_new reports the real reason. */
  c->r->devices = tl_enumerate_devices(NULL);
  c->r->ctx = tl_context_new(c->selector, &c->r->error);
  return NULL;
}

static void load_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable) {
  LoadCall c = {task_data, g_new0(TlLoadResult, 1)};
  /* On a niced thread: the driver's threads made with the device inherit it. */
  tl_background_run(load_context, &c);
  g_task_return_pointer(task, c.r, load_result_free);
}

/* A next step for the person reading the error page (the message says what failed). */
static const char *error_hint(const char *selector, GArray *devices) {
  gboolean any_usable = FALSE;
  for (guint i = 0; devices && i < devices->len; i++)
    any_usable |= g_array_index(devices, TlDeviceInfo, i).usable;
  if (selector || g_getenv("TOMOLAB_DEVICE"))
    return "Choose another device with --device INDEX|NAME or unset TOMOLAB_DEVICE.";
  if (!devices || devices->len == 0)
    return "Tomolab needs a Vulkan 1.2 driver; vulkaninfo --summary lists what this system has.";
  if (!any_usable)
    return "None of the devices below can run Tomolab; a newer Vulkan driver may help.";
  return "Run tomolab-cli info in a terminal for details.";
}

const char *tl_window_ready_page(TlWindow *self) {
  return self->dataset ? "workbench" : "welcome";
}

static void set_state(TlWindow *self, TlWindowState state) {
  self->state = state;
  gtk_spinner_set_spinning(self->spinner, state == TL_WINDOW_LOADING);
  gtk_stack_set_visible_child_name(self->stack, state == TL_WINDOW_LOADING ? "loading"
                                                : state == TL_WINDOW_READY ? tl_window_ready_page(self) : "error");
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
  tl_window_update_actions(self);
}

static void simulate(TlWindow *self, GVariant *params, gboolean run);

static void show_context(TlWindow *self) {
  const TlDeviceInfo *info = tl_context_info(self->ctx);
  adw_window_title_set_subtitle(self->window_title, info->name);
  tl_device_panel_show(self->device_panel, info, tl_context_validation_enabled(self->ctx),
                       tl_context_validation_messages(self->ctx), self->devices);
  tl_profile_view_set_device(self->profile_view, info->name);
  set_state(self, TL_WINDOW_READY);
  if (self->open_pending) {
    g_autofree char *path = g_steal_pointer(&self->open_pending);
    tl_window_request_open(self, path);
  }
  if (self->demo_pending) {
    self->demo_pending = FALSE;
    GVariantDict d;
    g_variant_dict_init(&d, NULL);
    GVariant *set = g_object_get_data(G_OBJECT(self), "tl-demo-settings");
    /* a lesson (tl-lessons.c) may name another phantom and scanner */
    const char *phantom = "nema", *scanner = "dmi";
    if (set) g_variant_lookup(set, "phantom", "&s", &phantom);
    if (set) g_variant_lookup(set, "scanner", "&s", &scanner);
    g_variant_dict_insert(&d, "phantom", "s", phantom);
    g_variant_dict_insert(&d, "scanner", "s", scanner);
    g_variant_dict_insert(&d, "events", "d", self->demo_events);
    g_variant_dict_insert(&d, "coarsen", "u", self->demo_coarsen);
    gboolean flag;
    if (set && g_variant_lookup(set, "tof", "b", &flag)) g_variant_dict_insert(&d, "tof", "b", flag);
    if (set && g_variant_lookup(set, "attenuation", "b", &flag))
      g_variant_dict_insert(&d, "attenuation", "b", flag);
    if (set && g_variant_lookup(set, "compton", "b", &flag)) /* a lesson's scattered events */
      g_variant_dict_insert(&d, "scatter", "b", flag);
    guint64 seed;
    if (set && g_variant_lookup(set, "seed", "t", &seed)) g_variant_dict_insert(&d, "seed", "t", seed);
    g_autoptr(GVariant) params = g_variant_ref_sink(g_variant_dict_end(&d));
    /* OSEM with the dataset layer's subsets and iterations (tl-dataset.h): on 1e6 events 2
     * subsets of 5e5 for 3 iterations, the RMSE against the truth falls at every one of the
     * 6 sub-iterations (43.8, 31.5, 23.8, 20.1, 19.0, 18.7), where 10 subsets of 1e5 events
     * turn after the 5th (21.9 → 23.9 by the 10th) and 2e5 events after the 3rd: the first
     * run shows a good image; more subsets, filters and priors are the lessons' trade-offs. */
    tl_side_panel_set_algorithm(self->side_panel, TRUE, tl_dataset_pet_subsets(self->demo_events),
                                TL_DATASET_PET_ITERATIONS);
    /* The demo is about watching kernels cost: the profiling strip from the start (its
     * one line; it covers no view). */
    g_autoptr(GVariant) shown = g_action_group_get_action_state(G_ACTION_GROUP(self), "show-profiling");
    if (!g_variant_get_boolean(shown)) /* shown once, not toggled by a second start (a lesson) */
      g_action_group_activate_action(G_ACTION_GROUP(self), "show-profiling", NULL);
    if (set) {
      /* the keys that depend on the data (scatter, a μ-map) wait for the new data
       * (tl-window-run.c): the dataset shown now (a lesson started over it) is not theirs */
      TlDocument *current = self->dataset;
      self->dataset = NULL;
      tl_window_apply_settings(self, set);
      self->dataset = current;
    }
    simulate(self, params, TRUE);
  }
}

static void show_error(TlWindow *self) {
  const char *hint = error_hint(self->selector, self->devices);
  g_free(self->error_text);
  self->error_text = g_strdup_printf("%s\n\n%s", self->error->message, hint);
  /* The description is markup; the message comes from drivers and must not be parsed. */
  g_autofree char *markup = g_markup_escape_text(self->error_text, -1);
  adw_status_page_set_description(self->error_page, markup);
  for (guint i = 0; self->devices && i < self->devices->len; i++)
    gtk_list_box_append(self->error_devices,
                        tl_device_row_new(&g_array_index(self->devices, TlDeviceInfo, i), FALSE));
  gtk_widget_set_visible(GTK_WIDGET(self->error_devices), self->devices && self->devices->len > 0);
  set_state(self, TL_WINDOW_FAILED);
}

static void load_done(GObject *source, GAsyncResult *res, gpointer user_data) {
  g_autoptr(GError) cancelled = NULL;
  TlLoadResult *r = g_task_propagate_pointer(G_TASK(res), &cancelled);
  if (!r)
    return; /* the window was closed while loading; the task freed the result */
  TlWindow *self = TL_WINDOW(source);
  self->ctx = g_steal_pointer(&r->ctx);
  self->devices = g_steal_pointer(&r->devices);
  self->error = g_steal_pointer(&r->error);
  load_result_free(r);
  if (self->ctx)
    show_context(self);
  else
    show_error(self);
}

/* ---- Messages -------------------------------------------------------------------- */

void tl_window_toast(TlWindow *self, const char *text) {
  AdwToast *toast = adw_toast_new(text);
  adw_toast_set_timeout(toast, 5);
  adw_toast_overlay_add_toast(self->toasts, toast);
}

/* Errors stay in the window (never a dialog that blocks the run, never an abort). */
void tl_window_show_error(TlWindow *self, const char *context, const GError *error) {
  g_free(self->last_error);
  /* valid UTF-8 whatever the message holds (a file name's bytes): GTK shows nothing for
   * invalid text */
  g_autofree char *text = g_strdup_printf("%s: %s", context, error->message);
  self->last_error = g_utf8_make_valid(text, -1);
  /* Toast titles are markup. */
  g_autofree char *markup = g_markup_escape_text(self->last_error, -1);
  AdwToast *toast = adw_toast_new(markup);
  adw_toast_set_timeout(toast, 0);  /* stays until dismissed: errors must be read */
  adw_toast_overlay_add_toast(self->toasts, toast);
}

/* ---- Simulation ------------------------------------------------------------------- */

typedef struct {
  TlContext *ctx;
  GVariant *params;
  GCancellable *cancel;
  GError *error;
} SimulateCall;

static gpointer simulate_call(gpointer data) {
  SimulateCall *c = data;
  return tl_document_simulate(c->ctx, c->params, c->cancel, &c->error);
}

static void simulate_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancel) {
  /* The simulator's worker threads inherit the lower priority. */
  SimulateCall c = {tl_window_get_context(source), task_data, cancel, NULL};
  TlDocument *d = tl_background_run(simulate_call, &c);
  GError *error = c.error;
  if (d)
    g_task_return_pointer(task, d, (GDestroyNotify)tl_document_unref);
  else
    g_task_return_error(task, error);
}

static void simulate_done(GObject *source, GAsyncResult *res, gpointer user_data) {
  g_autoptr(GError) error = NULL;
  TlDocument *d = g_task_propagate_pointer(G_TASK(res), &error);
  if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return; /* the window is gone */
  TlWindow *self = TL_WINDOW(source);
  if (--self->busy == 0)
    adw_window_title_set_subtitle(self->window_title, tl_context_info(self->ctx)->name);
  if (!d) {
    tl_window_show_error(self, "Simulation", error);
    tl_window_update_actions(self);
    return;
  }
  tl_window_set_dataset(self, d, GPOINTER_TO_INT(user_data));
}

static void simulate(TlWindow *self, GVariant *params, gboolean run) {
  self->busy++;
  /* In the title, not a toast: libadwaita 1.2 can crash when a toast is dismissed
   * during its show animation, and a small simulation ends that quickly. */
  adw_window_title_set_subtitle(self->window_title, "Simulating…");
  g_autoptr(GTask) task = g_task_new(self, self->cancellable, simulate_done, GINT_TO_POINTER(run));
  g_task_set_task_data(task, g_variant_ref(params), (GDestroyNotify)g_variant_unref);
  g_task_run_in_thread(task, simulate_thread);
}

void tl_window_open_file(TlWindow *self, const char *path) {
  if (self->state == TL_WINDOW_READY) {
    tl_window_request_open(self, path);
    return;
  }
  g_free(self->open_pending);
  self->open_pending = g_strdup(path);
}

/* The command line's --set (tl-application.c): a{sv} of algo, subsets, iterations, prior, beta,
 * projector, tof, filter, filter-every, profile, kernel; tof and attenuation also go into the
 * simulation; mu, norm, randoms, scatter, scatter-rounds, scatter-restart, calibration, isotope, frame-start
 * and duration apply to the first dataset (tl_window_apply_data_settings). */
void tl_window_set_demo_settings(TlWindow *self, GVariant *settings) {
  g_object_set_data_full(G_OBJECT(self), "tl-demo-settings", g_variant_ref_sink(settings),
                         (GDestroyNotify)g_variant_unref);
}

static void settings_error(TlWindow *self, const char *text) {
  g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, text);
  tl_window_show_error(self, "Settings", error);
}

/* The --set keys that depend on the data (what they offer: delayeds, a mu-map): applied once
 * the dataset is there. An impossible choice is an error shown, never a silent change. */
void tl_window_apply_data_settings(TlWindow *self, GVariant *set) {
  TlSidePanel *panel = self->side_panel;
  const char *v = NULL;
  if (g_variant_lookup(set, "mu", "&s", &v))
    tl_side_panel_set_attenuation_file(panel, v);
  if (g_variant_lookup(set, "norm", "&s", &v))
    tl_side_panel_set_norm_file(panel, v);
  if (g_variant_lookup(set, "randoms", "&s", &v)) {
    if (g_str_equal(v, "delayeds")) {
      if (!tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_DELAYEDS))
        settings_error(self, "--set randoms=delayeds: these data hold no delayed coincidences");
    } else if (g_str_equal(v, "singles")) {
      if (!tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_SINGLES))
        settings_error(self, "--set randoms=singles: these data hold no singles rates");
    } else if (g_str_equal(v, "off")) {
      tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_OFF);
    } else {
      tl_side_panel_set_randoms_file(panel, v);
    }
  }
  guint rounds = 0;
  gboolean restart = FALSE;
  g_variant_lookup(set, "scatter-rounds", "u", &rounds);
  g_variant_lookup(set, "scatter-restart", "b", &restart);
  if (g_variant_lookup(set, "scatter", "&s", &v)) {
    if (g_str_equal(v, "sss")) {
      if (!tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, rounds, restart))
        settings_error(self, "--set scatter=sss needs attenuation correction (a phantom's μ-map "
                             "or --set attenuation=MU.nii)");
    } else if (g_str_equal(v, "off")) {
      tl_side_panel_set_scatter(panel, TL_PET_SCATTER_OFF, 0, FALSE);
    } else {
      tl_side_panel_set_scatter_file(panel, v);
    }
  }
  double calibration = NAN, start = NAN, duration = NAN;
  const char *isotope = NULL;
  if (g_variant_lookup(set, "calibration", "d", &calibration)) {
    g_variant_lookup(set, "isotope", "&s", &isotope);
    g_variant_lookup(set, "frame-start", "d", &start);
    g_variant_lookup(set, "duration", "d", &duration);
    if (!tl_side_panel_set_quant(panel, TRUE, calibration, isotope, start, duration))
      settings_error(self, "--set isotope: an unknown isotope");
  }
}

void tl_window_apply_settings(TlWindow *self, GVariant *set) {
  const char *algo = NULL, *prior = NULL, *projector = NULL, *filter = NULL;
  guint subsets = 2, iterations = 3, every = 0;
  double beta = 0;
  gboolean tof = FALSE;
  gboolean a = g_variant_lookup(set, "algo", "&s", &algo);
  gboolean b = g_variant_lookup(set, "subsets", "u", &subsets);
  gboolean c = g_variant_lookup(set, "iterations", "u", &iterations);
  /* CT data take the CT algorithms (fdk, sirt, ...): the panel keeps its CT rows */
  gboolean ct = self->dataset && self->dataset->ct;
  if (!b && ct && self->dataset->ds) subsets = self->dataset->ds->subsets;
  if ((a || b || c) && ct)
    tl_side_panel_set_ct_algorithm(self->side_panel, algo ? algo : "sirt", subsets, iterations);
  else if (a || b || c)
    tl_side_panel_set_pet_algorithm(self->side_panel, algo ? algo : "osem", subsets, iterations);
  double centre = NAN;
  if (g_variant_lookup(set, "centre", "d", &centre) && !tl_side_panel_set_centre(self->side_panel, centre))
    settings_error(self, "--set centre: these data have no centre of rotation (parallel-beam CT only)");
  if (g_variant_lookup(set, "prior", "&s", &prior)) {
    g_variant_lookup(set, "beta", "d", &beta);
    tl_side_panel_set_prior(self->side_panel, prior, beta, 2.0);
  }
  if (g_variant_lookup(set, "projector", "&s", &projector))
    tl_side_panel_set_projector(self->side_panel, projector);
  if (g_variant_lookup(set, "tof", "b", &tof)) tl_side_panel_set_tof(self->side_panel, tof);
  if (self->dataset)
    tl_window_apply_data_settings(self, set);
  if (g_variant_lookup(set, "filter", "&s", &filter)) {
    TlFilter f = {TL_FILTER_NONE, 0};
    g_variant_lookup(set, "filter-every", "u", &every);
    if (tl_filter_parse(filter, &f, NULL)) tl_side_panel_set_filter(self->side_panel, &f, every);
  }
  const char *panel = NULL;
  if (g_variant_lookup(set, "panel", "&s", &panel) && g_str_equal(panel, "corrections"))
    tl_side_panel_show_corrections(self->side_panel);
  gboolean expand = FALSE;
  if (g_variant_lookup(set, "profile", "b", &expand))
    tl_profile_view_set_expanded(self->profile_view, expand);
  /* edited kernels (NAME=FILE.comp), installed before the run is made */
  g_autofree const char **kernels = NULL;
  if (self->ctx && g_variant_lookup(set, "kernel", "^a&s", &kernels))
    for (guint i = 0; kernels[i]; i++) {
      const char *eq = strchr(kernels[i], '=');
      g_autofree char *name = eq ? g_strndup(kernels[i], eq - kernels[i]) : NULL;
      g_autofree char *text = NULL;
      g_autoptr(GError) error = NULL;
      if (!name || !g_file_get_contents(eq + 1, &text, NULL, &error) ||
          !tl_kernel_compile(self->ctx, name, text, NULL, &error)) {
        if (!error)
          g_set_error(&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                      "--set kernel=%s: expected NAME=FILE", kernels[i]);
        tl_window_show_error(self, "Kernel", error);
      }
    }
}

void tl_window_start_demo(TlWindow *self, double events, guint coarsen) {
  self->demo_pending = TRUE;
  self->demo_events = events;
  self->demo_coarsen = coarsen;
  if (self->state == TL_WINDOW_READY)
    show_context(self);
}

/* ---- Replacing a live run ----------------------------------------------------------- */

/* A run with work under way or resumable: a new dataset would discard it. An opened
 * image (nothing to step) and a stopped or finished run are replaced without asking. */
static gboolean run_is_live(TlWindow *self) {
  return self->runner && tl_document_iterative(self->dataset) &&
         (self->run_state == TL_RUN_RUNNING || self->run_state == TL_RUN_PAUSED);
}

static void clear_replace(TlWindow *self) {
  GtkWidget *dialog = g_steal_pointer(&self->replace_dialog);
  if (dialog) {
    g_signal_handlers_disconnect_by_data(dialog, self);
    gtk_window_destroy(GTK_WINDOW(dialog));  /* a no-op once the dialog closed itself */
  }
  g_clear_pointer(&self->replace_simulate, g_variant_unref);
  g_clear_pointer(&self->replace_path, g_free);
}

/* The answer to the pending question: Replace goes ahead, Cancel leaves all as it was. */
static void answer_replace(TlWindow *self, gboolean replace) {
  g_autoptr(GVariant) params = g_steal_pointer(&self->replace_simulate);
  g_autofree char *path = g_steal_pointer(&self->replace_path);
  clear_replace(self);
  if (replace && params)
    simulate(self, params, FALSE);
  else if (replace && path)
    tl_window_open_path(self, path);
  tl_window_update_actions(self);
}

static void on_replace_response(AdwMessageDialog *dialog, const char *response, TlWindow *self) {
  if (GTK_WIDGET(dialog) == self->replace_dialog)
    answer_replace(self, g_strcmp0(response, "replace") == 0);
}

/* Asks before `what` replaces the live run; a newer request supersedes a pending one. */
static void ask_replace(TlWindow *self, GVariant *params, const char *path, const char *what) {
  clear_replace(self);
  self->replace_simulate = params ? g_variant_ref_sink(params) : NULL;
  self->replace_path = g_strdup(path);
  GtkWidget *dialog = adw_message_dialog_new(GTK_WINDOW(self), "Replace the current reconstruction?", NULL);
  g_autofree char *state = self->sub_iterations
      ? g_strdup_printf("%s after %u sub-iteration%s", self->run_state == TL_RUN_RUNNING ? "running" : "paused",
                        self->sub_iterations, self->sub_iterations == 1 ? "" : "s")
      : g_strdup(self->run_state == TL_RUN_RUNNING ? "running" : "paused");
  adw_message_dialog_format_body(ADW_MESSAGE_DIALOG(dialog),
      "%s replaces %s; its reconstruction (%s) is discarded.", what, self->dataset->name, state);
  adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", "_Cancel", "replace", "_Replace", NULL);
  adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "replace", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
  adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
  gtk_window_set_destroy_with_parent(GTK_WINDOW(dialog), TRUE);
  g_signal_connect(dialog, "response", G_CALLBACK(on_replace_response), self);
  self->replace_dialog = dialog;
  tl_window_update_actions(self);
  gtk_window_present(GTK_WINDOW(dialog));
}

static void request_simulate(TlWindow *self, GVariant *params) {
  if (!run_is_live(self)) {
    simulate(self, params, FALSE);
    return;
  }
  const char *phantom = "nema", *scanner = "dmi";
  GVariantDict d;
  g_variant_dict_init(&d, params);
  g_variant_dict_lookup(&d, "phantom", "&s", &phantom);
  g_variant_dict_lookup(&d, "scanner", "&s", &scanner);
  g_autofree char *scanner_name = g_path_get_basename(scanner);
  g_autofree char *what = g_strdup_printf("A new simulation (%s on %s)", phantom, scanner_name);
  ask_replace(self, params, NULL, what);
  g_variant_dict_clear(&d);
}

void tl_window_request_open(TlWindow *self, const char *path) {
  if (!run_is_live(self)) {
    tl_window_open_path(self, path);
    return;
  }
  g_autofree char *name = g_path_get_basename(path);
  ask_replace(self, NULL, path, name);
}

GtkWindow *tl_window_get_replace_dialog(TlWindow *self) {
  return self->replace_dialog ? GTK_WINDOW(self->replace_dialog) : NULL;
}

/* ---- Actions ---------------------------------------------------------------------- */

static void act_run(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (self->runner) tl_runner_run(self->runner);
}
static void act_pause(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (self->runner) tl_runner_pause(self->runner);
}
static void act_run_pause(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (!self->runner) return;
  if (self->run_state == TL_RUN_RUNNING) tl_runner_pause(self->runner);
  else tl_runner_run(self->runner);
}
/* After Finished, Step continues: one sub-iteration more than done (docs/workbench.md). */
static void act_step(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (!self->runner) return;
  if (self->run_state == TL_RUN_FINISHED) tl_runner_set_total(self->runner, self->sub_iterations + 1);
  tl_runner_step(self->runner);
}
static void act_stop(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (self->runner) tl_runner_stop(self->runner);
}
static void act_restart(GSimpleAction *a, GVariant *p, gpointer data) {
  tl_window_start_run(data, FALSE);
}
static void act_simulate(GSimpleAction *a, GVariant *p, gpointer data) {
  request_simulate(data, p);
}
static void act_confirm_replace(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  if (self->replace_dialog)
    answer_replace(self, g_variant_get_boolean(p));
}
static void act_simulate_dialog(GSimpleAction *a, GVariant *p, gpointer data) {
  gtk_window_present(GTK_WINDOW(tl_simulate_dialog_new(GTK_WINDOW(data))));
}
static void act_reset_zoom(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  for (int v = 0; v < TL_N_VIEWS; v++)
    tl_slice_view_reset_zoom(self->views[v]);
  tl_slice_view_reset_zoom(tl_projection_view_get_image(self->projection));
}

static void toggle_state(GSimpleAction *a) {
  g_autoptr(GVariant) s = g_action_get_state(G_ACTION(a));
  g_simple_action_set_state(a, g_variant_new_boolean(!g_variant_get_boolean(s)));
}

static void act_show_profiling(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  toggle_state(a);
  g_autoptr(GVariant) s = g_action_get_state(G_ACTION(a));
  gtk_widget_set_visible(GTK_WIDGET(self->profile_view), g_variant_get_boolean(s));
}

static void act_show_mip(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  toggle_state(a);
  g_autoptr(GVariant) s = g_action_get_state(G_ACTION(a));
  self->show_mip = g_variant_get_boolean(s);
  tl_window_update_fourth_pane(self);
  tl_window_request_view(self);
}

gboolean tl_window_wants_mip(TlWindow *self) {
  return self->show_mip && !(self->dataset && self->dataset->ct);
}

void tl_window_update_fourth_pane(TlWindow *self) {
  gboolean ct = self->dataset && self->dataset->ct;
  gtk_widget_set_visible(GTK_WIDGET(self->views[TL_VIEW_MIP]), self->show_mip && !ct);
  gtk_widget_set_visible(GTK_WIDGET(self->projection), self->show_mip && ct);
}

static void act_show_device(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  toggle_state(a);
  g_autoptr(GVariant) s = g_action_get_state(G_ACTION(a));
  if (self->state == TL_WINDOW_READY)
    gtk_stack_set_visible_child_name(self->stack, g_variant_get_boolean(s) ? "device" : tl_window_ready_page(self));
}

static const GActionEntry kActions[] = {
  {"run", act_run, NULL, NULL, NULL, {0}},
  {"pause", act_pause, NULL, NULL, NULL, {0}},
  {"run-pause", act_run_pause, NULL, NULL, NULL, {0}},
  {"step", act_step, NULL, NULL, NULL, {0}},
  {"stop", act_stop, NULL, NULL, NULL, {0}},
  {"restart", act_restart, NULL, NULL, NULL, {0}},
  {"simulate", act_simulate, "a{sv}", NULL, NULL, {0}},
  {"simulate-dialog", act_simulate_dialog, NULL, NULL, NULL, {0}},
  {"lessons", tl_lessons_action_show, NULL, NULL, NULL, {0}},
  {"lesson", tl_lessons_action_start, "s", NULL, NULL, {0}},
  {"confirm-replace", act_confirm_replace, "b", NULL, NULL, {0}},
  {"reset-zoom", act_reset_zoom, NULL, NULL, NULL, {0}},
  {"show-profiling", act_show_profiling, NULL, "false", NULL, {0}},
  {"show-mip", act_show_mip, NULL, "true", NULL, {0}},
  {"show-device", act_show_device, NULL, "false", NULL, {0}},
};

/* ---- View wiring ------------------------------------------------------------------ */

static void on_position(TlSliceView *view, guint i, guint j, guint k, TlWindow *self) {
  self->pos[0] = i;
  self->pos[1] = j;
  self->pos[2] = k;
  for (int v = 0; v < TL_N_VIEWS; v++)
    tl_slice_view_set_position(self->views[v], self->pos);
  tl_window_request_view(self);
}

static void on_levels(TlSliceView *view, double lo, double hi, TlWindow *self) {
  tl_side_panel_set_levels_preset(self->side_panel, TL_LEVELS_MANUAL);
  self->lo = lo;
  self->hi = hi;
  for (int v = 0; v < TL_N_VIEWS; v++)
    tl_slice_view_set_levels(self->views[v], lo, hi);
}

static void on_hover(TlSliceView *view, const char *text, TlWindow *self) {
  gtk_label_set_text(self->hover_label, text);
}

/* The intensity profile along the drawn line, with the truth along the same voxels. */
static void on_line(TlSliceView *view, double c0, double r0, double c1, double r1, TlWindow *self) {
  const guint n = 200;
  double line[4] = {c0, r0, c1, r1};
  g_autofree float *v = g_new(float, n);
  g_autofree double *ijk = g_new(double, 3 * n), *x = g_new(double, n), *y = g_new(double, n);
  if (!self->dataset || tl_slice_view_sample_line(view, line, n, v, ijk) != n)
    return;  /* nothing shown yet */
  double mm0[3], mm1[3];
  tl_image_grid_voxel_centre(&self->dataset->grid, ijk[0], ijk[1], ijk[2], mm0);
  tl_image_grid_voxel_centre(&self->dataset->grid, ijk[3 * (n - 1)], ijk[3 * (n - 1) + 1], ijk[3 * (n - 1) + 2], mm1);
  double len = sqrt((mm1[0] - mm0[0]) * (mm1[0] - mm0[0]) + (mm1[1] - mm0[1]) * (mm1[1] - mm0[1]) +
                    (mm1[2] - mm0[2]) * (mm1[2] - mm0[2]));
  tl_plot_clear(self->line_plot);
  tl_plot_add_series(self->line_plot, "image", &(GdkRGBA){0.98, 0.6, 0.2, 1}, FALSE);
  const char *unit = tl_slice_view_get_unit(view);
  g_autofree char *image_title = g_strdup_printf("image (%s)", unit && unit[0] ? unit : "a.u.");
  tl_plot_set_axis_title(self->line_plot, 0, image_title);
  for (guint i = 0; i < n; i++) {
    x[i] = len * i / (n - 1);
    y[i] = v[i];
  }
  tl_plot_set_series(self->line_plot, 0, x, y, n);
  const TlImage *t = self->dataset->truth;
  if (t && tl_slice_view_get_orientation(view) != TL_VIEW_MIP) {
    tl_plot_add_series(self->line_plot, "truth", &(GdkRGBA){0.8, 0.8, 0.8, 1}, TRUE);
    if (unit && g_str_equal(unit, TL_PET_TRUTH_UNIT)) {
      /* the image is in the truth's units: one axis, the curves comparable */
      tl_plot_set_series_group(self->line_plot, 0, 1);
      tl_plot_set_series_group(self->line_plot, 1, 1);
      tl_plot_set_axis_title(self->line_plot, 0, "activity (" TL_PET_TRUTH_UNIT ")");
      tl_plot_set_axis_title(self->line_plot, 1, "activity (" TL_PET_TRUTH_UNIT ")");
    } else {
      tl_plot_set_axis_title(self->line_plot, 1, "truth (" TL_PET_TRUTH_UNIT ")");
    }
    for (guint i = 0; i < n; i++) {
      guint p[3];
      for (int a = 0; a < 3; a++)
        p[a] = (guint)CLAMP(floor(ijk[3 * i + a]), 0, t->grid.dims[a] - 1);
      y[i] = t->data[p[0] + (gsize)t->grid.dims[0] * (p[1] + (gsize)t->grid.dims[1] * p[2])];
    }
    tl_plot_set_series(self->line_plot, 1, x, y, n);
  }
  memcpy(self->line, line, sizeof line);
  self->line_view = tl_slice_view_get_orientation(view);
}

static void on_panel_changed(TlSidePanel *panel, const char *what, TlWindow *self) {
  if (g_str_equal(what, "display")) {
    for (int v = 0; v < TL_N_VIEWS; v++)
      tl_slice_view_set_colormap(self->views[v], tl_side_panel_get_colormap(panel));
    tl_projection_view_set_colormap(self->projection, tl_side_panel_get_colormap(panel));
    tl_window_auto_levels(self);
  } else if (g_str_equal(what, "iterations")) {
    /* Applies from the next step: the runner stops at the new total. */
    if (self->runner && tl_document_iterative(self->dataset)) {
      TlCtJobOptions ct;
      tl_side_panel_get_ct_options(panel, &ct);
      if (!(self->dataset->ct && g_str_equal(ct.algo, "fdk")))
        tl_runner_set_total(self->runner, tl_side_panel_get_iterations(panel) * tl_side_panel_get_subsets(panel));
    }
  } else if (g_str_equal(what, "prior")) {
    /* Prior, beta, gamma: the running (or paused) job takes them at its next sub-iteration. */
    if (self->runner && tl_document_iterative(self->dataset)) {
      char prior[16];
      double beta, gamma;
      tl_side_panel_get_prior(panel, prior, &beta, &gamma);
      tl_runner_set_prior(self->runner, prior, beta, gamma);
    }
  } else if (tl_window_steer(self)) {
    /* Subsets, algorithm, projector, TOF, filter: a new job from the current image takes
     * over at the next sub-iteration (the convergence plot marks where). */
    g_autofree char *text = g_strdup_printf("New settings apply from sub-iteration %u", self->sub_iterations + 1);
    tl_window_toast(self, text);
  } else if (self->runner && self->sub_iterations > 0 && tl_document_iterative(self->dataset)) {
    /* FDK is one step: a new run. */
    AdwToast *toast = adw_toast_new("The new algorithm settings apply to a new run");
    adw_toast_set_button_label(toast, "Restart");
    adw_toast_set_action_name(toast, "win.restart");
    adw_toast_overlay_add_toast(self->toasts, toast);
  } else if (self->runner && tl_document_iterative(self->dataset)) {
    tl_window_start_run(self, FALSE);  /* nothing computed yet: nothing to lose */
  }
}

static void build_workbench(TlWindow *self) {
  for (int v = 0; v < TL_N_VIEWS; v++) {
    self->views[v] = TL_SLICE_VIEW(tl_slice_view_new(v));
    gtk_grid_attach(self->view_grid, GTK_WIDGET(self->views[v]), v % 2, v / 2, 1, 1);
    g_signal_connect(self->views[v], "position-changed", G_CALLBACK(on_position), self);
    g_signal_connect(self->views[v], "levels-changed", G_CALLBACK(on_levels), self);
    g_signal_connect(self->views[v], "hover", G_CALLBACK(on_hover), self);
    g_signal_connect(self->views[v], "line", G_CALLBACK(on_line), self);
  }
  /* CT: the projections in the MIP's place. */
  self->projection = TL_PROJECTION_VIEW(tl_projection_view_new());
  gtk_widget_set_visible(GTK_WIDGET(self->projection), FALSE);
  gtk_grid_attach(self->view_grid, GTK_WIDGET(self->projection), 1, 1, 1, 1);
  g_signal_connect(tl_projection_view_get_image(self->projection), "hover", G_CALLBACK(on_hover), self);
  self->show_mip = TRUE;
  self->line_view = -1;
  self->convergence = TL_PLOT(tl_plot_new("Convergence", "sub-iteration"));
  self->line_plot = TL_PLOT(tl_plot_new("Line profile (Shift+drag on a view)", "distance along the line (mm)"));
  gtk_box_append(self->plot_box, GTK_WIDGET(self->convergence));
  gtk_box_append(self->plot_box, GTK_WIDGET(self->line_plot));
  tl_window_reset_plots(self);
  g_signal_connect(self->side_panel, "changed", G_CALLBACK(on_panel_changed), self);
}

/* ---- Object ----------------------------------------------------------------------- */

static void tl_window_constructed(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  G_OBJECT_CLASS(tl_window_parent_class)->constructed(object);
  set_state(self, TL_WINDOW_LOADING);
  g_autoptr(GTask) task = g_task_new(self, self->cancellable, load_done, NULL);
  g_task_set_source_tag(task, tl_window_constructed);
  g_task_set_task_data(task, g_strdup(self->selector), g_free);
  g_task_run_in_thread(task, load_thread);
}

TlWindow *tl_window_new(GtkApplication *app, const char *selector) {
  return g_object_new(TL_TYPE_WINDOW, "application", app, "selector", selector, NULL);
}

TlWindowState tl_window_get_state(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), TL_WINDOW_FAILED);
  return self->state;
}

gboolean tl_window_is_settled(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), FALSE);
  return self->state != TL_WINDOW_LOADING && !gtk_stack_get_transition_running(self->stack);
}

TlContext *tl_window_get_context(TlWindow *self) { return self->ctx; }
const GError *tl_window_get_error(TlWindow *self) { return self->error; }
const char *tl_window_get_error_text(TlWindow *self) { return self->error_text; }
TlDevicePanel *tl_window_get_device_panel(TlWindow *self) { return self->device_panel; }
gboolean tl_window_has_run(TlWindow *self) { return self->runner != NULL; }
TlRunState tl_window_get_run_state(TlWindow *self) { return self->run_state; }
guint tl_window_get_sub_iterations(TlWindow *self) { return self->sub_iterations; }
gboolean tl_window_is_busy(TlWindow *self) { return self->busy > 0; }
const char *tl_window_get_dataset_name(TlWindow *self) { return self->dataset ? self->dataset->name : NULL; }
TlSliceView *tl_window_get_slice_view(TlWindow *self, int v) { return self->views[v]; }
TlProjectionView *tl_window_get_projection_view(TlWindow *self) { return self->projection; }
TlProfileView *tl_window_get_profile_view(TlWindow *self) { return self->profile_view; }
TlPlot *tl_window_get_convergence_plot(TlWindow *self) { return self->convergence; }
TlPlot *tl_window_get_line_plot(TlWindow *self) { return self->line_plot; }
TlSidePanel *tl_window_get_side_panel(TlWindow *self) { return self->side_panel; }
const char *tl_window_get_last_error(TlWindow *self) { return self->last_error; }

static void tl_window_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
  TlWindow *self = TL_WINDOW(object);
  switch (id) {
  case PROP_SELECTOR: g_value_set_string(value, self->selector); break;
  case PROP_STATE: g_value_set_enum(value, self->state); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void tl_window_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
  TlWindow *self = TL_WINDOW(object);
  switch (id) {
  case PROP_SELECTOR: self->selector = g_value_dup_string(value); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void tl_window_dispose(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  /* A worker still running keeps the window alive through its GTask; this makes its
   * callback drop the result instead of touching disposed widgets. The runner is joined
   * here: its job uses the context, freed in finalize. */
  g_cancellable_cancel(self->cancellable);
  clear_replace(self);
  g_clear_pointer(&self->runner, tl_runner_free);
  g_clear_pointer(&self->retired, g_ptr_array_unref);
  g_clear_pointer(&self->open_pending, g_free);
  tl_window_kernels_dispose(self);
  tl_window_data_dispose(self);
  g_clear_pointer(&self->start_image, tl_image_free);
  tl_window_measure_dispose(self);
  tl_window_progress_dispose(self);
  gtk_widget_dispose_template(GTK_WIDGET(self), TL_TYPE_WINDOW);
  G_OBJECT_CLASS(tl_window_parent_class)->dispose(object);
}

static void tl_window_finalize(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  g_clear_pointer(&self->dataset, tl_document_unref);
  g_clear_pointer(&self->ctx, tl_context_free);
  g_clear_pointer(&self->devices, g_array_unref);
  g_clear_error(&self->error);
  g_free(self->error_text);
  g_free(self->last_error);
  g_free(self->selector);
  g_object_unref(self->cancellable);
  tl_window_progress_finalize(self);
  G_OBJECT_CLASS(tl_window_parent_class)->finalize(object);
}

static void tl_window_class_init(TlWindowClass *klass) {
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
  object_class->constructed = tl_window_constructed;
  object_class->get_property = tl_window_get_property;
  object_class->set_property = tl_window_set_property;
  object_class->dispose = tl_window_dispose;
  object_class->finalize = tl_window_finalize;

  props[PROP_SELECTOR] = g_param_spec_string("selector", NULL, NULL, NULL,
      G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  props[PROP_STATE] = g_param_spec_enum("state", NULL, NULL, TL_TYPE_WINDOW_STATE, TL_WINDOW_LOADING,
      G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(object_class, N_PROPS, props);
  signals[SIG_FRAME] = g_signal_new("frame", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
      NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_BOOLEAN);

  g_type_ensure(TL_TYPE_DEVICE_PANEL);
  g_type_ensure(TL_TYPE_SIDE_PANEL);
  g_type_ensure(TL_TYPE_PROFILE_VIEW);
  gtk_widget_class_set_template_from_resource(widget_class, "/org/tomolab/Tomolab/ui/tl-window.ui");
  gtk_widget_class_bind_template_child(widget_class, TlWindow, window_title);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, stack);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, spinner);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, error_page);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, error_devices);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, device_panel);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, toasts);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, run_button);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, side_panel);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, view_grid);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, profile_view);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, plot_box);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, status_label);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, hover_label);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, recent_section);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, progress_box);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, progress_bar);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, progress_label);

  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_space, 0, "win.run-pause", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "win.stop", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_o, GDK_CONTROL_MASK, "win.open", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_n, GDK_CONTROL_MASK, "win.simulate-dialog", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_s, GDK_CONTROL_MASK, "win.save-image", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_e, GDK_CONTROL_MASK, "win.export-view", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_p, GDK_CONTROL_MASK, "win.show-profiling", NULL);
  gtk_widget_class_add_binding_action(widget_class, GDK_KEY_0, GDK_CONTROL_MASK, "win.reset-zoom", NULL);
}

/* Ctrl+Right steps. GtkWindow binds Ctrl+arrows to focus moves, and a class's own bindings
 * come after its parent's, so it is caught on the way down (capture) - except in a text
 * field, where it moves by a word. */
static gboolean step_key(GtkWidget *widget, GVariant *args, gpointer data) {
  GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(widget));
  if (focus && (GTK_IS_EDITABLE(focus) || GTK_IS_TEXT_VIEW(focus))) return FALSE;
  if (!g_action_group_get_action_enabled(G_ACTION_GROUP(widget), "step")) return FALSE;
  g_action_group_activate_action(G_ACTION_GROUP(widget), "step", NULL);
  return TRUE;
}

static void tl_window_init(TlWindow *self) {
  self->cancellable = g_cancellable_new();
  self->retired = g_ptr_array_new_with_free_func((GDestroyNotify)tl_runner_free);
  gtk_widget_init_template(GTK_WIDGET(self));
  g_action_map_add_action_entries(G_ACTION_MAP(self), kActions, G_N_ELEMENTS(kActions), self);
  build_workbench(self);
  tl_window_measure_init(self);
  tl_window_files_init(self);
  tl_window_kernels_init(self);
  tl_window_data_init(self);
  tl_window_progress_init(self);
  tl_race_view_install(self);
  GtkEventController *keys = gtk_shortcut_controller_new();
  gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE);
  gtk_shortcut_controller_add_shortcut(GTK_SHORTCUT_CONTROLLER(keys),
      gtk_shortcut_new(gtk_keyval_trigger_new(GDK_KEY_Right, GDK_CONTROL_MASK),
                       gtk_callback_action_new(step_key, NULL, NULL)));
  gtk_widget_add_controller(GTK_WIDGET(self), keys);
  tl_window_update_actions(self);
}
