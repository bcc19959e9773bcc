/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDataView: the data beside the image (issue "see the data"). PET list mode histogrammed into
 * a sinogram (pet/tl-sinogram-hist.h: span 1, a segment per ring difference), one plane at a
 * time (ring difference, axial position): the measured counts, the counts the run's current
 * image predicts (D A x per bin with the run's projector and attenuation, TOF summed) and the
 * residual (measured - expected), with the run's normalisation, randoms and scatter in the
 * expected counts (its TlJobModel), and the plane's profiles summed over views (measured,
 * expected, randoms, scatter) as a plot; the totals say where every event went. CT data: each view's
 * measured projection, the current image re-projected with the run's projector (as counts
 * i0 exp(-p) for count data) and the residual, a view at a time. Histogramming and the
 * expected plane run on workers; the plane is recomputed after each sub-iteration while the
 * window is shown. */
#pragma once
#include <adwaita.h>
#include "tl-dataset.h"
#include "tl-runner.h"

G_BEGIN_DECLS

#define TL_TYPE_DATA_VIEW (tl_data_view_get_type())
G_DECLARE_FINAL_TYPE(TlDataView, tl_data_view, TL, DATA_VIEW, AdwWindow)

/* What the expected plane needs from the window, asked for at each update (main thread):
 * the device, the run (a reference the view drops; NULL: none), the projector, the mu-map the
 * run corrects with (borrowed from the dataset for the call; NULL: none). */
typedef struct {
  TlContext *ctx;
  TlRunner *runner;
  char projector[16];
  TlImage *mu; /* a copy the view owns, or NULL */
} TlDataTarget;
typedef gboolean (*TlDataTargetFunc)(gpointer window, TlDataTarget *target);

TlDataView *tl_data_view_new(GtkWindow *parent, TlDataTargetFunc target, gpointer window);
/* Histograms the dataset's list mode (a worker); other datasets clear the view. */
void tl_data_view_set_dataset(TlDataView *self, TlDocument *d);
/* After a sub-iteration: the expected plane again (a worker; coalesced). */
void tl_data_view_update(TlDataView *self);
/* The plane shown: ring difference and axial position (clamped). */
void tl_data_view_set_plane(TlDataView *self, gint ring_difference, guint axial);
gboolean tl_data_view_is_busy(TlDataView *self);
/* Histogram totals: events in the sinogram, events outside it (ring differences beyond the
 * shown range); -1 before the histogram exists. */
gint64 tl_data_view_get_total(TlDataView *self);
gint64 tl_data_view_get_outside(TlDataView *self);
/* The plane shown (views x tangential positions, row = view): 0 measured, 1 expected (NULL
 * before the first update: PET D A x + randoms + scatter with the run's own model), 2 residual;
 * PET: 3 the randoms alone, 4 the scatter alone (NULL when the model has none). */
const float *tl_data_view_get_plane(TlDataView *self, int which, guint *n_views,
                                    guint *n_tangential);
/* PET: the shown plane summed over views, per tangential position: "measured", "expected (D·A·x
 * + randoms + scatter)", and with them in the model "randoms", "scatter" (one y range). */
typedef struct _TlPlot TlPlot;
TlPlot *tl_data_view_get_profile_plot(TlDataView *self);
guint tl_data_view_get_expected_updates(TlDataView *self);
/* The three planes as drawn (colour map and levels), side by side, into a PNG. */
gboolean tl_data_view_save_png(TlDataView *self, const char *path, GError **error);

G_END_DECLS
