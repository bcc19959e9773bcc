/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlApplication: options, app actions and the --screenshot run. */
#include "tl-application.h"
#include <math.h>
#include <string.h>
#include "tl-screenshot.h"
#include "tl-headless.h"
#include "tl-window.h"
#include "tl-data-view.h"
#include "pet/correct/tl-units.h"
#include "dataset/tl-dataset.h"

#ifndef TL_VERSION
#define TL_VERSION "0.0.0"
#endif

/* A screenshot run that never settles (a hung driver) must still end. */
#define TL_SCREENSHOT_TIMEOUT_S 600  /* a demo with a cold sensitivity cache takes minutes on lavapipe */
#define TL_SCREENSHOT_WIDTH 1280
#define TL_SCREENSHOT_HEIGHT 900

struct _TlApplication {
  AdwApplication parent_instance;
  char *device;       /* --device SELECTOR */
  char *screenshot;   /* --screenshot FILE.png */
  gulong shot_handler; /* the frame clock's after-paint that saves it */
  TlWindow *shot_window;
  guint shot_tries;
  int shot_width, shot_height; /* --window-size WxH (0: the default) */
  char *data_shot;    /* --data-screenshot FILE.png: the data view too */
  gboolean demo;      /* --demo (implied by --iterations) */
  int iterations;     /* --iterations N: screenshot after N sub-iterations */
  double demo_events;
  int demo_coarsen;
  int exit_status;
  guint settled_frames;
  guint timeout_s;
  gboolean opened; /* files were given (command line, "Open with") */
  GVariant *settings; /* --set, a{sv} */
};

G_DEFINE_FINAL_TYPE(TlApplication, tl_application, ADW_TYPE_APPLICATION)

static const GOptionEntry kOptions[] = {
  {"device", 'd', 0, G_OPTION_ARG_STRING, NULL,
   "Vulkan device to use: index or name substring (default: $TOMOLAB_DEVICE, else the best)", "SELECTOR"},
  {"screenshot", 0, 0, G_OPTION_ARG_FILENAME, NULL,
   "Save the window as a PNG once the device is shown, then quit", "FILE.png"},
  {"window-size", 0, 0, G_OPTION_ARG_STRING, NULL,
   "With --screenshot: the window's size (default 1280x900)", "WxH"},
  {"data-screenshot", 0, 0, G_OPTION_ARG_FILENAME, NULL,
   "With --screenshot: also save the data view (sinogram, expected, residual) as a PNG", "FILE.png"},
  {"demo", 0, 0, G_OPTION_ARG_NONE, NULL,
   "Simulate the NEMA phantom on the DMI preset and start OSEM", NULL},
  {"iterations", 0, 0, G_OPTION_ARG_INT, NULL,
   "With --screenshot: shoot after N sub-iterations of the demo (implies --demo) or of the "
   "file opened", "N"},
  {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, NULL,
   "With --demo or a FILE: a setting of the run (repeatable): algo=NAME, subsets=N, "
   "iterations=N, prior=NAME, beta=B, projector=NAME, centre=COLUMN (CT), tof=1, "
   "attenuation=1|MU.nii, "
   "norm=FILE.tln, randoms=delayeds|singles|FILE|off, scatter=sss|FILE.tlsc|off, scatter-rounds=N, "
   "scatter-restart=1, "
   "calibration=F, isotope=NAME, frame-start=S, duration=S (images in Bq/mL), "
   "filter=SPEC, filter-every=N, "
   "kernel=NAME=FILE.comp, profile=1 (the profiling table open), panel=corrections (the side "
   "panel scrolled to its Corrections group)", "KEY=VALUE"},
  {"demo-events", 0, 0, G_OPTION_ARG_DOUBLE, NULL, "Events the demo simulates (default: the dataset layer's, 1e6)", "N"},
  {"demo-coarsen", 0, 0, G_OPTION_ARG_INT, NULL,
   "Demo grid voxels N times the DMI reference grid's (default 2)", "N"},
  {"run", 0, 0, G_OPTION_ARG_FILENAME, NULL,
   "Without a window: run a run file (or an image's JSON sidecar) through the window's own job "
   "code to its end, write its output image and sidecar, and quit", "FILE"},
  {"output", 'o', 0, G_OPTION_ARG_FILENAME, NULL, "With --run: the image to write (over the "
   "run's output key)", "IMAGE"},
  {"race", 0, 0, G_OPTION_ARG_FILENAME, NULL,
   "Without a window: run a race file (tomolab-cli race --race's keys) through the Race "
   "window's own job, write its CSV, and quit", "FILE"},
  {"csv", 0, 0, G_OPTION_ARG_FILENAME, NULL, "With --race: the CSV to write (over the race's "
   "csv key)", "FILE"},
  {"version", 0, 0, G_OPTION_ARG_NONE, NULL, "Print the version and quit", NULL},
  {NULL},
};

int tl_application_get_exit_status(TlApplication *self) {
  return self->exit_status;
}

static gboolean data_shot_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer user_data);

static void shoot_after_paint(GdkFrameClock *clock, TlApplication *self) {
  g_autoptr(GError) error = NULL;
  gboolean saved = tl_widget_save_png(GTK_WIDGET(self->shot_window), self->screenshot, &error);
  /* a paint that skipped the window (never seen): try the next few before failing */
  if (!saved && ++self->shot_tries < 5) {
    gtk_widget_queue_draw(GTK_WIDGET(self->shot_window));
    return;
  }
  g_signal_handler_disconnect(clock, self->shot_handler);
  self->shot_handler = 0;
  if (saved) {
    g_print("Saved %s\n", self->screenshot);
  } else {
    g_printerr("tomolab: %s\n", error->message);
    self->exit_status = 1;
  }
  g_application_quit(G_APPLICATION(self));
}

static void finish_screenshot(TlApplication *self, TlWindow *win) {
  g_autoptr(GError) error = NULL;
  /* the data view first: it settles on its own (histogram, then the expected plane) */
  if (self->data_shot && tl_window_get_state(win) == TL_WINDOW_READY) {
    if (!tl_window_get_data_view(win)) {
      g_action_group_activate_action(G_ACTION_GROUP(win), "show-data", NULL);
      TlDataView *dv = tl_window_get_data_view(win);
      gtk_window_set_default_size(GTK_WINDOW(dv), TL_SCREENSHOT_WIDTH, 560);
      self->settled_frames = 0;
      gtk_widget_add_tick_callback(GTK_WIDGET(dv), data_shot_tick, self, NULL);
      return;
    }
  }
  /* The error page is saved too, but a script making screenshots must see the failure. */
  if (tl_window_get_state(win) == TL_WINDOW_FAILED) {
    g_printerr("tomolab: %s\n", tl_window_get_error(win)->message);
    self->exit_status = 1;
  } else if (self->opened && tl_window_get_last_error(win)) {
    g_printerr("tomolab: %s\n", tl_window_get_last_error(win));
    self->exit_status = 1;
  }
  /* Shot right after the next paint: the tick callback runs before layout and paint, and a
   * frame of the run arriving since the last paint has dropped the window's render node, so
   * shooting there saved nothing ("The widget drew nothing", 1 run in 10 on an opened image). */
  GdkFrameClock *clock = gtk_widget_get_frame_clock(GTK_WIDGET(win));
  self->shot_handler = g_signal_connect(clock, "after-paint", G_CALLBACK(shoot_after_paint), self);
  self->shot_window = win;
  gtk_widget_queue_draw(GTK_WIDGET(win));
}

/* The data view: shot once its histogram is made and, with a run, an expected plane came. */
static gboolean data_shot_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer user_data) {
  TlApplication *self = user_data;
  TlDataView *dv = TL_DATA_VIEW(widget);
  TlWindow *win = TL_WINDOW(gtk_window_get_transient_for(GTK_WINDOW(dv)));
  gboolean ready = !tl_data_view_is_busy(dv) && tl_data_view_get_total(dv) >= 0 &&
                   (!tl_window_has_run(win) || tl_window_get_sub_iterations(win) == 0 ||
                    tl_data_view_get_expected_updates(dv) > 0);
  if (!ready) {
    self->settled_frames = 0;
    if (!tl_data_view_is_busy(dv) && tl_data_view_get_total(dv) >= 0)
      tl_data_view_update(dv); /* no frame came since it opened: ask */
    return G_SOURCE_CONTINUE;
  }
  if (++self->settled_frames < 3)
    return G_SOURCE_CONTINUE;
  g_autoptr(GError) error = NULL;
  /* the planes as drawn (a second toplevel's own paintable draws nothing under xvfb) */
  if (tl_data_view_save_png(dv, self->data_shot, &error)) {
    g_print("Saved %s\n", self->data_shot);
  } else {
    g_printerr("tomolab: %s\n", error->message);
    self->exit_status = 1;
  }
  g_clear_pointer(&self->data_shot, g_free);
  finish_screenshot(self, win);
  return G_SOURCE_REMOVE;
}

/* Called each frame: waits for the loading to end and the page transition to finish,
 * then two more frames so the final layout has been drawn once. */
static gboolean screenshot_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer user_data) {
  TlApplication *self = user_data;
  if (!tl_window_is_settled(TL_WINDOW(widget)))
    return G_SOURCE_CONTINUE;
  /* A failed run never reaches N: shoot what the window shows (the error) instead. */
  TlWindow *win = TL_WINDOW(widget);
  /* --iterations with a file: its run is prepared paused; start it once */
  if (self->opened && self->iterations > 0 && tl_window_has_run(win) &&
      tl_window_get_run_state(win) == TL_RUN_PAUSED &&
      tl_window_get_sub_iterations(win) < (guint)self->iterations) {
    g_action_group_activate_action(G_ACTION_GROUP(win), "run", NULL);
    self->settled_frames = 0;
    return G_SOURCE_CONTINUE;
  }
  if (self->iterations > 0 && tl_window_get_state(win) == TL_WINDOW_READY &&
      tl_window_get_sub_iterations(win) < (guint)self->iterations &&
      !(tl_window_has_run(win) && tl_window_get_run_state(win) >= TL_RUN_FINISHED) &&
      !(!tl_window_has_run(win) && !tl_window_is_busy(win) && tl_window_get_last_error(win))) {
    self->settled_frames = 0;
    return G_SOURCE_CONTINUE;
  }
  /* a file named on the command line: shoot it loaded (or its error shown), its slices in
   * the views (they come with the run's first frame, after the loading ends) */
  if (self->opened && (tl_window_is_busy(win) ||
                       (tl_window_has_run(win) && !tl_window_get_last_error(win) &&
                        !tl_slice_view_get_texture(tl_window_get_slice_view(win, TL_VIEW_AXIAL))))) {
    self->settled_frames = 0;
    return G_SOURCE_CONTINUE;
  }
  if (++self->settled_frames < 3)
    return G_SOURCE_CONTINUE;
  finish_screenshot(self, TL_WINDOW(widget));
  return G_SOURCE_REMOVE;
}

static gboolean screenshot_timeout(gpointer user_data) {
  TlApplication *self = user_data;
  g_printerr("tomolab: the window did not settle within %u s; no screenshot\n", self->timeout_s);
  self->exit_status = 1;
  g_application_quit(G_APPLICATION(self));
  return G_SOURCE_REMOVE;
}

static void tl_application_activate(GApplication *app) {
  TlApplication *self = TL_APPLICATION(app);
  GtkWindow *win = gtk_application_get_active_window(GTK_APPLICATION(app));
  if (!win) {
    win = GTK_WINDOW(tl_window_new(GTK_APPLICATION(app), self->device));
    /* --iterations alone runs the demo; with a file it runs the file */
    if (self->settings)
      tl_window_set_demo_settings(TL_WINDOW(win), g_variant_ref(self->settings));
    if (self->demo || (self->iterations > 0 && !self->opened))
      tl_window_start_demo(TL_WINDOW(win), self->demo_events, (guint)self->demo_coarsen);
    if (self->screenshot) {
      /* Tall enough that the documentation screenshot shows every group unscrolled. */
      gtk_window_set_default_size(win, self->shot_width ? self->shot_width : TL_SCREENSHOT_WIDTH,
                                  self->shot_height ? self->shot_height : TL_SCREENSHOT_HEIGHT);
      gtk_widget_add_tick_callback(GTK_WIDGET(win), screenshot_tick, self, NULL);
      /* TOMOLAB_SCREENSHOT_TIMEOUT=S: longer, for a cold sensitivity image of a large scanner */
      const char *t = g_getenv("TOMOLAB_SCREENSHOT_TIMEOUT");
      guint64 secs = TL_SCREENSHOT_TIMEOUT_S;
      if (t && !g_ascii_string_to_unsigned(t, 10, 1, 86400, &secs, NULL))
        secs = TL_SCREENSHOT_TIMEOUT_S;
      self->timeout_s = (guint)secs;
      g_timeout_add_seconds((guint)secs, screenshot_timeout, self);
    }
  }
  gtk_window_present(win);
}

/* `tomolab FILE` and a file manager's "Open with" (the desktop file advertises the types):
 * the window opens the last file named once its device is ready. */
static void tl_application_open(GApplication *app, GFile **files, int n_files, const char *hint) {
  TlApplication *self = TL_APPLICATION(app);
  self->opened = n_files > 0; /* before activate: no demo then */
  tl_application_activate(app);
  GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app));
  if (!TL_IS_WINDOW(active) || n_files < 1)
    return;
  /* one dataset at a time: the last file wins, as if opened one after the other */
  g_autofree char *path = g_file_get_path(files[n_files - 1]);
  if (!path) { /* a URI with no local path (sftp://...): a readable error */
    g_autofree char *uri = g_file_get_uri(files[n_files - 1]);
    path = g_strdup(uri);
  }
  tl_window_open_file(TL_WINDOW(active), path);
}

static gboolean is_flag(const char *v) {
  return g_str_equal(v, "1") || g_str_equal(v, "0") || g_str_equal(v, "true") || g_str_equal(v, "false");
}

/* A file named in --set, absolute (the run reads it later); the array owns the string. */
static const char *path_arg(const char *v, GPtrArray **paths) {
  char *p = g_canonicalize_filename(v, NULL);
  g_ptr_array_add(*paths, p);
  return p;
}

static gint tl_application_handle_local_options(GApplication *app, GVariantDict *options) {
  TlApplication *self = TL_APPLICATION(app);
  if (g_variant_dict_contains(options, "version")) {
    g_print("tomolab %s\n", TL_VERSION);
    return 0;
  }
  g_autofree char *run = NULL, *output = NULL;
  g_variant_dict_lookup(options, "output", "^ay", &output);
  if (g_variant_dict_lookup(options, "run", "^ay", &run)) { /* before GTK: no display needed */
    g_autofree char *device = NULL;
    g_variant_dict_lookup(options, "device", "s", &device);
    return tl_headless_run(run, output, device);
  }
  g_autofree char *race = NULL, *csv = NULL;
  g_variant_dict_lookup(options, "csv", "^ay", &csv);
  if (g_variant_dict_lookup(options, "race", "^ay", &race)) { /* before GTK, as --run */
    g_autofree char *device = NULL;
    g_variant_dict_lookup(options, "device", "s", &device);
    return tl_headless_race(race, csv, device);
  }
  if (csv) {
    g_printerr("tomolab: --csv needs --race\n");
    return 1;
  }
  if (output) {
    g_printerr("tomolab: --output needs --run\n");
    return 1;
  }
  g_variant_dict_lookup(options, "device", "s", &self->device);
  g_variant_dict_lookup(options, "screenshot", "^ay", &self->screenshot);
  g_variant_dict_lookup(options, "data-screenshot", "^ay", &self->data_shot);
  if (self->data_shot && !self->screenshot) {
    g_printerr("tomolab: --data-screenshot needs --screenshot\n");
    return 1;
  }
  const char *size = NULL;
  if (g_variant_dict_lookup(options, "window-size", "&s", &size)) {
    char *end = NULL;
    guint64 w = g_ascii_strtoull(size, &end, 10), h = end && *end == 'x' ? g_ascii_strtoull(end + 1, &end, 10) : 0;
    if (!self->screenshot || *end || w < 320 || h < 240 || w > 8192 || h > 8192) {
      g_printerr("tomolab: --window-size %s: expected WxH between 320x240 and 8192x8192, with --screenshot\n", size);
      return 1;
    }
    self->shot_width = (int)w;
    self->shot_height = (int)h;
  }
  self->demo = g_variant_dict_contains(options, "demo");
  g_autofree const char **sets = NULL;
  if (g_variant_dict_lookup(options, "set", "^a&s", &sets)) {
    GVariantDict d;
    g_variant_dict_init(&d, NULL);
    GPtrArray *kernels = g_ptr_array_new();
    GPtrArray *paths = g_ptr_array_new_with_free_func(g_free); /* absolute file names, kept here */
    for (guint i = 0; sets[i]; i++) {
      const char *eq = strchr(sets[i], '=');
      g_autofree char *key = eq ? g_strndup(sets[i], eq - sets[i]) : g_strdup(sets[i]);
      const char *v = eq ? eq + 1 : "";
      guint64 u = 0;
      double x = 0;
      char *end = NULL;
      gboolean ok = eq != NULL;
      if (ok && (g_str_equal(key, "algo") || g_str_equal(key, "prior") ||
                 g_str_equal(key, "projector") || g_str_equal(key, "filter")))
        g_variant_dict_insert(&d, key, "s", v);
      else if (ok && (g_str_equal(key, "subsets") || g_str_equal(key, "iterations") ||
                      g_str_equal(key, "filter-every")))
        ok = g_ascii_string_to_unsigned(v, 10, 1, 100000, &u, NULL),
        g_variant_dict_insert(&d, key, "u", (guint)u);
      else if (ok && g_str_equal(key, "centre")) /* CT parallel beam: the axis's column */
        ok = (x = g_ascii_strtod(v, &end), end && end != v && !*end && x >= 0 && isfinite(x)),
        g_variant_dict_insert(&d, key, "d", x);
      else if (ok && g_str_equal(key, "beta"))
        ok = (x = g_ascii_strtod(v, &end), end && !*end && x >= 0 && isfinite(x)),
        g_variant_dict_insert(&d, key, "d", x);
      else if (ok && g_str_equal(key, "attenuation") && !is_flag(v)) /* a mu-map file */
        g_variant_dict_insert(&d, "mu", "s", path_arg(v, &paths));
      else if (ok && (g_str_equal(key, "tof") || g_str_equal(key, "attenuation") ||
                      g_str_equal(key, "profile") || g_str_equal(key, "scatter-restart")))
        ok = is_flag(v), g_variant_dict_insert(&d, key, "b", g_str_equal(v, "1") || g_str_equal(v, "true"));
      else if (ok && g_str_equal(key, "norm") && *v)
        g_variant_dict_insert(&d, key, "s", path_arg(v, &paths));
      else if (ok && (g_str_equal(key, "randoms") || g_str_equal(key, "scatter")) && *v) {
        /* randoms=1 (older scripts) is the delayeds; 0 / false / off none; else a file */
        const char *word = g_str_equal(key, "randoms") ? "delayeds" : "sss";
        const char *k = g_str_equal(v, word) || (*word == 'd' && (g_str_equal(v, "1") || g_str_equal(v, "true")))
                            ? word
                        : *word == 'd' && g_str_equal(v, "singles") ? "singles"
                        : g_str_equal(v, "0") || g_str_equal(v, "false") || g_str_equal(v, "off") ? "off"
                                                                                               : NULL;
        g_variant_dict_insert(&d, key, "s", k ? k : path_arg(v, &paths));
      } else if (ok && g_str_equal(key, "scatter-rounds"))
        ok = g_ascii_string_to_unsigned(v, 10, 1, 100, &u, NULL),
        g_variant_dict_insert(&d, key, "u", (guint)u);
      else if (ok && (g_str_equal(key, "calibration") || g_str_equal(key, "duration") ||
                      g_str_equal(key, "frame-start")))
        ok = (x = g_ascii_strtod(v, &end), end && end != v && !*end && isfinite(x) &&
              (g_str_equal(key, "frame-start") ? x >= 0 : x > 0)),
        g_variant_dict_insert(&d, key, "d", x);
      else if (ok && g_str_equal(key, "panel") && g_str_equal(v, "corrections"))
        g_variant_dict_insert(&d, key, "s", v);
      else if (ok && g_str_equal(key, "isotope"))
        ok = tl_isotope_find(v, NULL) != NULL, g_variant_dict_insert(&d, key, "s", v);
      else if (ok && g_str_equal(key, "kernel") && strchr(v, '='))
        g_ptr_array_add(kernels, (gpointer)v);
      else
        ok = FALSE;
      if (!ok) {
        g_printerr("tomolab: --set %s: unknown key or bad value (see --help)\n", sets[i]);
        g_ptr_array_unref(kernels);
        g_ptr_array_unref(paths);
        g_variant_dict_clear(&d);
        return 1;
      }
    }
    /* keys that need another, as the command line's recon says */
    const char *need = NULL;
    if (!g_variant_dict_contains(&d, "calibration") &&
        (g_variant_dict_contains(&d, "isotope") || g_variant_dict_contains(&d, "duration") ||
         g_variant_dict_contains(&d, "frame-start")))
      need = "--set isotope, duration and frame-start need --set calibration=F";
    const char *scatter = NULL;
    g_variant_dict_lookup(&d, "scatter", "&s", &scatter);
    if (g_variant_dict_contains(&d, "scatter-rounds") && g_strcmp0(scatter, "sss") != 0)
      need = "--set scatter-rounds needs --set scatter=sss";
    if (g_variant_dict_contains(&d, "scatter-restart") && g_strcmp0(scatter, "sss") != 0)
      need = "--set scatter-restart needs --set scatter=sss";
    if (need) {
      g_printerr("tomolab: %s\n", need);
      g_ptr_array_unref(kernels);
      g_ptr_array_unref(paths);
      g_variant_dict_clear(&d);
      return 1;
    }
    g_ptr_array_unref(paths);
    if (kernels->len)
      g_variant_dict_insert_value(&d, "kernel",
                                  g_variant_new_strv((const char *const *)kernels->pdata, kernels->len));
    g_ptr_array_unref(kernels);
    self->settings = g_variant_ref_sink(g_variant_dict_end(&d));
  }
  g_variant_dict_lookup(options, "iterations", "i", &self->iterations);
  g_variant_dict_lookup(options, "demo-events", "d", &self->demo_events);
  g_variant_dict_lookup(options, "demo-coarsen", "i", &self->demo_coarsen);
  if (self->demo_events < 0 || self->demo_coarsen < 0) {
    g_printerr("tomolab: --demo-events and --demo-coarsen must be positive\n");
    return 1;
  }
  /* A good reconstruction first (docs/workbench.md): the dataset layer's defaults, 1e6
   * events on voxels twice the DMI grid's, as the Simulate dialog and the CLI take them. */
  if (self->demo_events == 0)
    self->demo_events = TL_DATASET_SIM_EVENTS;
  if (self->demo_coarsen == 0)
    self->demo_coarsen = TL_DATASET_PET_COARSEN;
  /* These runs want their own process and window, not a forward to a running one. */
  if (self->device || self->screenshot || self->demo || self->iterations > 0)
    g_application_set_flags(app, g_application_get_flags(app) | G_APPLICATION_NON_UNIQUE);
  return -1;
}

static void about_activated(GSimpleAction *action, GVariant *param, gpointer user_data) {
  GtkApplication *app = user_data;
  static const char *developers[] = {"The Tomolab developers", NULL};
  GtkWidget *about = adw_about_window_new();
  g_object_set(about,
               "transient-for", gtk_application_get_active_window(app),
               "application-name", "Tomolab",
               "application-icon", TL_APPLICATION_ID,
               "developer-name", "The Tomolab developers",
               "developers", developers,
               "version", TL_VERSION,
               "website", "https://tomolab.org",
               "comments", "A workbench for tomographic reconstruction on Vulkan compute",
               "license-type", GTK_LICENSE_GPL_3_0,
               NULL);
  gtk_window_present(GTK_WINDOW(about));
}

static void quit_activated(GSimpleAction *action, GVariant *param, gpointer user_data) {
  g_application_quit(G_APPLICATION(user_data));
}

static void tl_application_startup(GApplication *app) {
  G_APPLICATION_CLASS(tl_application_parent_class)->startup(app);
  static const GActionEntry actions[] = {
    {"about", about_activated, NULL, NULL, NULL, {0}},
    {"quit", quit_activated, NULL, NULL, NULL, {0}},
  };
  g_action_map_add_action_entries(G_ACTION_MAP(app), actions, G_N_ELEMENTS(actions), app);
  gtk_application_set_accels_for_action(GTK_APPLICATION(app), "app.quit", (const char *[]){"<Ctrl>q", NULL});
  gtk_application_set_accels_for_action(GTK_APPLICATION(app), "window.close", (const char *[]){"<Ctrl>w", NULL});
  /* Follow the system's dark style preference (libadwaita's default, made explicit). */
  adw_style_manager_set_color_scheme(adw_style_manager_get_default(), ADW_COLOR_SCHEME_PREFER_LIGHT);
}

static void tl_application_finalize(GObject *object) {
  TlApplication *self = TL_APPLICATION(object);
  g_free(self->device);
  g_free(self->screenshot);
  g_free(self->data_shot);
  if (self->settings) g_variant_unref(self->settings);
  G_OBJECT_CLASS(tl_application_parent_class)->finalize(object);
}

static void tl_application_class_init(TlApplicationClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = tl_application_finalize;
  G_APPLICATION_CLASS(klass)->startup = tl_application_startup;
  G_APPLICATION_CLASS(klass)->activate = tl_application_activate;
  G_APPLICATION_CLASS(klass)->open = tl_application_open;
  G_APPLICATION_CLASS(klass)->handle_local_options = tl_application_handle_local_options;
}

static void tl_application_init(TlApplication *self) {
  g_application_add_main_option_entries(G_APPLICATION(self), kOptions);
  g_application_set_option_context_summary(G_APPLICATION(self),
      "Tomographic reconstruction workbench (Vulkan compute).");
}

TlApplication *tl_application_new(void) {
  return g_object_new(TL_TYPE_APPLICATION, "application-id", TL_APPLICATION_ID,
                      "flags", G_APPLICATION_DEFAULT_FLAGS | G_APPLICATION_HANDLES_OPEN, NULL);
}
