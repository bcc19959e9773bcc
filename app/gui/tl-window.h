/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow: the main window. It opens a Vulkan device on a worker thread, then hosts the
 * workbench: a dataset (simulated or opened on a worker), a TlRunner reconstructing it on
 * another, the slice views, the profiling overlay and the plots. Everything it does is a
 * GAction ("win.*", listed in tl-window.c), which is also how the tests drive it. */
#pragma once
#include <adwaita.h>
#include "tl-compare-view.h"
#include "tl-context.h"
#include "tl-device-panel.h"
#include "tl-plot.h"
#include "tl-profile-view.h"
#include "tl-projection-view.h"
#include "tl-runner.h"
#include "tl-side-panel.h"
#include "tl-slice-view.h"

G_BEGIN_DECLS

typedef enum {
  TL_WINDOW_LOADING,  /* the worker thread is still creating the TlContext */
  TL_WINDOW_READY,    /* a context is open and its info is shown */
  TL_WINDOW_FAILED,   /* no context: the error page is shown */
} TlWindowState;

#define TL_TYPE_WINDOW_STATE (tl_window_state_get_type())
GType tl_window_state_get_type(void);

#define TL_TYPE_WINDOW (tl_window_get_type())
G_DECLARE_FINAL_TYPE(TlWindow, tl_window, TL, WINDOW, AdwApplicationWindow)

/* `app` may be NULL (tests); `selector` as for tl_context_new (NULL = default). */
TlWindow *tl_window_new(GtkApplication *app, const char *selector);

TlWindowState tl_window_get_state(TlWindow *self);
/* TRUE once loading is over and the page transition has finished (safe to screenshot). */
gboolean tl_window_is_settled(TlWindow *self);
/* The open context (READY) or NULL; owned by the window. */
TlContext *tl_window_get_context(TlWindow *self);
/* Why the context could not be created (FAILED) or NULL. */
const GError *tl_window_get_error(TlWindow *self);
/* Text shown on the error page below the title (message and hint). */
const char *tl_window_get_error_text(TlWindow *self);
TlDevicePanel *tl_window_get_device_panel(TlWindow *self);

/* Workbench. Signal "frame" (gboolean new_sub_iteration) after each frame is shown. */
gboolean tl_window_has_run(TlWindow *self);
TlRunState tl_window_get_run_state(TlWindow *self);   /* meaningful when has_run */
guint tl_window_get_sub_iterations(TlWindow *self);
/* Simulation or loading in progress on a worker. */
gboolean tl_window_is_busy(TlWindow *self);
/* The dataset's name (file name or simulation), NULL without one. */
const char *tl_window_get_dataset_name(TlWindow *self);
TlSliceView *tl_window_get_slice_view(TlWindow *self, int view /* TL_VIEW_* */);
TlProfileView *tl_window_get_profile_view(TlWindow *self);
/* CT data: one projection with a view slider, shown in the MIP's place. */
TlProjectionView *tl_window_get_projection_view(TlWindow *self);
TlPlot *tl_window_get_convergence_plot(TlWindow *self);
TlPlot *tl_window_get_line_plot(TlWindow *self);
TlSidePanel *tl_window_get_side_panel(TlWindow *self);
/* The kernel editor win.edit-kernel opened (NULL if none is open); tl-kernel-editor.h. */
typedef struct _TlKernelEditor TlKernelEditor;
TlKernelEditor *tl_window_get_kernel_editor(TlWindow *self);
/* The data view win.show-data opened (NULL if none); tl-data-view.h. */
typedef struct _TlDataView TlDataView;
TlDataView *tl_window_get_data_view(TlWindow *self);
/* The last error shown in the window (toast), NULL if none. */
const char *tl_window_get_last_error(TlWindow *self);
/* The progress bar of a long step (a sensitivity image, SSS, a file's load): whether it is
 * shown, and its fraction (< 0: none shown, or its total not known yet). */
gboolean tl_window_progress_shown(TlWindow *self);
double tl_window_get_progress_fraction(TlWindow *self);
/* The pending "Replace the current reconstruction?" dialog (an AdwMessageDialog: a new
 * dataset was asked for while a run is running or paused), NULL when none; answered by
 * its buttons or win.confirm-replace (b). */
GtkWindow *tl_window_get_replace_dialog(TlWindow *self);
/* Opens a dataset file (the command line, a file manager's "Open with"): now when the device
 * is ready, else as soon as it is. A file that cannot be read shows a readable error and the
 * previous dataset stays. */
void tl_window_open_file(TlWindow *self, const char *path);
/* Measuring (tl-window-measure.c): the statistics of ROI i in the last frame that had them
 * (FALSE: none yet); the NEMA analysis of the last frame (FALSE: not a NEMA phantom or none
 * yet) and its ROIs; the contrast-recovery vs noise plot (a series per run). */
gboolean tl_window_get_roi_stats(TlWindow *self, guint i, TlRoiStats *out);
gboolean tl_window_get_nema(TlWindow *self, TlNemaResult *out);
const TlNemaLayout *tl_window_get_nema_layout(TlWindow *self);
TlPlot *tl_window_get_contrast_plot(TlWindow *self);
void tl_window_add_roi(TlWindow *self, const TlRoi *roi);
/* Snapshots (win.snapshot-keep) and the comparison window (win.compare; NULL before). */
TlSnapshot *tl_window_get_snapshot(TlWindow *self, const char *name);
guint tl_window_get_n_snapshots(TlWindow *self);
TlCompareView *tl_window_get_compare_view(TlWindow *self);
/* Starts the demo once the device is open: NEMA on the DMI preset, OSEM (2 subsets, 3
 * iterations) running. */
void tl_window_start_demo(TlWindow *self, double events, guint coarsen);
/* Settings for the demo's run, as the side panel would take them (a{sv}: algo s, subsets u,
 * iterations u, prior s, beta d, projector s, tof b, attenuation b, filter s, filter-every u). */
void tl_window_set_demo_settings(TlWindow *self, GVariant *settings);
void tl_window_apply_settings(TlWindow *self, GVariant *settings);

G_END_DECLS
