/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's state, shared by tl-window.c (device, runs, frames) and tl-window-files.c
 * (dialogs, open/save/export, recent files, drag and drop). */
#pragma once
#include "tl-compare-view.h"
#include "tl-dataset.h"
#include "tl-projection-view.h"
#include "tl-window.h"
#include "tl-progress.h"

typedef struct _TlWindowProgress TlWindowProgress;

struct _TlWindow {
  AdwApplicationWindow parent_instance;

  AdwWindowTitle *window_title;
  GtkStack *stack;
  GtkSpinner *spinner;
  AdwStatusPage *error_page;
  GtkListBox *error_devices;
  TlDevicePanel *device_panel;
  AdwToastOverlay *toasts;
  GtkButton *run_button;
  TlSidePanel *side_panel;
  GtkGrid *view_grid;
  TlProfileView *profile_view;
  GtkBox *plot_box;
  GtkLabel *status_label, *hover_label;
  GtkWidget *progress_box;    /* a long step's progress (tl-window-progress.c) */
  GtkProgressBar *progress_bar;
  GtkLabel *progress_label;
  guint progress_timer;
  TlWindowProgress *load_progress;
  double progress_fraction;   /* shown; < 0 none or unknown */
  GMenu *recent_section;

  char *selector;
  GCancellable *cancellable;
  TlWindowState state;
  TlContext *ctx;
  GArray *devices;          /* TlDeviceInfo; NULL when enumeration failed */
  GError *error;
  char *error_text;

  /* Workbench */
  TlSliceView *views[TL_N_VIEWS];
  TlProjectionView *projection;  /* CT: in the MIP's place */
  TlPlot *convergence, *line_plot;
  TlDocument *dataset;
  TlRunner *runner;
  GPtrArray *retired;       /* runners told to quit, joined once exited or in dispose */
  TlRunState run_state;
  guint sub_iterations;
  guint busy;               /* simulations / loads in flight */
  guint pos[3];
  gboolean show_mip;
  float lo, hi;
  int line_view;            /* view holding the profile line, -1 none */
  double truth_mean;        /* the simulation's truth's mean (RMSE is plotted as % of it); 0 none */
  double line[4];
  char *last_error;
  gboolean demo_pending;
  char *open_pending; /* a file to open once the device is ready (tl_window_open_file) */
  double demo_events;
  guint demo_coarsen;
  /* A new dataset asked for while a run is live, waiting for the person's answer. */
  GtkWidget *replace_dialog;  /* AdwMessageDialog, NULL when nothing is pending */
  GVariant *replace_simulate; /* a{sv} for win.simulate... */
  char *replace_path;         /* ...or the file to open */

  /* Measuring and comparing (tl-window-measure.c) */
  GArray *rois;               /* TlRoi */
  GArray *roi_last;           /* TlRoiStats of the last frame that had them */
  GArray *roi_history, *nema_history;  /* per sub-iteration, for CSV */
  TlNemaLayout *nema;         /* NEMA phantom datasets, else NULL */
  TlNemaResult nema_last;
  gboolean has_nema;
  TlPlot *contrast_plot;      /* CR vs noise, a series per run */
  guint contrast_series;      /* the current run's */
  guint run_number;           /* runs on this dataset */
  GtkLabel *roi_label;
  GPtrArray *snapshots;       /* TlSnapshot */
  GQueue *snapshot_names;     /* names of snapshots asked for, oldest first */
  GtkWindow *compare_window;
  TlCompareView *compare;
  char *run_settings;         /* what the current run does, for snapshots */
  TlImage *start_image;       /* the next run starts from this (a snapshot's), else NULL */
};

/* tl-window.c */
const char *tl_window_ready_page(TlWindow *self);
void tl_window_show_error(TlWindow *self, const char *context, const GError *error);
void tl_window_toast(TlWindow *self, const char *text);
/* Replaces the dataset (the run is restarted on it, paused unless `run`). */
void tl_window_set_dataset(TlWindow *self, TlDocument *d, gboolean run);
void tl_window_update_actions(TlWindow *self);
/* The side panel's settings as a run (compute/run/tl-run-spec.h): what the window's jobs are
 * made from, and what Save Run writes. *phantom_mu (may be NULL): attenuation by the simulated
 * phantom's mu-map, named by its temporary file (tl_document_mu_file): no file to save a run
 * with. */
TlRunSpec *tl_window_get_run(TlWindow *self, gboolean *phantom_mu, GError **error);
/* The --set keys that depend on the dataset (corrections, units): after it is set. */
void tl_window_apply_data_settings(TlWindow *self, GVariant *set);
/* The colour bars' label for values in `unit` ("" = the dataset's arbitrary units). */
const char *tl_window_unit_label(TlWindow *self, const char *unit);
/* Opens a file as the new dataset; with a run running or paused it asks first. */
void tl_window_request_open(TlWindow *self, const char *path);

/* The fourth pane: the MIP, or for CT data the projection view (win.show-mip shows either). */
void tl_window_update_fourth_pane(TlWindow *self);
/* Whether the runner reads the whole volume back for the MIP. */
gboolean tl_window_wants_mip(TlWindow *self);

/* tl-window-run.c */
/* A new run on the current dataset with the side panel's options (paused unless run). */
void tl_window_start_run(TlWindow *self, gboolean run);
/* Window/level from the side panel's preset and the slices shown. */
void tl_window_auto_levels(TlWindow *self);
/* Tells the runner which slices the views show. */
void tl_window_request_view(TlWindow *self);
void tl_window_reset_plots(TlWindow *self);
/* A new run starting from `image` (a copy is taken), with the side panel's settings. */
void tl_window_start_run_from(TlWindow *self, const TlImage *image, gboolean run);
/* Steering: the side panel's new settings take over the live run at its next sub-iteration. */
gboolean tl_window_steer(TlWindow *self);

/* tl-window-measure.c */
void tl_window_measure_init(TlWindow *self);
void tl_window_measure_dispose(TlWindow *self);
void tl_window_measure_dataset(TlWindow *self);
void tl_window_measure_run_started(TlWindow *self);
void tl_window_measure_frame(TlWindow *self, const TlFrame *f);

/* tl-window-files.c */
void tl_window_files_init(TlWindow *self);
/* tl-window-kernels.c: win.edit-kernel and the kernel editor's lifetime */
void tl_window_kernels_init(TlWindow *self);
void tl_window_kernels_dispose(TlWindow *self);
/* tl-window-data.c: win.show-data, the data view following the dataset and the run */
void tl_window_data_init(TlWindow *self);
void tl_window_data_dispose(TlWindow *self);
/* Runs the main context until busy(obj) is FALSE (at most 120 s): a worker of a secondary window
 * (data view, kernel editor) finishes before the window and its device go. */
void tl_window_wait_idle(gboolean (*busy)(gpointer), gpointer obj);
void tl_window_open_path(TlWindow *self, const char *path);
void tl_window_update_recent(TlWindow *self);

/* tl-window-progress.c: the progress bar of the library's long steps. */
void tl_window_progress_init(TlWindow *self);
void tl_window_progress_dispose(TlWindow *self);
void tl_window_progress_finalize(TlWindow *self);
/* A progress for a load task's thread to push (tl_progress_push); Cancel cancels it. */
TlProgress *tl_window_progress_for_load(TlWindow *self);
