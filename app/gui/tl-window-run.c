/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's runs: one TlRunner per run on the current dataset, frames from it shown in
 * the views, the overlay, the plots and the status line; the actions' sensitivity. */
#include <math.h>
#include <string.h>
#include "tl-window-private.h"
#include "pet/data/tl-sinogram-arc.h"

/* ---- Runs ------------------------------------------------------------------------- */

static gboolean run_active(TlWindow *self) {
  return self->runner && (self->run_state == TL_RUN_PREPARING || self->run_state == TL_RUN_RUNNING ||
                          self->run_state == TL_RUN_PAUSED);
}

void tl_window_update_actions(TlWindow *self) {
  gboolean ready = self->state == TL_WINDOW_READY;
  gboolean pet = tl_document_iterative(self->dataset);  /* list mode or CT: iterates */
  gboolean active = pet && run_active(self);
  gboolean has_image = self->runner && self->run_state != TL_RUN_PREPARING && self->run_state != TL_RUN_FAILED &&
                       !(pet && self->run_state == TL_RUN_STOPPED && self->sub_iterations == 0);
  /* Step after Finished continues the run by one sub-iteration (act_step) */
  gboolean finished = pet && self->runner && self->run_state == TL_RUN_FINISHED;
  struct { const char *name; gboolean on; } states[] = {
    {"run", active && self->run_state != TL_RUN_RUNNING},
    {"pause", active && self->run_state == TL_RUN_RUNNING},
    {"run-pause", active},
    {"step", (active && self->run_state != TL_RUN_RUNNING) || finished},
    {"stop", active},
    {"restart", pet && ready},
    {"simulate", ready},
    {"simulate-dialog", ready},
    {"confirm-replace", self->replace_dialog != NULL},
    {"open", ready},
    {"open-file", ready},
    {"save-image", has_image},
    {"save-image-to", has_image},
    {"export-view", has_image},
    {"export-view-to", has_image},
    {"export-plots", self->dataset != NULL},
    {"export-plots-to", self->dataset != NULL},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(states); i++) {
    GAction *a = g_action_map_lookup_action(G_ACTION_MAP(self), states[i].name);
    if (a)
      g_simple_action_set_enabled(G_SIMPLE_ACTION(a), states[i].on);
  }
  gboolean running = self->runner && self->run_state == TL_RUN_RUNNING;
  gtk_button_set_icon_name(self->run_button, running ? "media-playback-pause-symbolic"
                                                     : "media-playback-start-symbolic");
  /* highlighted only when there is something to run (or pause) */
  if (active)
    gtk_widget_add_css_class(GTK_WIDGET(self->run_button), "suggested-action");
  else
    gtk_widget_remove_css_class(GTK_WIDGET(self->run_button), "suggested-action");
}

/* Ready: prepared and not started yet (paused before any sub-iteration is not "Paused"). */
static const char *run_state_text(TlRunState s, guint sub_iterations) {
  switch (s) {
  case TL_RUN_PREPARING: return "Preparing…";
  case TL_RUN_RUNNING: return "Running";
  case TL_RUN_PAUSED: return sub_iterations ? "Paused" : "Ready";
  case TL_RUN_FINISHED: return "Finished";
  case TL_RUN_STOPPED: return "Stopped";
  default: return "Failed";
  }
}

const char *tl_window_unit_label(TlWindow *self, const char *unit) {
  if (unit && unit[0]) return unit;
  const TlDocument *d = self->dataset;
  return !d ? "" : d->lm ? "counts / sensitivity (a.u.)" : d->ct ? "mm⁻¹" : "image units";
}

static void update_status(TlWindow *self, const TlJobStep *step) {
  GString *s = g_string_new(NULL);
  if (self->ctx)
    g_string_append(s, tl_context_info(self->ctx)->name);
  if (self->runner) {
    g_string_append_printf(s, " · %s", self->dataset && !tl_document_iterative(self->dataset) ? "Image" : run_state_text(self->run_state, self->sub_iterations));
    if (self->sub_iterations)
      g_string_append_printf(s, " · sub-iteration %u", self->sub_iterations);
    if (step)
      g_string_append_printf(s, " (iteration %u, subset %u/%u%s) · %.3g %s/s", step->iteration,
                             step->subset + 1, step->n_subsets, step->filtered ? ", filtered" : "",
                             step->seconds > 0 ? tl_document_events(self->dataset) / (double)step->n_subsets / step->seconds : 0,
                             self->dataset->ct ? "rays" : "events");
    if (step && step->scatter_round)
      g_string_append_printf(s, " · new scatter estimate (round %u)", step->scatter_round);
  }
  gtk_label_set_text(self->status_label, s->str);
  g_string_free(s, TRUE);
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of the values (q = 1: the maximum); `lo` gets the minimum. */
static float quantile(GArray *values, double q, float *lo) {
  g_array_sort(values, cmp_float);
  *lo = g_array_index(values, float, 0);
  return g_array_index(values, float, (guint)((values->len - 1) * q));
}

/* Levels from what is displayed: min–max or a high percentile. The three slices share
 * theirs; the MIP, brighter by construction, gets its own from the same rule. */
void tl_window_auto_levels(TlWindow *self) {
  TlLevelsPreset p = tl_side_panel_get_levels_preset(self->side_panel);
  if (p == TL_LEVELS_MANUAL)
    return;
  double q = p == TL_LEVELS_P99_5 ? 0.995 : p == TL_LEVELS_P99 ? 0.99 : 1.0;
  GArray *slices = g_array_new(FALSE, FALSE, sizeof(float));
  for (int v = 0; v < TL_N_VIEWS; v++) {
    const TlSlice *s = tl_slice_view_get_slice(self->views[v]);
    if (!s->data)
      continue;
    if (v == TL_VIEW_MIP) {
      GArray *mip = g_array_new(FALSE, FALSE, sizeof(float));
      g_array_append_vals(mip, s->data, s->width * s->height);
      float lo, hi = quantile(mip, q, &lo);
      lo = p == TL_LEVELS_MIN_MAX ? lo : 0;
      tl_slice_view_set_levels(self->views[v], lo, hi > lo ? hi : lo + 1);
      g_array_unref(mip);
    } else {
      g_array_append_vals(slices, s->data, s->width * s->height);
    }
  }
  if (slices->len > 0) {
    float lo, hi = quantile(slices, q, &lo);
    self->lo = p == TL_LEVELS_MIN_MAX ? lo : 0;
    self->hi = hi > self->lo ? hi : self->lo + 1;
    for (int v = 0; v < TL_VIEW_MIP; v++)
      tl_slice_view_set_levels(self->views[v], self->lo, self->hi);
  }
  g_array_unref(slices);
}

void tl_window_request_view(TlWindow *self) {
  if (!self->runner)
    return;
  TlViewRequest v = {{self->pos[0], self->pos[1], self->pos[2]}, tl_window_wants_mip(self)};
  tl_runner_set_view(self->runner, &v);
}

static void on_frame(TlFrame *f, gpointer data) {
  TlWindow *self = data;
  self->run_state = f->state;
  if (f->error)
    tl_window_show_error(self, "Reconstruction", f->error);
  if (f->save_error)
    tl_window_show_error(self, "Saving", f->save_error);
  if (f->saved) {
    g_autofree char *text = g_strdup_printf("Saved %s", f->saved);
    tl_window_toast(self, text);
  }
  if (f->slices[TL_VIEW_AXIAL].data) {
    const char *unit = tl_window_unit_label(self, f->unit);
    for (int v = 0; v < TL_N_VIEWS; v++) {
      tl_slice_view_set_slice(self->views[v], &f->slices[v]);
      tl_slice_view_set_position(self->views[v], f->view.pos);
      tl_slice_view_set_unit(self->views[v], unit);
    }
    tl_window_auto_levels(self);
  }
  if (f->has_step) {
    self->sub_iterations = f->step.sub_iterations;
    /* Steering: the first sub-iteration with new settings, marked between it and the last. */
    if (f->changed)
      tl_plot_add_marker(self->convergence, f->step.sub_iterations - 0.5, "new settings");
    /* a new scatter estimate changes the model: the log-likelihood jumps there */
    if (f->step.scatter_round) {
      g_autofree char *label = g_strdup_printf("scatter %u", f->step.scatter_round);
      tl_plot_add_marker(self->convergence, f->step.sub_iterations - 0.5, label);
    }
    /* the fit's figures on the status line's tooltip (no toast: one per round in a burst of
     * frames would stack) */
    if (f->step.note)
      gtk_widget_set_tooltip_text(GTK_WIDGET(self->status_label), f->step.note);
    tl_plot_append(self->convergence, 0, f->step.sub_iterations, f->step.loglik);
    if (self->dataset->truth)  /* the solver's RMSE is in the truth's units (rmse_scaled) */
      tl_plot_append(self->convergence, 1, f->step.sub_iterations,
                     self->truth_mean > 0 ? 100 * f->step.rmse / self->truth_mean : NAN);
    /* the built-in kernels this sub-iteration ran: what the kernel editor offers first */
    if (f->step.profile) {
      char **k = tl_profile_kernels(f->step.profile);
      if (k[0])
        g_object_set_data_full(G_OBJECT(self), "tl-run-kernels", k, (GDestroyNotify)g_strfreev);
      else
        g_strfreev(k);
    }
    tl_profile_view_add(self->profile_view, f->step.profile, f->step.seconds,
                        tl_document_events(self->dataset) / (double)MAX(f->step.n_subsets, 1));
  }
  tl_window_measure_frame(self, f);
  update_status(self, f->has_step ? &f->step : NULL);
  tl_window_update_actions(self);
  g_signal_emit_by_name(self, "frame", f->has_step);
}

/* What a job is made from: the side panel's settings as a run (TlRunSpec), the one
 * description the CLI and Python make their runs from too. */
typedef struct {
  TlDocument *dataset;
  TlRunSpec *run;       /* NULL: the settings make no run (error says why) */
  GError *error;
  TlImage *start;  /* the starting image (a snapshot's), NULL = the algorithm's default */
} JobSpec;

static void job_spec_free(gpointer data) {
  JobSpec *s = data;
  tl_document_unref(s->dataset);
  g_clear_pointer(&s->run, tl_run_spec_free);
  g_clear_error(&s->error);
  tl_image_free(s->start);
  g_free(s);
}

static TlJob *make_job(TlContext *ctx, gpointer data, GError **error) {
  JobSpec *s = data;
  if (!s->run) {
    g_propagate_error(error, g_error_copy(s->error));
    return NULL;
  }
  TlJob *job = tl_document_new_job(s->dataset, ctx, s->run, error);
  if (job && s->start) {
    if (!job->vt->set_image) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "This reconstruction cannot start from an image");
      tl_job_free(job);
      return NULL;
    }
    if (!job->vt->set_image(job, s->start, error)) {
      tl_job_free(job);
      return NULL;
    }
  }
  return job;
}

TlRunSpec *tl_window_get_run(TlWindow *self, gboolean *phantom_mu, GError **error) {
  g_autoptr(TlRunSpec) run = tl_run_spec_new();
  /* the file opened; a simulation has none (the run then names no data) */
  const char *data = self->dataset ? self->dataset->path
                                   : tl_side_panel_get_dataset_file(self->side_panel);
  guint iterations = tl_side_panel_get_iterations(self->side_panel);
  if (phantom_mu) *phantom_mu = FALSE;
  if (self->dataset && self->dataset->ct) {
    TlCtJobOptions ct;
    tl_side_panel_get_ct_options(self->side_panel, &ct);
    if (!tl_ct_job_options_to_run(&ct, data, iterations, run, error)) return NULL;
    return g_steal_pointer(&run);
  }
  TlPetJobOptions o;
  tl_side_panel_get_options(self->side_panel, &o);
  if (o.mu == TL_PET_MU_PHANTOM) { /* the phantom's map, written to a file the run names */
    const char *path = self->dataset ? tl_document_mu_file(self->dataset, error) : NULL;
    if (!path) {
      if (!self->dataset)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "no data: no phantom mu-map");
      tl_pet_job_options_clear(&o);
      return NULL;
    }
    o.mu = TL_PET_MU_FILE;
    o.mu_path = g_strdup(path);
    if (phantom_mu) *phantom_mu = TRUE;
  }
  gboolean ok = tl_pet_job_options_to_run(&o, data, iterations, run, error);
  tl_pet_job_options_clear(&o);
  return ok ? g_steal_pointer(&run) : NULL;
}

static JobSpec *job_spec_new(TlWindow *self) {
  JobSpec *spec = g_new0(JobSpec, 1);
  spec->dataset = tl_document_ref(self->dataset);
  spec->run = tl_window_get_run(self, NULL, &spec->error);
  /* What a snapshot of this run says it was. */
  g_free(self->run_settings);
  const TlRunSpec *r = spec->run;
  if (!r)
    self->run_settings = g_strdup("");
  else if (self->dataset->ct)
    self->run_settings = g_strdup_printf("%s, %u subsets, %s%s%s", tl_run_spec_algorithm(r),
                                         MAX(tl_run_spec_subsets(r), 1), tl_run_spec_projector(r),
                                         r->prior ? ", " : "", r->prior ? r->prior : "");
  else
    self->run_settings = g_strdup_printf("%s, %u subsets, %s%s%s%s%s%s%s%s%s", tl_run_spec_algorithm(r),
                                         MAX(tl_run_spec_subsets(r), 1), tl_run_spec_projector(r),
                                         r->tof ? ", TOF" : "",
                                         r->filter.kind != TL_FILTER_NONE ? ", filtered" : "",
                                         r->prior ? ", " : "", r->prior ? r->prior : "",
                                         r->norm ? ", normalised" : "",
                                         r->randoms != TL_RUN_RANDOMS_NONE ? ", randoms" : "",
                                         r->scatter == TL_RUN_SCATTER_SSS ? ", scatter (SSS)"
                                         : r->scatter == TL_RUN_SCATTER_FILE ? ", scatter (file)" : "",
                                         !isnan(r->calibration) ? ", Bq/mL" : "");
  return spec;
}

void tl_window_reset_plots(TlWindow *self) {
  tl_plot_clear(self->convergence);
  /* The label follows the job: PET's log-likelihood rises, CT's 1/2 |Ax - y|^2 falls. */
  const char *label = "log-likelihood";
  if (self->dataset && self->dataset->ct) {
    TlCtJobOptions ct;
    tl_side_panel_get_ct_options(self->side_panel, &ct);
    label = tl_ct_job_objective_label(ct.algo);
  }
  tl_plot_add_series(self->convergence, label, &(GdkRGBA){0.98, 0.6, 0.2, 1}, FALSE);
  self->truth_mean = 0;
  if (self->dataset && self->dataset->truth) {
    const TlImage *t = self->dataset->truth;
    self->truth_mean = tl_image_sum(t) / (double)tl_image_grid_n_voxels(&t->grid);
    tl_plot_add_series(self->convergence, "RMSE (% of truth mean)", &(GdkRGBA){0.35, 0.7, 1.0, 1}, FALSE);
  }
  tl_plot_clear(self->line_plot);
  self->line_view = -1;
  tl_profile_view_clear(self->profile_view);
}

/* The old run ends without the main thread waiting for it: a job being prepared (the
 * sensitivity image of a large scanner) can take minutes. Its context must outlive it,
 * so it is joined later (here once it has exited, at the latest in dispose). */
static void retire_runner(TlWindow *self) {
  for (guint i = self->retired->len; i-- > 0;)
    if (tl_runner_exited(self->retired->pdata[i]))
      g_ptr_array_remove_index_fast(self->retired, i);
  if (self->runner) {
    tl_runner_retire(self->runner);
    g_ptr_array_add(self->retired, g_steal_pointer(&self->runner));
  }
}

/* A new run on the current dataset with the side panel's options. */
void tl_window_start_run(TlWindow *self, gboolean run) {
  retire_runner(self);
  self->sub_iterations = 0;
  tl_window_reset_plots(self);
  if (!self->dataset)
    return;
  JobSpec *spec = job_spec_new(self);
  spec->start = g_steal_pointer(&self->start_image);
  gboolean iterative = tl_document_iterative(self->dataset);
  /* a scatter = sss run's count is the run layer's, (1 + rounds) x iterations, as every door's */
  guint total = !iterative ? 0
              : spec->run && tl_run_algorithm_direct(tl_run_spec_algorithm(spec->run)) ? 1
              : (spec->run ? tl_run_spec_total_iterations(spec->run)
                           : tl_side_panel_get_iterations(self->side_panel)) *
                    tl_side_panel_get_subsets(self->side_panel);
  TlViewRequest view = {{self->pos[0], self->pos[1], self->pos[2]}, tl_window_wants_mip(self)};
  self->run_state = TL_RUN_PREPARING;
  self->runner = tl_runner_new(self->ctx, make_job, spec, job_spec_free, &view, total,
                               run && iterative, on_frame, self);
  tl_window_measure_run_started(self);
  update_status(self, NULL);
  tl_window_update_actions(self);
}

void tl_window_start_run_from(TlWindow *self, const TlImage *image, gboolean run) {
  g_clear_pointer(&self->start_image, tl_image_free);
  self->start_image = tl_image_copy(image);
  tl_window_start_run(self, run);
}

/* The live run takes the side panel's settings at its next sub-iteration (TlRunner rebuilds
 * the job from the current iterate). The iterations left keep their share: with S subsets
 * instead of S0, the sub-iterations still to do scale by S / S0. FALSE: not possible here
 * (FDK involved, an image, nothing computed yet): the caller restarts instead. */
gboolean tl_window_steer(TlWindow *self) {
  if (!self->runner || !self->dataset || !tl_document_iterative(self->dataset) || self->sub_iterations == 0 ||
      !(self->run_state == TL_RUN_RUNNING || self->run_state == TL_RUN_PAUSED || self->run_state == TL_RUN_FINISHED))
    return FALSE;
  TlCtJobOptions ct;
  tl_side_panel_get_ct_options(self->side_panel, &ct);
  if (self->dataset->ct && g_str_equal(ct.algo, "fdk"))
    return FALSE;
  JobSpec *spec = job_spec_new(self);
  guint iterations = spec->run ? tl_run_spec_total_iterations(spec->run)
                               : tl_side_panel_get_iterations(self->side_panel);
  tl_runner_rebuild(self->runner, make_job, spec, job_spec_free);
  guint subsets = tl_side_panel_get_subsets(self->side_panel);
  tl_runner_set_total(self->runner, MAX(iterations * subsets, self->sub_iterations + 1));
  return TRUE;
}

void tl_window_set_dataset(TlWindow *self, TlDocument *d, gboolean run) {
  retire_runner(self);
  g_clear_pointer(&self->dataset, tl_document_unref);
  self->dataset = d;
  const TlImageGrid *g = &d->grid;
  for (int a = 0; a < 3; a++)
    self->pos[a] = g->dims[a] / 2;
  if (d->truth) {
    /* Start on the hottest structure of the phantom (NEMA: the spheres' plane). */
    guint64 best = 0, n = tl_image_grid_n_voxels(g);
    for (guint64 i = 1; i < n; i++)
      if (d->truth->data[i] > d->truth->data[best])
        best = i;
    self->pos[0] = best % g->dims[0];
    self->pos[1] = best / g->dims[0] % g->dims[1];
    self->pos[2] = best / ((guint64)g->dims[0] * g->dims[1]);
  }
  for (int v = 0; v < TL_N_VIEWS; v++) {
    tl_slice_view_set_grid(self->views[v], g);
    tl_slice_view_set_slice(self->views[v], NULL);
    tl_slice_view_set_position(self->views[v], self->pos);
    tl_slice_view_reset_zoom(self->views[v]);
    tl_slice_view_set_unit(self->views[v], tl_window_unit_label(self, d->image ? d->image->unit : NULL));
  }
  g_autofree char *scanner = d->ct ? g_strdup_printf("CT, %s beam, %u views of %u × %u", d->ct->geometry->beam == TL_CT_CONE ? "cone" : "parallel",
                                                     d->ct->geometry->n_views, d->ct->geometry->det_u, d->ct->geometry->det_v)
                                   : g_strdup(d->lm ? d->lm->scanner->name : NULL);
  if (tl_document_iterative(d))
    tl_side_panel_set_modality(self->side_panel, d->ct != NULL);
  tl_side_panel_set_ct_centre(self->side_panel, d->ct && (d->ds->allows & TL_DATASET_ALLOWS_CENTRE),
                              d->ds ? d->ds->centre : NAN, d->ct ? d->ct->geometry->det_u : 0,
                              d->ds && d->ds->centre_found);
  tl_side_panel_set_pet_data(self->side_panel, d->lm != NULL, d->lm && d->lm->has_tof, d->mu != NULL, d->attenuated);
  /* rays per line: arc-corrected bins, or crystal pairs whose bins can be lines (span 1) */
  tl_side_panel_set_arc(self->side_panel,
                        d->ds && (d->ds->arc || (d->ds->pair_sinogram &&
                                                 tl_sinogram_pairs_are_lines(d->ds->pair_sinogram,
                                                                             NULL))));
  tl_side_panel_set_delayed(self->side_panel, d->lm && d->lm->n_delayed > 0,
                            d->lm && d->lm->singles);
  if (d->lm) tl_side_panel_set_frame_defaults(self->side_panel, d->lm->start_s, d->lm->duration_s);
  tl_projection_view_set_dataset(self->projection, d);
  tl_window_measure_dataset(self);
  tl_window_update_fourth_pane(self);
  tl_side_panel_set_dataset(self->side_panel, d->name, scanner, (guint64)tl_document_events(d), g, d->truth != NULL);
  g_autofree char *format = d->format ? g_strdup_printf("%s: %s", d->format->name, d->format->summary) : NULL;
  tl_side_panel_set_dataset_format(self->side_panel, d->format ? format : "Simulated", d->details);
  gtk_window_set_title(GTK_WINDOW(self), d->name);
  adw_window_title_set_title(self->window_title, d->name);
  if (self->state == TL_WINDOW_READY)
    gtk_stack_set_visible_child_name(self->stack, "workbench");
  /* --set: once, for the first data; with a FILE all of it (the demo applied the rest
   * before simulating), else the keys that depend on the data */
  GVariant *set = g_object_get_data(G_OBJECT(self), "tl-demo-settings");
  if (set && !g_object_get_data(G_OBJECT(self), "tl-data-settings-done")) {
    g_variant_ref(set);
    g_object_set_data(G_OBJECT(self), "tl-data-settings-done", GINT_TO_POINTER(1));
    if (d->format) {
      g_object_set_data(G_OBJECT(self), "tl-demo-settings", NULL);
      tl_window_apply_settings(self, set);
    } else {
      tl_window_apply_data_settings(self, set);
    }
    g_variant_unref(set);
  }
  tl_window_start_run(self, run);
}

