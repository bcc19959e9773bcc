/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Layout in ui/tl-side-panel.ui. The PET extensions (TOF, attenuation, filter, the tube
 * of response) are list-mode PET options: their group is insensitive for CT data and
 * images, and each row only applies (is sensitive or shown) when its choice can be used. */
#include "tl-side-panel.h"
#include <math.h>
#include "pet/project/tl-projector.h"
#include "pet/correct/tl-units.h"
#include "tl-registry.h"

struct _TlSidePanel {
  AdwBin parent_instance;
  AdwActionRow *file_row, *format_row, *scanner_row, *events_row, *grid_row, *truth_row;
  AdwComboRow *algo_row, *projector_row, *colormap_row, *levels_row;
  GtkSpinButton *subsets_spin, *iterations_spin;
  AdwActionRow *subsets_row;
  /* CT parallel beam: the centre of rotation (the dataset's, searched or the file's) */
  AdwActionRow *centre_row;
  GtkSpinButton *centre_spin;
  gboolean has_centre;
  /* CT FDK / FBP: the ramp filter's window (no row: the window's Shepp-Logan, or a run's) */
  TlCtFilter fdk_filter;
  /* PET extensions */
  AdwActionRow *tor_row, *tof_row, *mu_file_row, *fwhm_row, *power_row, *every_row;
  AdwComboRow *mu_row, *filter_row, *placement_row;
  GtkSpinButton *tor_spin, *fwhm_spin, *power_spin, *every_spin;
  AdwActionRow *rays_row; /* arc-corrected sinograms: rays per line */
  GtkSpinButton *rays_t_spin, *rays_z_spin;
  GtkSwitch *tof_switch;
  /* the model's other corrections: normalisation, randoms, scatter, units */
  AdwActionRow *norm_row, *randoms_file_row, *scatter_rounds_row, *scatter_file_row;
  AdwActionRow *scatter_restart_row;
  GtkSwitch *scatter_restart_switch;
  /* the run keys sensitivity and sensitivity-out: a file each, on once chosen */
  AdwActionRow *sens_row, *sens_out_row;
  GtkSwitch *sens_switch, *sens_out_switch;
  char *sens_path, *sens_out_path;
  AdwActionRow *frame_start_row, *duration_row;
  AdwComboRow *randoms_row, *scatter_row, *isotope_row;
  AdwExpanderRow *quant_row;
  AdwEntryRow *calibration_row;
  GtkSwitch *norm_switch;
  GtkSpinButton *scatter_rounds_spin, *frame_start_spin, *duration_spin;
  TlPetRandoms randoms_kinds[4]; /* randoms_row's items */
  guint n_randoms_kinds;
  TlPetScatter scatter_kinds[3]; /* scatter_row's items */
  guint n_scatter_kinds;
  char *norm_path, *randoms_path, *scatter_path;
  double data_duration;          /* the data's frame (0: they state none) */
  AdwPreferencesGroup *pet_group, *prior_group;
  /* Prior (algorithms that take one) */
  AdwComboRow *prior_row;
  AdwActionRow *beta_row, *gamma_row;
  GtkSpinButton *beta_spin, *gamma_spin;
  GPtrArray *algos;   /* algo_row's names, from the registry (+ "fdk" for CT) */
  TlPetMu mu_kinds[3];  /* mu_row's items */
  char *mu_path;
  gboolean list_mode, has_tof, has_delayed, has_singles;
  char *file;
  gboolean ct;      /* the CT algorithm and projector lists */
  gboolean quiet;   /* setting values from code: no "changed" */
};

G_DEFINE_FINAL_TYPE(TlSidePanel, tl_side_panel, ADW_TYPE_BIN)

enum { SIG_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void set_subtitle(AdwActionRow *row, const char *text) {
  adw_action_row_set_subtitle(row, text);
}

void tl_side_panel_set_dataset(TlSidePanel *self, const char *file, const char *scanner,
                               guint64 events, const TlImageGrid *grid, gboolean truth) {
  g_free(self->file);
  self->file = g_strdup(file);
  /* Subtitles are markup: file names are not. */
  g_autofree char *f = g_markup_escape_text(file ? file : "None", -1);
  g_autofree char *s = g_markup_escape_text(scanner ? scanner : "–", -1);
  g_autofree char *e = file ? g_strdup_printf("%'" G_GUINT64_FORMAT, events) : g_strdup("–");
  g_autofree char *g = grid ? g_strdup_printf("%u × %u × %u of %.2f × %.2f × %.2f mm", grid->dims[0],
                                              grid->dims[1], grid->dims[2], grid->voxel_mm[0],
                                              grid->voxel_mm[1], grid->voxel_mm[2])
                            : g_strdup("–");
  set_subtitle(self->file_row, f);
  set_subtitle(self->scanner_row, s);
  set_subtitle(self->events_row, e);
  set_subtitle(self->grid_row, g);
  set_subtitle(self->truth_row, file ? (truth ? "Known (simulated phantom)" : "None") : "–");
}

const char *tl_side_panel_get_dataset_file(TlSidePanel *self) { return self->file; }

void tl_side_panel_set_dataset_format(TlSidePanel *self, const char *format, const char *details) {
  g_autofree char *f = g_markup_escape_text(format ? format : "–", -1);
  set_subtitle(self->format_row, f);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->format_row), details);
}

const char *tl_side_panel_get_dataset_format(TlSidePanel *self) {
  return adw_action_row_get_subtitle(self->format_row);
}

/* The PET projectors the window offers, in the registry's order (compute/tl-registry.h):
 * those that run on list mode, the window's PET data. */
static const TlProjectorInfo *pet_projector(guint i) {
  const TlProjectorInfo *last = NULL;
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++)
    if ((*p)->flags & TL_PROJECTOR_LISTMODE) {
      last = *p;
      if (i-- == 0) break;
    }
  return last; /* past the end (no selection): the last, as the list's clamp did */
}
static GListModel *pet_projector_labels(void) {
  GtkStringList *l = gtk_string_list_new(NULL);
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++)
    if ((*p)->flags & TL_PROJECTOR_LISTMODE) gtk_string_list_append(l, (*p)->label);
  return G_LIST_MODEL(l);
}
static const TlFilterKind kFilters[] = {TL_FILTER_NONE, TL_FILTER_MEDIAN3, TL_FILTER_MEDIAN5, TL_FILTER_GAUSS,
                                        TL_FILTER_METZ};

static TlPetMu selected_mu(TlSidePanel *self) {
  return self->mu_kinds[MIN(adw_combo_row_get_selected(self->mu_row), G_N_ELEMENTS(self->mu_kinds) - 1)];
}

static TlPetRandoms selected_randoms(TlSidePanel *self) {
  guint i = adw_combo_row_get_selected(self->randoms_row);
  return i < self->n_randoms_kinds ? self->randoms_kinds[i] : TL_PET_RANDOMS_OFF;
}

static TlPetScatter selected_scatter(TlSidePanel *self) {
  guint i = adw_combo_row_get_selected(self->scatter_row);
  return i < self->n_scatter_kinds ? self->scatter_kinds[i] : TL_PET_SCATTER_OFF;
}

/* The calibration factor typed in: a number > 0, else NAN (the job then names the value). */
static double entered_calibration(TlSidePanel *self) {
  const char *t = gtk_editable_get_text(GTK_EDITABLE(self->calibration_row));
  char *end = NULL;
  double f = t && *t ? g_ascii_strtod(t, &end) : NAN;
  return end && end != t && !*end && isfinite(f) && f > 0 ? f : NAN;
}

static const char *selected_isotope(TlSidePanel *self) {
  guint n = 0;
  const TlIsotope *all = tl_isotopes(&n);
  guint i = adw_combo_row_get_selected(self->isotope_row);
  return i < n ? all[i].name : "none";
}

static TlFilterKind selected_filter(TlSidePanel *self) {
  return kFilters[MIN(adw_combo_row_get_selected(self->filter_row), G_N_ELEMENTS(kFilters) - 1)];
}

static const char *selected_algorithm(TlSidePanel *self);
static gboolean has_subsets(TlSidePanel *self);
static void get_prior(TlSidePanel *self, char *name, gsize size, double *beta, double *gamma);

void tl_side_panel_get_options(TlSidePanel *self, TlPetJobOptions *opt) {
  *opt = (TlPetJobOptions){0};
  g_strlcpy(opt->algorithm, self->ct ? "osem" : selected_algorithm(self), sizeof opt->algorithm);
  opt->osem = has_subsets(self);
  opt->subsets = opt->osem ? (guint)gtk_spin_button_get_value_as_int(self->subsets_spin) : 1;
  get_prior(self, opt->prior, sizeof opt->prior, &opt->beta, &opt->gamma);
  const TlProjectorInfo *proj = pet_projector(adw_combo_row_get_selected(self->projector_row));
  g_strlcpy(opt->projector, self->ct ? "siddon" : proj->name, sizeof opt->projector);
  opt->tor_fwhm_mm = gtk_spin_button_get_value(self->tor_spin);
  gboolean arc = gtk_widget_get_visible(GTK_WIDGET(self->rays_row));
  opt->rays_tangential = arc ? (guint)gtk_spin_button_get_value_as_int(self->rays_t_spin) : 1;
  opt->rays_axial = arc ? (guint)gtk_spin_button_get_value_as_int(self->rays_z_spin) : 1;
  opt->tof = self->has_tof && gtk_switch_get_active(self->tof_switch);
  opt->randoms = selected_randoms(self);
  opt->randoms_path = opt->randoms == TL_PET_RANDOMS_FILE ? g_strdup(self->randoms_path) : NULL;
  opt->norm_path = self->norm_path && gtk_switch_get_active(self->norm_switch) ? g_strdup(self->norm_path) : NULL;
  opt->sensitivity_path = self->sens_path && gtk_switch_get_active(self->sens_switch)
                              ? g_strdup(self->sens_path) : NULL;
  opt->sensitivity_out_path = self->sens_out_path && gtk_switch_get_active(self->sens_out_switch)
                                  ? g_strdup(self->sens_out_path) : NULL;
  opt->scatter = selected_scatter(self);
  opt->scatter_rounds = (guint)gtk_spin_button_get_value_as_int(self->scatter_rounds_spin);
  opt->scatter_restart = opt->scatter == TL_PET_SCATTER_SSS &&
                         gtk_switch_get_active(self->scatter_restart_switch);
  opt->scatter_path = opt->scatter == TL_PET_SCATTER_FILE ? g_strdup(self->scatter_path) : NULL;
  opt->quant = adw_expander_row_get_enable_expansion(self->quant_row);
  opt->calibration = entered_calibration(self);
  opt->frame_start_s = gtk_spin_button_get_value(self->frame_start_spin);
  opt->duration_s = gtk_spin_button_get_value(self->duration_spin);
  g_strlcpy(opt->isotope, selected_isotope(self), sizeof opt->isotope);
  opt->mu = selected_mu(self);
  opt->mu_path = opt->mu == TL_PET_MU_FILE ? g_strdup(self->mu_path) : NULL;
  opt->filter = (TlFilter){selected_filter(self), gtk_spin_button_get_value(self->fwhm_spin),
                           (guint)gtk_spin_button_get_value_as_int(self->power_spin)};
  if (opt->filter.kind != TL_FILTER_METZ) opt->filter.power = 0;
  if (opt->filter.kind != TL_FILTER_NONE && adw_combo_row_get_selected(self->placement_row) == 1)
    opt->filter_every = (guint)gtk_spin_button_get_value_as_int(self->every_spin);
}

/* A combo row's items: the kinds offered now, with `want` selected when offered (else the
 * first); quiet, so rebuilding the list is no change of settings. */
static void set_choices(TlSidePanel *self, AdwComboRow *row, const char *const *labels, guint n,
                        const int *kinds, int want) {
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  g_autoptr(GtkStringList) model = gtk_string_list_new(NULL);
  guint sel = 0;
  for (guint i = 0; i < n; i++) {
    gtk_string_list_append(model, labels[i]);
    if (kinds[i] == want) sel = i;
  }
  adw_combo_row_set_model(row, G_LIST_MODEL(model));
  adw_combo_row_set_selected(row, sel);
  self->quiet = quiet;
}

/* Randoms: from the delayeds or the singles only where the data have them; a file always. */
static void update_randoms_choices(TlSidePanel *self, TlPetRandoms want) {
  const char *labels[4];
  int kinds[4];
  guint n = 0;
  kinds[n] = TL_PET_RANDOMS_OFF, labels[n++] = "Off";
  if (self->has_delayed) kinds[n] = TL_PET_RANDOMS_DELAYEDS, labels[n++] = "From the delayeds";
  if (self->has_singles) kinds[n] = TL_PET_RANDOMS_SINGLES, labels[n++] = "From the singles";
  kinds[n] = TL_PET_RANDOMS_FILE, labels[n++] = "From a file";
  for (guint i = 0; i < n; i++) self->randoms_kinds[i] = kinds[i];
  self->n_randoms_kinds = n;
  set_choices(self, self->randoms_row, labels, n, kinds, want);
}

/* Scatter: SSS only with attenuation correction (its medium and the tail's outline); a file
 * always. Rebuilt only when that changes (the attenuation choice changed). */
static void update_scatter_choices(TlSidePanel *self) {
  gboolean sss = selected_mu(self) != TL_PET_MU_NONE;
  gboolean offered = FALSE;
  for (guint i = 0; i < self->n_scatter_kinds; i++) offered |= self->scatter_kinds[i] == TL_PET_SCATTER_SSS;
  if (self->n_scatter_kinds && offered == sss) return;
  TlPetScatter want = selected_scatter(self);
  const char *labels[3];
  int kinds[3];
  guint n = 0;
  kinds[n] = TL_PET_SCATTER_OFF, labels[n++] = "Off";
  if (sss) kinds[n] = TL_PET_SCATTER_SSS, labels[n++] = "SSS";
  kinds[n] = TL_PET_SCATTER_FILE, labels[n++] = "From a file";
  for (guint i = 0; i < n; i++) self->scatter_kinds[i] = kinds[i];
  self->n_scatter_kinds = n;
  set_choices(self, self->scatter_row, labels, n, kinds, want);
}

/* Which PET rows apply: the group to list-mode data, TOF to data with TOF bins; the rows
 * refining a choice (tube width, mu-map file, FWHM, interval) show only with it. */
static void update_pet_rows(TlSidePanel *self) {
  /* CT data: the CT rows (the centre), not the PET corrections */
  gtk_widget_set_visible(GTK_WIDGET(self->pet_group), !self->ct);
  gtk_widget_set_visible(GTK_WIDGET(self->centre_row), self->ct && self->has_centre);
  gtk_widget_set_visible(GTK_WIDGET(self->tor_row), !self->ct &&
                         g_str_equal(pet_projector(adw_combo_row_get_selected(self->projector_row))->name, "tor"));
  gtk_widget_set_sensitive(GTK_WIDGET(self->pet_group), self->list_mode);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->pet_group), self->list_mode ? NULL : "List-mode PET data only");
  gtk_widget_set_sensitive(GTK_WIDGET(self->tof_row), self->has_tof);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->tof_row), !self->list_mode || self->has_tof ? NULL
      : "These data have no TOF bins (simulate with TOF on a scanner that has them, e.g. dmi)");
  gtk_widget_set_visible(GTK_WIDGET(self->mu_file_row), selected_mu(self) == TL_PET_MU_FILE);
  update_scatter_choices(self);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->randoms_row), !self->list_mode || self->has_delayed
      ? NULL : "These data have no delayed coincidences: randoms from a file only (tomolab-cli "
               "recon --randoms-out writes one; a scanner's list mode, e.g. the mMR's, has delayeds)");
  gtk_widget_set_visible(GTK_WIDGET(self->randoms_file_row), selected_randoms(self) == TL_PET_RANDOMS_FILE);
  gboolean sss = selected_scatter(self) == TL_PET_SCATTER_SSS;
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->scatter_row), !self->list_mode ? NULL
      : selected_mu(self) != TL_PET_MU_NONE
      ? "SSS: single scatter simulation of the current image (Watson 2000), scaled to the data "
        "by the tail fit; or a scatter estimate file (.tlsc)"
      : "Single scatter simulation needs attenuation correction (the μ-map is the scattering "
        "medium): choose a μ-map above, or a scatter estimate file");
  gtk_widget_set_visible(GTK_WIDGET(self->scatter_rounds_row), sss);
  gtk_widget_set_visible(GTK_WIDGET(self->scatter_restart_row), sss);
  gtk_widget_set_visible(GTK_WIDGET(self->scatter_file_row), selected_scatter(self) == TL_PET_SCATTER_FILE);
  /* the sensitivity files' switches, as the normalisation's: once a file is chosen */
  gtk_widget_set_sensitive(GTK_WIDGET(self->sens_switch), self->sens_path != NULL);
  gtk_widget_set_sensitive(GTK_WIDGET(self->sens_out_switch), self->sens_out_path != NULL);
  /* the normalisation's switch: once a file is chosen */
  gtk_widget_set_sensitive(GTK_WIDGET(self->norm_switch), self->norm_path != NULL);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->norm_row), self->norm_path ? self->norm_path
      : "Choose a .tln normalisation (tomolab-cli norm-estimate makes one from a cylinder scan); "
        "it is checked against the data's scanner when the run is prepared");
  gboolean cal_ok = !isnan(entered_calibration(self));
  const char *cal_text = gtk_editable_get_text(GTK_EDITABLE(self->calibration_row));
  if (cal_ok || !cal_text[0]) gtk_widget_remove_css_class(GTK_WIDGET(self->calibration_row), "error");
  else gtk_widget_add_css_class(GTK_WIDGET(self->calibration_row), "error");
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->calibration_row), cal_ok ? NULL
      : "Image value per second per Bq/mL of positron emitters, a number > 0 (tomolab-cli "
        "calibrate finds it from a phantom of known concentration)");
  g_autofree char *dur = self->data_duration > 0
      ? g_strdup_printf("s (the data's: %g s)", self->data_duration)
      : g_strdup("s (these data state no duration: give it)");
  adw_action_row_set_subtitle(self->duration_row, dur);
  TlFilterKind f = selected_filter(self);
  gtk_widget_set_visible(GTK_WIDGET(self->fwhm_row), f == TL_FILTER_GAUSS || f == TL_FILTER_METZ);
  gtk_widget_set_visible(GTK_WIDGET(self->power_row), f == TL_FILTER_METZ);
  gtk_widget_set_sensitive(GTK_WIDGET(self->placement_row), f != TL_FILTER_NONE);
  gtk_widget_set_visible(GTK_WIDGET(self->every_row),
                         f != TL_FILTER_NONE && adw_combo_row_get_selected(self->placement_row) == 1);
}

void tl_side_panel_set_pet_data(TlSidePanel *self, gboolean list_mode, gboolean tof, gboolean phantom_mu,
                                gboolean attenuated) {
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  TlPetMu was = selected_mu(self);
  self->list_mode = list_mode;
  self->has_tof = list_mode && tof;
  if (!self->has_tof)
    gtk_switch_set_active(self->tof_switch, FALSE);
  /* The phantom's map is offered only where there is one. */
  const char *labels[4] = {"None"};
  guint n = 1;
  self->mu_kinds[0] = TL_PET_MU_NONE;
  if (phantom_mu) {
    self->mu_kinds[n] = TL_PET_MU_PHANTOM;
    labels[n++] = "Phantom's μ-map";
  }
  self->mu_kinds[n] = TL_PET_MU_FILE;
  labels[n++] = "μ-map file";
  g_autoptr(GtkStringList) model = gtk_string_list_new(labels);
  adw_combo_row_set_model(self->mu_row, G_LIST_MODEL(model));
  /* Attenuated data are corrected by default; a chosen file stays chosen. */
  TlPetMu want = phantom_mu && attenuated ? TL_PET_MU_PHANTOM : was == TL_PET_MU_FILE ? was : TL_PET_MU_NONE;
  for (guint i = 0; i < n; i++)
    if (self->mu_kinds[i] == want)
      adw_combo_row_set_selected(self->mu_row, i);
  update_pet_rows(self);
  self->quiet = quiet;
}

static void emit(TlSidePanel *self, const char *what);

static void set_file_row(AdwActionRow *row, const char *path) {
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *markup = g_markup_escape_text(base, -1);
  adw_action_row_set_subtitle(row, markup);
  gtk_widget_set_tooltip_text(GTK_WIDGET(row), path);
}

void tl_side_panel_set_attenuation_file(TlSidePanel *self, const char *path) {
  g_free(self->mu_path);
  self->mu_path = g_strdup(path);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *markup = g_markup_escape_text(base, -1);
  adw_action_row_set_subtitle(self->mu_file_row, markup);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->mu_file_row), path);
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  for (guint i = 0; i < G_N_ELEMENTS(self->mu_kinds); i++)
    if (self->mu_kinds[i] == TL_PET_MU_FILE)
      adw_combo_row_set_selected(self->mu_row, i);
  update_pet_rows(self);
  self->quiet = quiet;
  emit(self, "algorithm");
}

static const char *const kCtProjectors[] = {"joseph", "siddon", "raycast", NULL};
static const char *const kCtProjectorLabels[] = {"Joseph", "Siddon", "Raycast", NULL};

/* The algorithms a modality offers, in the registry's order: list-mode PET those that run on
 * events (no explicit data vector); CT every one, and FDK. */
static void fill_algorithms(TlSidePanel *self) {
  g_ptr_array_set_size(self->algos, 0);
  g_autoptr(GtkStringList) labels = gtk_string_list_new(NULL);
  const TlAlgorithmClass *const *all = tl_registry_algorithms();
  for (guint i = 0; all[i]; i++) {
    if (!self->ct && (tl_algorithm_flags(all[i]) & TL_ALGO_NEEDS_DATA)) continue;
    g_ptr_array_add(self->algos, (gpointer)tl_algorithm_name(all[i]));
  }
  if (self->ct) g_ptr_array_add(self->algos, (gpointer) "fdk");
  for (guint i = 0; i < self->algos->len; i++) {
    g_autofree char *label = g_ascii_strup(self->algos->pdata[i], -1);
    gtk_string_list_append(labels, label);
  }
  adw_combo_row_set_model(self->algo_row, G_LIST_MODEL(labels));
}

static const char *selected_algorithm(TlSidePanel *self) {
  guint a = adw_combo_row_get_selected(self->algo_row);
  return a < self->algos->len ? self->algos->pdata[a] : "mlem";
}

static void select_algorithm(TlSidePanel *self, const char *name) {
  for (guint i = 0; i < self->algos->len; i++)
    if (g_str_equal(self->algos->pdata[i], name)) adw_combo_row_set_selected(self->algo_row, i);
}

static guint selected_flags(TlSidePanel *self) {
  const TlAlgorithmClass *k = tl_registry_algorithm(selected_algorithm(self), NULL);
  return k ? tl_algorithm_flags(k) : 0;
}

/* Whether the selected algorithm takes subsets (CT's MLEM keeps them: it is OSEM then). */
static gboolean has_subsets(TlSidePanel *self) {
  return (selected_flags(self) & TL_ALGO_SUBSETS) ||
         (self->ct && g_str_equal(selected_algorithm(self), "mlem"));
}

/* The prior rows apply to algorithms that take a prior; beta and gamma to a chosen prior,
 * gamma to the relative difference prior only. */
static void update_prior_rows(TlSidePanel *self) {
  gboolean takes = (selected_flags(self) & TL_ALGO_PRIOR) != 0;
  gtk_widget_set_sensitive(GTK_WIDGET(self->prior_group), takes);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->prior_group),
                              takes ? NULL : "Choose OSL or BSREM for a penalised reconstruction");
  guint p = adw_combo_row_get_selected(self->prior_row);
  const TlPriorClass *const *priors = tl_registry_priors();
  const char *name = p > 0 ? priors[p - 1]->name : NULL;
  gtk_widget_set_sensitive(GTK_WIDGET(self->beta_row), name != NULL);
  gtk_widget_set_visible(GTK_WIDGET(self->gamma_row), name && g_str_equal(name, "rdp"));
}

static void get_prior(TlSidePanel *self, char *name, gsize size, double *beta, double *gamma) {
  name[0] = 0;
  *beta = gtk_spin_button_get_value(self->beta_spin);
  *gamma = gtk_spin_button_get_value(self->gamma_spin);
  guint p = adw_combo_row_get_selected(self->prior_row);
  if (p > 0 && (selected_flags(self) & TL_ALGO_PRIOR))
    g_strlcpy(name, tl_registry_priors()[p - 1]->name, size);
}

void tl_side_panel_get_prior(TlSidePanel *self, char name[16], double *beta, double *gamma) {
  get_prior(self, name, 16, beta, gamma);
}

void tl_side_panel_set_prior(TlSidePanel *self, const char *name, double beta, double gamma) {
  const TlPriorClass *const *priors = tl_registry_priors();
  guint sel = 0;
  for (guint i = 0; priors[i]; i++)
    if (g_strcmp0(priors[i]->name, name) == 0) sel = i + 1;
  adw_combo_row_set_selected(self->prior_row, sel);
  gtk_spin_button_set_value(self->beta_spin, beta);
  gtk_spin_button_set_value(self->gamma_spin, gamma);
  update_prior_rows(self);
}

void tl_side_panel_set_modality(TlSidePanel *self, gboolean ct) {
  if (ct == self->ct)
    return;
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  self->ct = ct;
  fill_algorithms(self);
  g_autoptr(GListModel) projs = ct ? G_LIST_MODEL(gtk_string_list_new(kCtProjectorLabels))
                                   : pet_projector_labels();
  adw_combo_row_set_model(self->projector_row, projs);
  select_algorithm(self, ct ? "sirt" : "osem");
  adw_combo_row_set_selected(self->projector_row, 0);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  update_prior_rows(self);
  adw_preferences_row_set_title(ADW_PREFERENCES_ROW(self->scanner_row), ct ? "Acquisition" : "Scanner");
  adw_preferences_row_set_title(ADW_PREFERENCES_ROW(self->events_row), ct ? "Detector pixels (all views)" : "Events");
  update_pet_rows(self);
  self->quiet = quiet;
}

gboolean tl_side_panel_get_ct(TlSidePanel *self) { return self->ct; }

void tl_side_panel_get_ct_options(TlSidePanel *self, TlCtJobOptions *opt) {
  *opt = (TlCtJobOptions){0};
  guint p = MIN(adw_combo_row_get_selected(self->projector_row), G_N_ELEMENTS(kCtProjectors) - 2);
  g_strlcpy(opt->algo, self->ct ? selected_algorithm(self) : "sirt", sizeof opt->algo);
  get_prior(self, opt->prior, sizeof opt->prior, &opt->beta, &opt->gamma);
  g_strlcpy(opt->projector, self->ct ? kCtProjectors[p] : "joseph", sizeof opt->projector);
  opt->subsets = tl_side_panel_get_subsets(self);
  opt->centre = self->ct && self->has_centre ? gtk_spin_button_get_value(self->centre_spin) : NAN;
  opt->fdk_filter = self->fdk_filter;
}

void tl_side_panel_set_fdk_filter(TlSidePanel *self, TlCtFilter f) { self->fdk_filter = f; }

void tl_side_panel_set_ct_centre(TlSidePanel *self, gboolean parallel, double centre,
                                 guint det_u, gboolean searched) {
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  self->has_centre = parallel && isfinite(centre);
  if (self->has_centre) {
    gtk_spin_button_set_range(self->centre_spin, 0, MAX(det_u, 1) - 1.0);
    gtk_spin_button_set_value(self->centre_spin, centre);
    set_subtitle(self->centre_row, searched ? "Detector column of the rotation axis: searched "
                                              "(sharpest slice; tomolab-cli ct-recon --centre auto)"
                                            : "Detector column of the rotation axis: the geometry's");
  }
  update_pet_rows(self);
  self->quiet = quiet;
}

gboolean tl_side_panel_set_centre(TlSidePanel *self, double centre) {
  if (!self->has_centre) return FALSE;
  gtk_spin_button_set_value(self->centre_spin, centre); /* value-changed: "changed::algorithm" */
  return TRUE;
}

double tl_side_panel_get_centre(TlSidePanel *self) {
  return self->has_centre ? gtk_spin_button_get_value(self->centre_spin) : NAN;
}

guint tl_side_panel_get_subsets(TlSidePanel *self) {
  return has_subsets(self) ? (guint)gtk_spin_button_get_value_as_int(self->subsets_spin) : 1;
}

void tl_side_panel_set_ct_algorithm(TlSidePanel *self, const char *algo, guint subsets, guint iterations) {
  tl_side_panel_set_modality(self, TRUE);
  self->quiet = TRUE;
  select_algorithm(self, algo);
  gtk_spin_button_set_value(self->subsets_spin, subsets);
  gtk_spin_button_set_value(self->iterations_spin, iterations);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  update_prior_rows(self);
  self->quiet = FALSE;
}

guint tl_side_panel_get_iterations(TlSidePanel *self) {
  return (guint)gtk_spin_button_get_value_as_int(self->iterations_spin);
}

void tl_side_panel_set_iterations(TlSidePanel *self, guint iterations) {
  gtk_spin_button_set_value(self->iterations_spin, iterations);
}

void tl_side_panel_set_pet_algorithm(TlSidePanel *self, const char *algo, guint subsets,
                                     guint iterations) {
  tl_side_panel_set_modality(self, FALSE);
  self->quiet = TRUE;
  select_algorithm(self, algo);
  gtk_spin_button_set_value(self->subsets_spin, subsets);
  gtk_spin_button_set_value(self->iterations_spin, iterations);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  update_prior_rows(self);
  self->quiet = FALSE;
}

void tl_side_panel_set_algorithm(TlSidePanel *self, gboolean osem, guint subsets, guint iterations) {
  tl_side_panel_set_pet_algorithm(self, osem ? "osem" : "mlem", subsets, iterations);
}

TlColormap tl_side_panel_get_colormap(TlSidePanel *self) {
  return adw_combo_row_get_selected(self->colormap_row);
}

void tl_side_panel_set_colormap(TlSidePanel *self, TlColormap c) {
  adw_combo_row_set_selected(self->colormap_row, c);
}

TlLevelsPreset tl_side_panel_get_levels_preset(TlSidePanel *self) {
  return adw_combo_row_get_selected(self->levels_row);
}

void tl_side_panel_set_levels_preset(TlSidePanel *self, TlLevelsPreset p) {
  self->quiet = TRUE;
  adw_combo_row_set_selected(self->levels_row, p);
  self->quiet = FALSE;
}

static void emit(TlSidePanel *self, const char *what) {
  if (!self->quiet)
    g_signal_emit(self, signals[SIG_CHANGED], g_quark_from_string(what), what);
}

static void on_algorithm(TlSidePanel *self) {
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  update_pet_rows(self);
  update_prior_rows(self);
  emit(self, "algorithm");
}
/* Prior, beta, gamma: the running job takes them at its next sub-iteration. */
static void on_prior(TlSidePanel *self) {
  update_prior_rows(self);
  emit(self, "prior");
}
static void on_iterations(TlSidePanel *self) { emit(self, "iterations"); }
/* Calibration, isotope, frame: a change of the job only while Bq/mL is on. */
static void on_quant(TlSidePanel *self) {
  update_pet_rows(self);
  if (adw_expander_row_get_enable_expansion(self->quant_row)) emit(self, "algorithm");
}
static void on_display(TlSidePanel *self) { emit(self, "display"); }

static void tl_side_panel_dispose(GObject *object) {
  gtk_widget_dispose_template(GTK_WIDGET(object), TL_TYPE_SIDE_PANEL);
  G_OBJECT_CLASS(tl_side_panel_parent_class)->dispose(object);
}

static void tl_side_panel_finalize(GObject *object) {
  g_free(TL_SIDE_PANEL(object)->file);
  g_free(TL_SIDE_PANEL(object)->mu_path);
  g_free(TL_SIDE_PANEL(object)->norm_path);
  g_free(TL_SIDE_PANEL(object)->sens_path);
  g_free(TL_SIDE_PANEL(object)->sens_out_path);
  g_free(TL_SIDE_PANEL(object)->randoms_path);
  g_free(TL_SIDE_PANEL(object)->scatter_path);
  g_ptr_array_unref(TL_SIDE_PANEL(object)->algos);
  G_OBJECT_CLASS(tl_side_panel_parent_class)->finalize(object);
}

static void tl_side_panel_class_init(TlSidePanelClass *klass) {
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
  G_OBJECT_CLASS(klass)->dispose = tl_side_panel_dispose;
  G_OBJECT_CLASS(klass)->finalize = tl_side_panel_finalize;
  signals[SIG_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass),
      G_SIGNAL_RUN_LAST | G_SIGNAL_DETAILED, 0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  gtk_widget_class_set_template_from_resource(wc, "/org/tomolab/Tomolab/ui/tl-side-panel.ui");
  gtk_widget_class_bind_template_child(wc, TlSidePanel, file_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, format_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scanner_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, events_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, grid_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, truth_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, algo_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, projector_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, colormap_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, levels_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, subsets_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, subsets_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, iterations_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tor_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tor_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, rays_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, rays_t_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, rays_z_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, centre_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, centre_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, pet_group);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tof_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tof_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, randoms_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, randoms_file_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, norm_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, norm_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, sens_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, sens_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, sens_out_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, sens_out_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_rounds_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_rounds_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_restart_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_restart_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, scatter_file_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, quant_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, calibration_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, isotope_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, frame_start_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, frame_start_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, duration_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, duration_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, mu_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, mu_file_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, filter_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, fwhm_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, fwhm_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, power_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, power_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, placement_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, every_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, every_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, prior_group);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, prior_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, beta_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, beta_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, gamma_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, gamma_spin);
  gtk_widget_class_bind_template_callback(wc, on_algorithm);
  gtk_widget_class_bind_template_callback(wc, on_prior);
  gtk_widget_class_bind_template_callback(wc, on_quant);
  gtk_widget_class_bind_template_callback(wc, on_iterations);
  gtk_widget_class_bind_template_callback(wc, on_display);
}

static void tl_side_panel_init(TlSidePanel *self) {
  self->quiet = TRUE;
  self->fdk_filter = TL_CT_FILTER_SHEPP_LOGAN;
  self->algos = g_ptr_array_new();
  gtk_widget_init_template(GTK_WIDGET(self));
  {
    g_autoptr(GtkStringList) priors = gtk_string_list_new(NULL);
    gtk_string_list_append(priors, "None");
    const TlPriorClass *const *all = tl_registry_priors();
    for (guint i = 0; all[i]; i++) gtk_string_list_append(priors, all[i]->summary ? all[i]->name : "?");
    adw_combo_row_set_model(self->prior_row, G_LIST_MODEL(priors));
  }
  {
    g_autoptr(GListModel) projs = pet_projector_labels();
    adw_combo_row_set_model(self->projector_row, projs);
  }
  {
    g_autoptr(GtkStringList) isotopes = gtk_string_list_new(NULL);
    guint n = 0;
    const TlIsotope *all = tl_isotopes(&n);
    for (guint i = 0; i < n; i++) {
      g_autofree char *label = g_str_equal(all[i].name, "none")
          ? g_strdup("None (no decay)")
          : g_strdup_printf("%s (T½ %.4g min)", all[i].name, all[i].half_life_s / 60);
      gtk_string_list_append(isotopes, label);
    }
    adw_combo_row_set_model(self->isotope_row, G_LIST_MODEL(isotopes));
  }
  update_randoms_choices(self, TL_PET_RANDOMS_OFF);
  self->ct = TRUE; /* so set_modality(FALSE) fills the PET lists */
  tl_side_panel_set_modality(self, FALSE);
  gtk_spin_button_set_value(self->tor_spin, TL_TOR_FWHM_DEFAULT);
  tl_side_panel_set_pet_data(self, FALSE, FALSE, FALSE, FALSE);
  self->quiet = FALSE;
}

/* The PET settings the command line's --set gives (tl-application.c), as if chosen. */
void tl_side_panel_set_tof(TlSidePanel *self, gboolean on) {
  gtk_switch_set_active(self->tof_switch, on);
}

/* Selects `kind` in a combo row of kinds; FALSE when it is not offered. */
static gboolean select_kind(AdwComboRow *row, const int *kinds, guint n, int kind) {
  for (guint i = 0; i < n; i++)
    if (kinds[i] == kind) {
      adw_combo_row_set_selected(row, i);
      return TRUE;
    }
  return FALSE;
}

gboolean tl_side_panel_set_randoms(TlSidePanel *self, TlPetRandoms kind) {
  int kinds[G_N_ELEMENTS(self->randoms_kinds)];
  for (guint i = 0; i < self->n_randoms_kinds; i++) kinds[i] = self->randoms_kinds[i];
  return select_kind(self->randoms_row, kinds, self->n_randoms_kinds, kind);
}

void tl_side_panel_set_randoms_file(TlSidePanel *self, const char *path) {
  g_free(self->randoms_path);
  self->randoms_path = g_strdup(path);
  set_file_row(self->randoms_file_row, path);
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  tl_side_panel_set_randoms(self, TL_PET_RANDOMS_FILE);
  update_pet_rows(self);
  self->quiet = quiet;
  emit(self, "algorithm");
}

gboolean tl_side_panel_set_scatter(TlSidePanel *self, TlPetScatter kind, guint rounds,
                                   gboolean restart) {
  if (kind == TL_PET_SCATTER_SSS) {
    gboolean quiet = self->quiet;
    self->quiet = TRUE; /* one change, not two */
    if (rounds) gtk_spin_button_set_value(self->scatter_rounds_spin, rounds);
    gtk_switch_set_active(self->scatter_restart_switch, restart);
    self->quiet = quiet;
  }
  int kinds[3];
  for (guint i = 0; i < self->n_scatter_kinds; i++) kinds[i] = self->scatter_kinds[i];
  return select_kind(self->scatter_row, kinds, self->n_scatter_kinds, kind);
}

void tl_side_panel_set_scatter_file(TlSidePanel *self, const char *path) {
  g_free(self->scatter_path);
  self->scatter_path = g_strdup(path);
  set_file_row(self->scatter_file_row, path);
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  tl_side_panel_set_scatter(self, TL_PET_SCATTER_FILE, 0, FALSE);
  update_pet_rows(self);
  self->quiet = quiet;
  emit(self, "algorithm");
}

void tl_side_panel_set_norm_file(TlSidePanel *self, const char *path) {
  g_free(self->norm_path);
  self->norm_path = g_strdup(path);
  set_file_row(self->norm_row, path);
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  update_pet_rows(self);
  gtk_switch_set_active(self->norm_switch, TRUE);
  self->quiet = quiet;
  emit(self, "algorithm");
}

/* A file row with its switch (sensitivity, sensitivity-out): the path kept, switched on. */
static void set_switched_file(TlSidePanel *self, char **slot, AdwActionRow *row, GtkSwitch *sw,
                              const char *path) {
  g_free(*slot);
  *slot = g_strdup(path);
  set_file_row(row, path);
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  update_pet_rows(self);
  gtk_switch_set_active(sw, TRUE);
  self->quiet = quiet;
  emit(self, "algorithm");
}

void tl_side_panel_set_sensitivity_file(TlSidePanel *self, const char *path) {
  if (path) set_switched_file(self, &self->sens_path, self->sens_row, self->sens_switch, path);
  else gtk_switch_set_active(self->sens_switch, FALSE);
}

void tl_side_panel_set_sensitivity_out(TlSidePanel *self, const char *path) {
  if (path)
    set_switched_file(self, &self->sens_out_path, self->sens_out_row, self->sens_out_switch, path);
  else gtk_switch_set_active(self->sens_out_switch, FALSE);
}

gboolean tl_side_panel_set_norm(TlSidePanel *self, gboolean on) {
  if (on && !self->norm_path) return FALSE;
  gtk_switch_set_active(self->norm_switch, on);
  return TRUE;
}

gboolean tl_side_panel_set_quant(TlSidePanel *self, gboolean on, double calibration,
                                 const char *isotope, double frame_start_s, double duration_s) {
  guint n = 0, sel = G_MAXUINT;
  const TlIsotope *all = tl_isotopes(&n);
  const TlIsotope *iso = isotope ? tl_isotope_find(isotope, NULL) : NULL;
  if (isotope && !iso) return FALSE;
  for (guint i = 0; iso && i < n; i++)
    if (&all[i] == iso) sel = i;
  gboolean quiet = self->quiet;
  self->quiet = TRUE; /* the children first, then one change */
  if (!isnan(calibration)) {
    char text[G_ASCII_DTOSTR_BUF_SIZE];
    gtk_editable_set_text(GTK_EDITABLE(self->calibration_row),
                          g_ascii_formatd(text, sizeof text, "%.9g", calibration));
  }
  if (sel != G_MAXUINT) adw_combo_row_set_selected(self->isotope_row, sel);
  if (!isnan(frame_start_s)) gtk_spin_button_set_value(self->frame_start_spin, frame_start_s);
  if (!isnan(duration_s)) gtk_spin_button_set_value(self->duration_spin, duration_s);
  gboolean was = adw_expander_row_get_enable_expansion(self->quant_row);
  adw_expander_row_set_enable_expansion(self->quant_row, on);
  adw_expander_row_set_expanded(self->quant_row, on); /* the values in view */
  update_pet_rows(self);
  self->quiet = quiet;
  if (was || on) emit(self, "algorithm");
  return TRUE;
}

void tl_side_panel_set_frame_defaults(TlSidePanel *self, double start_s, double duration_s) {
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  /* data without a stated frame: 0, never the previous data's (the job then asks for it) */
  self->data_duration = duration_s > 0 ? duration_s : 0;
  gtk_spin_button_set_value(self->duration_spin, self->data_duration);
  gtk_spin_button_set_value(self->frame_start_spin, duration_s > 0 ? MAX(start_s, 0) : 0);
  update_pet_rows(self);
  self->quiet = quiet;
}

void tl_side_panel_set_delayed(TlSidePanel *self, gboolean delayed, gboolean singles) {
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  TlPetRandoms was = selected_randoms(self);
  self->has_delayed = self->list_mode && delayed;
  self->has_singles = self->list_mode && singles;
  /* new data: randoms from their delayeds by default, as a scanner's software does; a chosen
   * file stays chosen */
  update_randoms_choices(self, self->has_delayed ? TL_PET_RANDOMS_DELAYEDS
                               : was == TL_PET_RANDOMS_FILE ? was : TL_PET_RANDOMS_OFF);
  update_pet_rows(self);
  self->quiet = quiet;
}

gboolean tl_side_panel_set_projector(TlSidePanel *self, const char *name) {
  /* the list of the modality shown: CT data take CT projectors, PET the registry's list-mode
   * ones (pet_projector) */
  if (self->ct) {
    for (guint i = 0; kCtProjectors[i]; i++)
      if (g_str_equal(kCtProjectors[i], name)) {
        adw_combo_row_set_selected(self->projector_row, i);
        return TRUE;
      }
    return FALSE;
  }
  guint i = 0;
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++)
    if ((*p)->flags & TL_PROJECTOR_LISTMODE) {
      if (g_str_equal((*p)->name, name)) {
        adw_combo_row_set_selected(self->projector_row, i);
        return TRUE;
      }
      i++;
    }
  return FALSE;
}

void tl_side_panel_set_arc(TlSidePanel *self, gboolean arc) {
  gtk_widget_set_visible(GTK_WIDGET(self->rays_row), arc && !self->ct);
}

void tl_side_panel_set_rays(TlSidePanel *self, guint tangential, guint axial) {
  gtk_spin_button_set_value(self->rays_t_spin, MAX(tangential, 1));
  gtk_spin_button_set_value(self->rays_z_spin, MAX(axial, 1));
}

void tl_side_panel_set_filter(TlSidePanel *self, const TlFilter *f, guint every) {
  for (guint i = 0; i < G_N_ELEMENTS(kFilters); i++)
    if (kFilters[i] == f->kind) adw_combo_row_set_selected(self->filter_row, i);
  if (f->kind == TL_FILTER_GAUSS || f->kind == TL_FILTER_METZ)
    gtk_spin_button_set_value(self->fwhm_spin, f->fwhm_mm);
  if (f->kind == TL_FILTER_METZ) gtk_spin_button_set_value(self->power_spin, f->power);
  adw_combo_row_set_selected(self->placement_row, every ? 1 : 0);
  if (every) gtk_spin_button_set_value(self->every_spin, every);
}

/* Once the panel is laid out (its scrolled window knows its range): the Corrections group at
 * the top; a few frames at most. */
static gboolean scroll_tick(GtkWidget *w, GdkFrameClock *clock, gpointer data) {
  TlSidePanel *self = TL_SIDE_PANEL(w);
  guint *frames = data;
  GtkScrolledWindow *sw = GTK_SCROLLED_WINDOW(adw_bin_get_child(ADW_BIN(self)));
  GtkWidget *content = gtk_widget_get_parent(GTK_WIDGET(self->pet_group)); /* the panel's box */
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(sw);
  graphene_rect_t r;
  if (gtk_widget_compute_bounds(GTK_WIDGET(self->pet_group), content, &r)) {
    double want = MAX(r.origin.y - 6, 0);
    gtk_adjustment_set_value(adj, want);
    if (fabs(gtk_adjustment_get_value(adj) - want) < 1 && gtk_widget_get_height(content) > 0 &&
        ++*frames > 3)
      return G_SOURCE_REMOVE;
  }
  return ++frames[1] < 120 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

void tl_side_panel_show_corrections(TlSidePanel *self) {
  guint *frames = g_new0(guint, 2);
  gtk_widget_add_tick_callback(GTK_WIDGET(self), scroll_tick, frames, g_free);
}
