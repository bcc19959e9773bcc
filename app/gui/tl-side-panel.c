/* Layout in ui/tl-side-panel.ui. The PET extensions (TOF, attenuation, filter, the tube
 * of response) are list-mode PET options: their group is insensitive for CT data and
 * images, and each row only applies (is sensitive or shown) when its choice can be used. */
#include "tl-side-panel.h"
#include "pet/tl-projector.h"

struct _TlSidePanel {
  AdwBin parent_instance;
  AdwActionRow *file_row, *scanner_row, *events_row, *grid_row, *truth_row;
  AdwComboRow *algo_row, *projector_row, *colormap_row, *levels_row;
  GtkSpinButton *subsets_spin, *iterations_spin;
  AdwActionRow *subsets_row;
  /* PET extensions */
  AdwActionRow *tor_row, *tof_row, *mu_file_row, *fwhm_row, *every_row;
  AdwComboRow *mu_row, *filter_row, *placement_row;
  GtkSpinButton *tor_spin, *fwhm_spin, *every_spin;
  GtkSwitch *tof_switch;
  AdwPreferencesGroup *pet_group;
  TlPetMu mu_kinds[3];  /* mu_row's items */
  char *mu_path;
  gboolean list_mode, has_tof;
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

static const char *const kPetProjectors[] = {"siddon", "joseph", "tor", NULL};
static const TlFilterKind kFilters[] = {TL_FILTER_NONE, TL_FILTER_MEDIAN3, TL_FILTER_MEDIAN5, TL_FILTER_GAUSS};

static TlPetMu selected_mu(TlSidePanel *self) {
  return self->mu_kinds[MIN(adw_combo_row_get_selected(self->mu_row), G_N_ELEMENTS(self->mu_kinds) - 1)];
}

static TlFilterKind selected_filter(TlSidePanel *self) {
  return kFilters[MIN(adw_combo_row_get_selected(self->filter_row), G_N_ELEMENTS(kFilters) - 1)];
}

void tl_side_panel_get_options(TlSidePanel *self, TlPetJobOptions *opt) {
  *opt = (TlPetJobOptions){0};
  opt->osem = adw_combo_row_get_selected(self->algo_row) == 1;
  opt->subsets = opt->osem ? (guint)gtk_spin_button_get_value_as_int(self->subsets_spin) : 1;
  guint p = MIN(adw_combo_row_get_selected(self->projector_row), G_N_ELEMENTS(kPetProjectors) - 2);
  g_strlcpy(opt->projector, self->ct ? "siddon" : kPetProjectors[p], sizeof opt->projector);
  opt->tor_fwhm_mm = gtk_spin_button_get_value(self->tor_spin);
  opt->tof = self->has_tof && gtk_switch_get_active(self->tof_switch);
  opt->mu = selected_mu(self);
  opt->mu_path = opt->mu == TL_PET_MU_FILE ? g_strdup(self->mu_path) : NULL;
  opt->filter = (TlFilter){selected_filter(self), gtk_spin_button_get_value(self->fwhm_spin)};
  if (opt->filter.kind != TL_FILTER_NONE && adw_combo_row_get_selected(self->placement_row) == 1)
    opt->filter_every = (guint)gtk_spin_button_get_value_as_int(self->every_spin);
}

/* Which PET rows apply: the group to list-mode data, TOF to data with TOF bins; the rows
 * refining a choice (tube width, mu-map file, FWHM, interval) show only with it. */
static void update_pet_rows(TlSidePanel *self) {
  gtk_widget_set_visible(GTK_WIDGET(self->tor_row), !self->ct && adw_combo_row_get_selected(self->projector_row) == 2);
  gtk_widget_set_sensitive(GTK_WIDGET(self->pet_group), self->list_mode);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->pet_group), self->list_mode ? NULL : "List-mode PET data only");
  gtk_widget_set_sensitive(GTK_WIDGET(self->tof_row), self->has_tof);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->tof_row), !self->list_mode || self->has_tof ? NULL
      : "These data have no TOF bins (simulate with TOF on a scanner that has them, e.g. dmi)");
  gtk_widget_set_visible(GTK_WIDGET(self->mu_file_row), selected_mu(self) == TL_PET_MU_FILE);
  TlFilterKind f = selected_filter(self);
  gtk_widget_set_visible(GTK_WIDGET(self->fwhm_row), f == TL_FILTER_GAUSS);
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

static const char *const kCtAlgos[] = {"sirt", "os-sart", "cgls", "mlem", "fdk", NULL};
static const char *const kCtAlgoLabels[] = {"SIRT", "OS-SART", "CGLS", "MLEM", "FDK", NULL};
static const char *const kCtProjectors[] = {"joseph", "siddon", "raycast", NULL};
static const char *const kCtProjectorLabels[] = {"Joseph", "Siddon", "Raycast", NULL};
static const char *const kPetAlgoLabels[] = {"MLEM", "OSEM", NULL};
static const char *const kPetProjectorLabels[] = {"Siddon", "Joseph", "Tube of response", NULL};

/* Whether the selected algorithm takes subsets. */
static gboolean has_subsets(TlSidePanel *self) {
  guint a = adw_combo_row_get_selected(self->algo_row);
  return self->ct ? (a == 1 || a == 3) : a == 1;
}

void tl_side_panel_set_modality(TlSidePanel *self, gboolean ct) {
  if (ct == self->ct)
    return;
  gboolean quiet = self->quiet;
  self->quiet = TRUE;
  self->ct = ct;
  g_autoptr(GtkStringList) algos = gtk_string_list_new(ct ? kCtAlgoLabels : kPetAlgoLabels);
  g_autoptr(GtkStringList) projs = gtk_string_list_new(ct ? kCtProjectorLabels : kPetProjectorLabels);
  adw_combo_row_set_model(self->algo_row, G_LIST_MODEL(algos));
  adw_combo_row_set_model(self->projector_row, G_LIST_MODEL(projs));
  adw_combo_row_set_selected(self->algo_row, ct ? 0 : 1);   /* SIRT / OSEM */
  adw_combo_row_set_selected(self->projector_row, 0);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  adw_preferences_row_set_title(ADW_PREFERENCES_ROW(self->scanner_row), ct ? "Acquisition" : "Scanner");
  adw_preferences_row_set_title(ADW_PREFERENCES_ROW(self->events_row), ct ? "Detector pixels (all views)" : "Events");
  update_pet_rows(self);
  self->quiet = quiet;
}

gboolean tl_side_panel_get_ct(TlSidePanel *self) { return self->ct; }

void tl_side_panel_get_ct_options(TlSidePanel *self, TlCtJobOptions *opt) {
  *opt = (TlCtJobOptions){0};
  guint a = MIN(adw_combo_row_get_selected(self->algo_row), G_N_ELEMENTS(kCtAlgos) - 2);
  guint p = MIN(adw_combo_row_get_selected(self->projector_row), G_N_ELEMENTS(kCtProjectors) - 2);
  g_strlcpy(opt->algo, self->ct ? kCtAlgos[a] : "sirt", sizeof opt->algo);
  g_strlcpy(opt->projector, self->ct ? kCtProjectors[p] : "joseph", sizeof opt->projector);
  opt->subsets = tl_side_panel_get_subsets(self);
}

guint tl_side_panel_get_subsets(TlSidePanel *self) {
  return has_subsets(self) ? (guint)gtk_spin_button_get_value_as_int(self->subsets_spin) : 1;
}

void tl_side_panel_set_ct_algorithm(TlSidePanel *self, const char *algo, guint subsets, guint iterations) {
  tl_side_panel_set_modality(self, TRUE);
  self->quiet = TRUE;
  for (guint i = 0; kCtAlgos[i]; i++)
    if (g_strcmp0(kCtAlgos[i], algo) == 0)
      adw_combo_row_set_selected(self->algo_row, i);
  gtk_spin_button_set_value(self->subsets_spin, subsets);
  gtk_spin_button_set_value(self->iterations_spin, iterations);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), has_subsets(self));
  self->quiet = FALSE;
}

guint tl_side_panel_get_iterations(TlSidePanel *self) {
  return (guint)gtk_spin_button_get_value_as_int(self->iterations_spin);
}

void tl_side_panel_set_iterations(TlSidePanel *self, guint iterations) {
  gtk_spin_button_set_value(self->iterations_spin, iterations);
}

void tl_side_panel_set_algorithm(TlSidePanel *self, gboolean osem, guint subsets, guint iterations) {
  tl_side_panel_set_modality(self, FALSE);
  self->quiet = TRUE;
  adw_combo_row_set_selected(self->algo_row, osem ? 1 : 0);
  gtk_spin_button_set_value(self->subsets_spin, subsets);
  gtk_spin_button_set_value(self->iterations_spin, iterations);
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), osem);
  self->quiet = FALSE;
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
  emit(self, "algorithm");
}
static void on_iterations(TlSidePanel *self) { emit(self, "iterations"); }
static void on_display(TlSidePanel *self) { emit(self, "display"); }

static void tl_side_panel_dispose(GObject *object) {
  gtk_widget_dispose_template(GTK_WIDGET(object), TL_TYPE_SIDE_PANEL);
  G_OBJECT_CLASS(tl_side_panel_parent_class)->dispose(object);
}

static void tl_side_panel_finalize(GObject *object) {
  g_free(TL_SIDE_PANEL(object)->file);
  g_free(TL_SIDE_PANEL(object)->mu_path);
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
  gtk_widget_class_bind_template_child(wc, TlSidePanel, pet_group);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tof_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, tof_switch);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, mu_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, mu_file_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, filter_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, fwhm_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, fwhm_spin);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, placement_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, every_row);
  gtk_widget_class_bind_template_child(wc, TlSidePanel, every_spin);
  gtk_widget_class_bind_template_callback(wc, on_algorithm);
  gtk_widget_class_bind_template_callback(wc, on_iterations);
  gtk_widget_class_bind_template_callback(wc, on_display);
}

static void tl_side_panel_init(TlSidePanel *self) {
  self->quiet = TRUE;
  gtk_widget_init_template(GTK_WIDGET(self));
  gtk_spin_button_set_value(self->tor_spin, TL_TOR_FWHM_DEFAULT);
  tl_side_panel_set_pet_data(self, FALSE, FALSE, FALSE, FALSE);
  self->quiet = FALSE;
}
