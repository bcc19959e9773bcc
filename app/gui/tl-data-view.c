/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The data view window (tl-data-view.h). */
#include "tl-data-view.h"
#include <math.h>
#include <string.h>
#include "tl-slice-view.h"
#include "tl-plot.h"
#include "tl-screenshot.h"
#include "pet/tl-sinogram-model.h"
#include "ct/tl-ct-projector.h"

/* Sinogram bins the view histograms at most (128 MiB of float): the ring differences shown are
 * cut to fit (the DMI's 36 rings of 544 crystals: 192 million bins for all of them). */
#define TL_DATA_MAX_BINS (G_GUINT64_CONSTANT(1) << 25)

struct _TlDataView {
  AdwWindow parent_instance;
  TlSliceView *views[3];
  GtkSpinButton *rd_spin;
  GtkWidget *rd_label;
  GtkScale *axial_scale;
  GtkLabel *info, *totals;
  TlDataTargetFunc target;
  gpointer window;
  TlDocument *dataset;
  TlSinogram *sino;         /* histogram of the dataset's events */
  gint64 total, outside;
  gint seg;                 /* shown segment (index), -1 none */
  gboolean is_ct;           /* CT: measured projections of a view, not a sinogram */
  guint pw, ph;             /* plane width x height (PET: tangential x views; CT: u x v) */
  guint ax;
  float *planes[3];         /* measured, expected, residual of the shown plane */
  float *additive[2];       /* PET: the expected plane's randoms and scatter alone (NULL: the
                               model has none) */
  TlPlot *profile;          /* PET: the planes summed over views */
  guint busy, updates;
  gboolean dirty;           /* an update was asked for while one ran */
  gboolean disposed;
  guint generation;         /* bumped by set_dataset / set_plane: older results are dropped */
};

G_DEFINE_FINAL_TYPE(TlDataView, tl_data_view, ADW_TYPE_WINDOW)

static const char *const kTitles[3] = {"Measured", "Expected (current image)",
                                       "Residual (measured − expected)"};

static guint plane_size(TlDataView *self) { return self->pw * self->ph; }

static void show_plane(TlDataView *self, int which) {
  if (!self->pw || !self->planes[which]) {
    tl_slice_view_set_slice(self->views[which], NULL);
    return;
  }
  TlSlice s = {self->pw, self->ph, self->planes[which]};
  tl_slice_view_set_slice(self->views[which], &s);
  float lo = INFINITY, hi = -INFINITY;
  for (guint i = 0; i < plane_size(self); i++)
    lo = MIN(lo, self->planes[which][i]), hi = MAX(hi, self->planes[which][i]);
  if (which == 2) hi = MAX(fabsf(lo), fabsf(hi)), lo = -hi; /* residual: symmetric about 0 */
  if (which == 1 && self->planes[0]) { /* expected on the measured levels, to compare */
    for (guint i = 0; i < plane_size(self); i++) hi = MAX(hi, self->planes[0][i]);
    lo = MIN(lo, 0);
  }
  tl_slice_view_set_levels(self->views[which], lo, hi > lo ? hi : lo + 1);
}

/* The profiles of the shown plane summed over views (rows), per tangential position: measured,
 * expected (D A x + randoms + scatter) and the additive parts alone, on one y range. */
static const char *const kProfileNames[4] = {"measured", "expected (D·A·x + randoms + scatter)",
                                              "randoms", "scatter"};

static void update_profile(TlDataView *self) {
  tl_plot_clear(self->profile);
  if (self->is_ct || !self->pw || !self->planes[0]) return;
  static const GdkRGBA colours[4] = {{0.92, 0.92, 0.92, 1}, {0.98, 0.6, 0.2, 1},
                                     {0.35, 0.7, 1.0, 1}, {0.45, 0.85, 0.45, 1}};
  const float *src[4] = {self->planes[0], self->planes[1], self->additive[0], self->additive[1]};
  guint nt = self->pw, nv = self->ph;
  g_autofree double *x = g_new(double, nt), *y = g_new(double, nt);
  gint t0 = -(gint)(nt / 2);
  for (guint t = 0; t < nt; t++) x[t] = t0 + (gint)t;
  for (int k = 0; k < 4; k++) {
    if (!src[k]) continue;
    guint series = tl_plot_add_series(self->profile, kProfileNames[k], &colours[k], k >= 2);
    tl_plot_set_series_group(self->profile, series, 1); /* one y range: they add up */
    tl_plot_set_axis_title(self->profile, series, "counts per bin");
    for (guint t = 0; t < nt; t++) {
      double sum = 0;
      for (guint v = 0; v < nv; v++) sum += src[k][(gsize)v * nt + t];
      y[t] = sum;
    }
    tl_plot_set_series(self->profile, series, x, y, nt);
  }
}

static void update_residual(TlDataView *self) {
  g_clear_pointer(&self->planes[2], g_free);
  if (self->planes[0] && self->planes[1]) {
    self->planes[2] = g_new(float, plane_size(self));
    for (guint i = 0; i < plane_size(self); i++)
      self->planes[2][i] = self->planes[0][i] - self->planes[1][i];
  }
  show_plane(self, 1);
  show_plane(self, 2);
  update_profile(self);
}

static void measured_plane(TlDataView *self) {
  g_clear_pointer(&self->planes[0], g_free);
  g_clear_pointer(&self->planes[1], g_free);
  g_clear_pointer(&self->planes[2], g_free);
  g_clear_pointer(&self->additive[0], g_free);
  g_clear_pointer(&self->additive[1], g_free);
  if (self->is_ct && self->dataset && self->dataset->ct) {
    /* view ax, row 0 on screen the top: the last detector row (as the projection view) */
    const TlCtData *ct = self->dataset->ct;
    guint nu = self->pw, nv = self->ph;
    const float *p = ct->proj + (gsize)self->ax * nu * nv;
    self->planes[0] = g_new(float, (gsize)nu * nv);
    for (guint r = 0; r < nv; r++)
      memcpy(self->planes[0] + (gsize)r * nu, p + (gsize)(nv - 1 - r) * nu, nu * sizeof(float));
    g_autofree char *text = g_strdup_printf("View %u of %u (%s)", self->ax + 1, ct->geometry->n_views,
                                            ct->values == TL_CT_COUNTS ? "counts" : "line integrals");
    gtk_label_set_text(self->info, text);
    show_plane(self, 0);
    update_residual(self);
    return;
  }
  if (!self->sino || self->seg < 0) return;
  const TlSinogram *s = self->sino;
  guint n = plane_size(self), nt = s->n_tangential;
  self->planes[0] = g_new(float, n);
  const float *seg = s->data + tl_sinogram_segment_offset(s, (guint)self->seg);
  for (guint v = 0; v < s->n_views; v++)
    memcpy(self->planes[0] + (gsize)v * nt, seg + ((gsize)v * s->n_axial[self->seg] + self->ax) * nt,
           nt * sizeof(float));
  double sum = 0;
  for (guint i = 0; i < n; i++) sum += self->planes[0][i];
  g_autofree char *text = g_strdup_printf(
      "Ring difference %d, axial position %u: %.0f events in this plane · sinogram total %" G_GINT64_FORMAT
      " events%s", s->min_ring_difference[self->seg], self->ax, sum, self->total,
      self->outside ? "" : " (every event)");
  gtk_label_set_text(self->info, text);
  show_plane(self, 0);
  update_residual(self);
}

/* --- the expected plane, on a worker --- */

typedef struct {
  TlDataTarget target;
  TlSinogram *sino;      /* the geometry (a copy without data: the view may drop its own) */
  TlDocument *dataset;    /* a reference: its scanner */
  const TlScanner *scanner;
  guint seg, ax, generation;
  gboolean ct;           /* CT: view ax of the dataset's geometry re-projected */
  float *out;
  float *additive[2];    /* PET: the randoms and scatter of the plane (NULL: none in the model) */
  GObject *window;
} Expected;

static void expected_free(gpointer p) {
  Expected *e = p;
  if (e->target.runner) tl_runner_unref(e->target.runner);
  if (e->target.mu) tl_image_free(e->target.mu);
  if (e->window) g_object_unref(e->window);
  if (e->sino) tl_sinogram_free(e->sino);
  if (e->dataset) tl_document_unref(e->dataset);
  g_free(e->out);
  g_free(e->additive[0]);
  g_free(e->additive[1]);
  g_free(e);
}

static void expected_thread(GTask *task, gpointer source, gpointer data, GCancellable *c) {
  Expected *e = data;
  GError *error = NULL;
  gboolean ok;
  if (!e->ct) {
    /* PET: the job's own model (the iterate, D, the randoms and the scatter of this
     * sub-iteration), so the residual is measured - everything the model expects */
    TlJobModel m;
    if (!tl_runner_read_model(e->target.runner, &m, &error)) {
      g_task_return_error(task, error);
      return;
    }
    guint n = e->sino->n_views * e->sino->n_tangential;
    e->out = g_new(float, n);
    if (m.randoms) e->additive[0] = g_new(float, n);
    if (m.randoms || m.scatter) e->additive[1] = g_new(float, n); /* 0 until a scatter estimate */
    TlSinogramModel sm = {.projector = m.projector, .mu = m.mu, .norm = m.norm,
                          .randoms = m.randoms, .scatter = m.scatter};
    /* between two sub-iterations, like every other use of the run's device */
    tl_runner_lock_device(e->target.runner);
    ok = tl_sinogram_model_plane(e->target.ctx, e->sino, e->seg, e->ax, e->scanner, m.image, &sm,
                                 e->out, e->additive[0], e->additive[1], &error);
    tl_runner_unlock_device(e->target.runner);
    tl_job_model_clear(&m);
    if (ok) g_task_return_boolean(task, TRUE);
    else g_task_return_error(task, error);
    return;
  }
  g_autoptr(TlImage) x = tl_runner_read_image(e->target.runner, &error);
  if (!x) {
    g_task_return_error(task, error);
    return;
  }
  {
    /* the current image re-projected into view ax: line integrals, or the counts
     * i0 exp(-line integral) the scan holds */
    const TlCtData *ct = e->dataset->ct;
    const TlCtGeometry *g = ct->geometry;
    guint nu = g->det_u, nv = g->det_v;
    g_autofree float *p = g_new(float, (gsize)nu * nv);
    TlCtMethod m = TL_CT_JOSEPH;
    tl_ct_method_from_name(e->target.projector, &m, NULL);
    tl_runner_lock_device(e->target.runner);
    g_autoptr(TlCtProjector) pr = tl_ct_projector_new(e->target.ctx, g, &x->grid, m, &error);
    g_autoptr(TlStream) st = pr ? tl_stream_new(e->target.ctx, &error) : NULL;
    g_autoptr(TlArray) xa = st ? tl_array_new(e->target.ctx, tl_image_grid_n_voxels(&x->grid),
                                              sizeof(float), &error) : NULL;
    TlCtViews views = tl_ct_views_subset(g, e->ax, g->n_views);
    g_autoptr(TlArray) pa = xa ? tl_array_new(e->target.ctx, (guint64)nu * nv, sizeof(float), &error)
                               : NULL;
    ok = pa && tl_array_upload(xa, x->data, &error) &&
         tl_ct_projector_forward(pr, st, &views, xa, pa, FALSE, &error) &&
         tl_stream_finish(st, &error) && tl_array_download(pa, p, &error);
    g_clear_pointer(&pa, tl_array_free);
    g_clear_pointer(&xa, tl_array_free);
    g_clear_pointer(&st, tl_stream_free);
    g_clear_pointer(&pr, tl_ct_projector_free);
    tl_runner_unlock_device(e->target.runner);
    if (ok) {
      e->out = g_new(float, (gsize)nu * nv);
      for (guint r = 0; r < nv; r++)
        for (guint u = 0; u < nu; u++) {
          float v = p[(gsize)(nv - 1 - r) * nu + u];
          e->out[(gsize)r * nu + u] = ct->values == TL_CT_COUNTS ? (float)(ct->i0 * exp(-v)) : v;
        }
    }
  }
  if (ok) g_task_return_boolean(task, TRUE);
  else g_task_return_error(task, error);
}

static void start_expected(TlDataView *self);

/* The geometry alone (the expected plane reads no data; a copy of the data would cost 128 MiB). */
static TlSinogram *geometry_copy(const TlSinogram *s) {
  TlSinogram *c = g_memdup2(s, sizeof *s);
  c->name = g_strdup(s->name);
  c->n_axial = g_memdup2(s->n_axial, sizeof(guint) * s->n_segments);
  c->min_ring_difference = g_memdup2(s->min_ring_difference, sizeof(gint) * s->n_segments);
  c->max_ring_difference = g_memdup2(s->max_ring_difference, sizeof(gint) * s->n_segments);
  c->data = NULL;
  return c;
}

static void expected_done(GObject *source, GAsyncResult *res, gpointer data) {
  TlDataView *self = TL_DATA_VIEW(source);
  Expected *e = g_task_get_task_data(G_TASK(res));
  g_autoptr(GError) error = NULL;
  gboolean ok = g_task_propagate_boolean(G_TASK(res), &error);
  self->busy--;
  if (self->disposed) return;
  if (ok && e->generation == self->generation) {
    g_free(self->planes[1]);
    self->planes[1] = g_steal_pointer(&e->out);
    for (int k = 0; k < 2; k++) {
      g_free(self->additive[k]);
      self->additive[k] = g_steal_pointer(&e->additive[k]);
    }
    self->updates++;
    update_residual(self);
  } else if (!ok) {
    gtk_label_set_text(self->totals, error->message);
  }
  if (self->dirty) {
    self->dirty = FALSE;
    start_expected(self);
  }
}

static void start_expected(TlDataView *self) {
  gboolean ct = self->is_ct && self->dataset && self->dataset->ct;
  if (!ct && (!self->sino || self->seg < 0 || !self->dataset || !self->dataset->lm)) return;
  if (self->busy) {
    self->dirty = TRUE;
    return;
  }
  TlDataTarget t = {0};
  if (!self->target(self->window, &t) || !t.ctx || !t.runner) {
    if (t.runner) tl_runner_unref(t.runner);
    if (t.mu) tl_image_free(t.mu);
    return;
  }
  Expected *e = g_new0(Expected, 1);
  e->target = t;
  e->ct = ct;
  e->sino = ct ? NULL : geometry_copy(self->sino);
  e->dataset = tl_document_ref(self->dataset);
  e->scanner = ct ? NULL : self->dataset->lm->scanner;
  e->seg = (guint)self->seg;
  e->ax = self->ax;
  e->generation = self->generation;
  e->window = g_object_ref(self->window);
  self->busy++;
  GTask *task = g_task_new(self, NULL, expected_done, NULL);
  g_task_set_task_data(task, e, expected_free);
  g_task_run_in_thread(task, expected_thread);
  g_object_unref(task);
}

void tl_data_view_update(TlDataView *self) { start_expected(self); }

/* --- the histogram, on a worker --- */

typedef struct {
  TlDocument *dataset;
  TlSinogram *sino;
  guint64 outside;
  guint generation;
} Histogram;

static void histogram_free(gpointer p) {
  Histogram *h = p;
  tl_document_unref(h->dataset);
  if (h->sino) tl_sinogram_free(h->sino);
  g_free(h);
}

static void histogram_thread(GTask *task, gpointer source, gpointer data, GCancellable *c) {
  Histogram *h = data;
  const TlListmode *lm = h->dataset->lm;
  const TlScanner *sc = lm->scanner;
  GError *error = NULL;
  /* the largest ring difference whose sinogram fits TL_DATA_MAX_BINS */
  guint m = MIN(sc->max_ring_difference, sc->n_rings ? sc->n_rings - 1 : 0);
  guint64 per = (guint64)(sc->crystals_per_ring / 2) * sc->crystals_per_ring;
  while (m > 0) {
    guint64 planes = sc->n_rings;
    for (guint d = 1; d <= m; d++) planes += 2 * (guint64)(sc->n_rings - d);
    if (planes * per <= TL_DATA_MAX_BINS) break;
    m--;
  }
  h->sino = tl_sinogram_new_stir(sc, 1, m, &error);
  if (!h->sino || !tl_sinogram_add_events(h->sino, lm, &h->outside, &error)) {
    g_task_return_error(task, error);
    return;
  }
  g_task_return_boolean(task, TRUE);
}

static void histogram_done(GObject *source, GAsyncResult *res, gpointer data) {
  TlDataView *self = TL_DATA_VIEW(source);
  Histogram *h = g_task_get_task_data(G_TASK(res));
  g_autoptr(GError) error = NULL;
  gboolean ok = g_task_propagate_boolean(G_TASK(res), &error);
  self->busy--;
  if (self->disposed || h->generation != self->generation) return;
  if (!ok) {
    gtk_label_set_text(self->totals, error->message);
    return;
  }
  g_clear_pointer(&self->sino, tl_sinogram_free);
  self->sino = g_steal_pointer(&h->sino);
  self->total = (gint64)(h->dataset->lm->n_events - h->outside);
  self->outside = (gint64)h->outside;
  const TlSinogram *s = self->sino;
  self->pw = s->n_tangential;
  self->ph = s->n_views;
  gint m = s->max_ring_difference[s->n_segments - 1];
  gtk_spin_button_set_range(self->rd_spin, -m, m);
  for (int i = 0; i < 3; i++)
    tl_slice_view_set_detector(self->views[i], s->n_tangential, s->n_views, kTitles[i]);
  g_autofree char *text = g_strdup_printf(
      "%" G_GINT64_FORMAT " of %" G_GUINT64_FORMAT " events in the sinogram (span 1, ring "
      "differences −%d…%d, %u views × %u tangential positions)%s", self->total,
      h->dataset->lm->n_events, m, m, s->n_views, s->n_tangential,
      self->outside ? "; the others have larger ring differences" : "");
  gtk_label_set_text(self->totals, text);
  tl_data_view_set_plane(self, 0, s->n_axial[0] / 2);
}

void tl_data_view_set_dataset(TlDataView *self, TlDocument *d) {
  self->generation++;
  g_clear_pointer(&self->dataset, tl_document_unref);
  g_clear_pointer(&self->sino, tl_sinogram_free);
  self->seg = -1;
  self->total = self->outside = -1;
  self->is_ct = FALSE;
  self->pw = self->ph = 0;
  self->ax = 0;
  measured_plane(self);
  for (int i = 0; i < 3; i++) show_plane(self, i);
  gtk_widget_set_visible(GTK_WIDGET(self->rd_spin), TRUE);
  gtk_widget_set_visible(self->rd_label, TRUE);
  gtk_widget_set_visible(GTK_WIDGET(self->profile), !(d && d->ct));
  if (d && d->ct) {
    /* CT: each view's projection, its re-projection and the residual */
    self->dataset = tl_document_ref(d);
    self->is_ct = TRUE;
    const TlCtGeometry *g = d->ct->geometry;
    self->pw = g->det_u;
    self->ph = g->det_v;
    self->total = (gint64)tl_ct_data_n_values(d->ct);
    self->outside = 0;
    gtk_widget_set_visible(GTK_WIDGET(self->rd_spin), FALSE);
    gtk_widget_set_visible(self->rd_label, FALSE);
    for (int i = 0; i < 3; i++) tl_slice_view_set_detector(self->views[i], g->det_u, g->det_v, kTitles[i]);
    gtk_range_set_range(GTK_RANGE(self->axial_scale), 0, MAX(g->n_views, 2) - 1);
    g_autofree char *text = g_strdup_printf("%u views of %u × %u pixels: the measured projection, "
                                            "the current image re-projected, the residual",
                                            g->n_views, g->det_u, g->det_v);
    gtk_label_set_text(self->totals, text);
    tl_data_view_set_plane(self, 0, 0);
    measured_plane(self);
    start_expected(self);
    return;
  }
  gboolean sino = d && (d->bins || (d->ds && d->ds->arc)); /* arc-corrected: lines, no bins */
  if (!d || !d->lm || sino) {
    gtk_label_set_text(self->info, "");
    gtk_label_set_text(self->totals, !d ? "No dataset"
                                     : sino ? "A sinogram file: the data view histograms PET list mode only"
                                               : "The data view shows PET list mode as sinograms");
    return;
  }
  self->dataset = tl_document_ref(d);
  gtk_label_set_text(self->totals, "Histogramming the events…");
  Histogram *h = g_new0(Histogram, 1);
  h->dataset = tl_document_ref(d);
  h->generation = self->generation;
  self->busy++;
  GTask *task = g_task_new(self, NULL, histogram_done, NULL);
  g_task_set_task_data(task, h, histogram_free);
  g_task_run_in_thread(task, histogram_thread);
  g_object_unref(task);
}

void tl_data_view_set_plane(TlDataView *self, gint rd, guint ax) {
  if (self->is_ct) {
    guint n = self->dataset->ct->geometry->n_views;
    ax = MIN(ax, n - 1);
    gboolean changed = ax != self->ax || !self->planes[0];
    self->ax = ax;
    if ((guint)lround(gtk_range_get_value(GTK_RANGE(self->axial_scale))) != ax)
      gtk_range_set_value(GTK_RANGE(self->axial_scale), ax);
    if (changed) {
      self->generation++;
      measured_plane(self);
      start_expected(self);
    }
    return;
  }
  if (!self->sino) return;
  gint seg = tl_sinogram_segment_of(self->sino, rd);
  if (seg < 0) seg = 0;
  ax = MIN(ax, self->sino->n_axial[seg] - 1);
  gboolean changed = seg != self->seg || ax != self->ax;
  self->seg = seg;
  self->ax = ax;
  if (changed) self->generation++;
  /* the controls follow without re-entering */
  if ((gint)gtk_spin_button_get_value(self->rd_spin) != self->sino->min_ring_difference[seg])
    gtk_spin_button_set_value(self->rd_spin, self->sino->min_ring_difference[seg]);
  gtk_range_set_range(GTK_RANGE(self->axial_scale), 0, MAX(self->sino->n_axial[seg], 2) - 1);
  if ((guint)lround(gtk_range_get_value(GTK_RANGE(self->axial_scale))) != ax)
    gtk_range_set_value(GTK_RANGE(self->axial_scale), ax);
  if (changed || !self->planes[0]) {
    measured_plane(self);
    start_expected(self);
  }
}

gboolean tl_data_view_is_busy(TlDataView *self) { return self->busy > 0; }
gint64 tl_data_view_get_total(TlDataView *self) { return self->total; }
gint64 tl_data_view_get_outside(TlDataView *self) { return self->outside; }
guint tl_data_view_get_expected_updates(TlDataView *self) { return self->updates; }

const float *tl_data_view_get_plane(TlDataView *self, int which, guint *n_views, guint *n_t) {
  if (n_views) *n_views = self->ph;
  if (n_t) *n_t = self->pw;
  return which >= 0 && which < 3 ? self->planes[which]
         : which >= 3 && which < 5 ? self->additive[which - 3] : NULL;
}

TlPlot *tl_data_view_get_profile_plot(TlDataView *self) { return self->profile; }

gboolean tl_data_view_save_png(TlDataView *self, const char *path, GError **error) {
  GdkTexture *t[3];
  int w = 0, h = 0, gap = 4;
  for (int i = 0; i < 3; i++) {
    t[i] = tl_slice_view_get_texture(self->views[i]);
    if (!t[i]) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "The data view shows nothing yet");
      return FALSE;
    }
    w += gdk_texture_get_width(t[i]) + (i ? gap : 0);
    h = MAX(h, gdk_texture_get_height(t[i]));
  }
  /* each plane at its own resolution, upscaled to at least 256 rows for a readable picture */
  int scale = MAX(1, 256 / MAX(h, 1));
  g_autoptr(GdkPixbuf) out = gdk_pixbuf_new(GDK_COLORSPACE_RGB, TRUE, 8, w * scale, h * scale);
  gdk_pixbuf_fill(out, 0x000000ff);
  int x = 0;
  for (int i = 0; i < 3; i++) {
    int tw = gdk_texture_get_width(t[i]), th = gdk_texture_get_height(t[i]);
    g_autofree guchar *px = g_malloc((gsize)tw * th * 4);
    gdk_texture_download(t[i], px, (gsize)tw * 4);
    /* GDK_MEMORY_DEFAULT is premultiplied B G R A on little endian: to R G B A */
    for (gsize k = 0; k < (gsize)tw * th; k++) {
      guchar b = px[4 * k], r = px[4 * k + 2];
      px[4 * k] = r, px[4 * k + 2] = b;
    }
    g_autoptr(GdkPixbuf) src = gdk_pixbuf_new_from_data(px, GDK_COLORSPACE_RGB, TRUE, 8, tw, th,
                                                         tw * 4, NULL, NULL);
    gdk_pixbuf_scale(src, out, x * scale, 0, tw * scale, th * scale, x * scale, 0, scale, scale,
                     GDK_INTERP_NEAREST);
    x += tw + gap;
  }
  if (tl_plot_n_series(self->profile) == 0)
    return gdk_pixbuf_save(out, path, "png", error, NULL);
  /* PET: the profiles below the planes, as wide */
  int W = gdk_pixbuf_get_width(out), H = gdk_pixbuf_get_height(out), plot_h = MAX(240, W / 4);
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H + plot_h);
  cairo_t *cr = cairo_create(surface);
  gdk_cairo_set_source_pixbuf(cr, out, 0, 0);
  cairo_paint(cr);
  cairo_translate(cr, 0, H);
  tl_plot_render(self->profile, cr, W, plot_h);
  cairo_destroy(cr);
  return tl_surface_save_png(surface, path, error);
}

static void on_rd(GtkSpinButton *b, TlDataView *self) {
  tl_data_view_set_plane(self, (gint)gtk_spin_button_get_value(b), self->ax);
}

static void on_axial(GtkRange *r, TlDataView *self) {
  if (self->is_ct) {
    tl_data_view_set_plane(self, 0, (guint)lround(gtk_range_get_value(r)));
    return;
  }
  if (!self->sino || self->seg < 0) return;
  tl_data_view_set_plane(self, self->sino->min_ring_difference[self->seg],
                         (guint)lround(gtk_range_get_value(r)));
}

static void tl_data_view_dispose(GObject *o) {
  TlDataView *self = TL_DATA_VIEW(o);
  self->disposed = TRUE;
  g_clear_pointer(&self->dataset, tl_document_unref);
  G_OBJECT_CLASS(tl_data_view_parent_class)->dispose(o);
}

static void tl_data_view_finalize(GObject *o) {
  TlDataView *self = TL_DATA_VIEW(o);
  g_clear_pointer(&self->sino, tl_sinogram_free);
  for (int i = 0; i < 3; i++) g_free(self->planes[i]);
  for (int i = 0; i < 2; i++) g_free(self->additive[i]);
  G_OBJECT_CLASS(tl_data_view_parent_class)->finalize(o);
}

static void tl_data_view_class_init(TlDataViewClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = tl_data_view_dispose;
  G_OBJECT_CLASS(klass)->finalize = tl_data_view_finalize;
}

static void tl_data_view_init(TlDataView *self) {
  self->seg = -1;
  self->total = self->outside = -1;
  gtk_window_set_title(GTK_WINDOW(self), "Data");
  gtk_window_set_default_size(GTK_WINDOW(self), 1100, 520);
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  GtkWidget *header = adw_header_bar_new();
  GtkWidget *export = gtk_button_new_with_label("Export Plots…");
  gtk_widget_set_tooltip_text(export, "The profiles (and the window's plots) as CSV and PNG");
  gtk_actionable_set_action_name(GTK_ACTIONABLE(export), "win.export-plots");
  adw_header_bar_pack_start(ADW_HEADER_BAR(header), export);
  gtk_box_append(GTK_BOX(box), header);
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_margin_start(row, 8);
  gtk_widget_set_margin_end(row, 8);
  self->rd_label = gtk_label_new("Ring difference");
  gtk_box_append(GTK_BOX(row), self->rd_label);
  self->rd_spin = GTK_SPIN_BUTTON(gtk_spin_button_new_with_range(0, 1, 1));
  gtk_box_append(GTK_BOX(row), GTK_WIDGET(self->rd_spin));
  gtk_box_append(GTK_BOX(row), gtk_label_new("Axial position"));
  self->axial_scale = GTK_SCALE(gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 1, 1));
  gtk_scale_set_digits(self->axial_scale, 0);
  gtk_scale_set_draw_value(self->axial_scale, TRUE);
  gtk_widget_set_hexpand(GTK_WIDGET(self->axial_scale), TRUE);
  gtk_box_append(GTK_BOX(row), GTK_WIDGET(self->axial_scale));
  gtk_box_append(GTK_BOX(box), row);
  GtkWidget *views = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_set_homogeneous(GTK_BOX(views), TRUE);
  gtk_widget_set_vexpand(views, TRUE);
  for (int i = 0; i < 3; i++) {
    self->views[i] = TL_SLICE_VIEW(tl_slice_view_new(TL_VIEW_MIP));
    tl_slice_view_set_detector(self->views[i], 1, 1, kTitles[i]);
    tl_slice_view_set_unit(self->views[i], "counts");
    gtk_box_append(GTK_BOX(views), GTK_WIDGET(self->views[i]));
  }
  gtk_box_append(GTK_BOX(box), views);
  /* PET: the plane's profiles; CSV and PNG with the window's Export Plots (the button) */
  self->profile = TL_PLOT(tl_plot_new("The plane summed over views: measured against the model",
                                      "tangential position (bin)"));
  gtk_widget_set_size_request(GTK_WIDGET(self->profile), 200, 170);
  gtk_widget_set_margin_start(GTK_WIDGET(self->profile), 8);
  gtk_widget_set_margin_end(GTK_WIDGET(self->profile), 8);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->profile));
  self->info = GTK_LABEL(gtk_label_new(""));
  self->totals = GTK_LABEL(gtk_label_new("No dataset"));
  gtk_label_set_xalign(self->info, 0);
  gtk_label_set_xalign(self->totals, 0);
  gtk_label_set_wrap(self->totals, TRUE);
  gtk_widget_set_margin_start(GTK_WIDGET(self->info), 8);
  gtk_widget_set_margin_start(GTK_WIDGET(self->totals), 8);
  gtk_widget_set_margin_bottom(GTK_WIDGET(self->totals), 8);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->info));
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->totals));
  adw_window_set_content(ADW_WINDOW(self), box);
  g_signal_connect(self->rd_spin, "value-changed", G_CALLBACK(on_rd), self);
  g_signal_connect(self->axial_scale, "value-changed", G_CALLBACK(on_axial), self);
}

TlDataView *tl_data_view_new(GtkWindow *parent, TlDataTargetFunc target, gpointer window) {
  TlDataView *self = g_object_new(TL_TYPE_DATA_VIEW, "transient-for", parent, NULL);
  self->target = target;
  self->window = window;
  /* the window's actions (win.export-plots) from this window's buttons too */
  if (G_IS_ACTION_GROUP(window))
    gtk_widget_insert_action_group(GTK_WIDGET(self), "win", G_ACTION_GROUP(window));
  return self;
}
