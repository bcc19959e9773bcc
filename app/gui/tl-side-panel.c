/* Layout in ui/tl-side-panel.ui. TOF, attenuation and filters arrive with the PET
 * extensions: their rows exist (so the layout is final) but are insensitive. */
#include "tl-side-panel.h"

struct _TlSidePanel {
  AdwBin parent_instance;
  AdwActionRow *file_row, *scanner_row, *events_row, *grid_row, *truth_row;
  AdwComboRow *algo_row, *projector_row, *colormap_row, *levels_row;
  GtkSpinButton *subsets_spin, *iterations_spin;
  AdwActionRow *subsets_row;
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

void tl_side_panel_get_options(TlSidePanel *self, TlPetJobOptions *opt) {
  *opt = (TlPetJobOptions){0};
  opt->osem = adw_combo_row_get_selected(self->algo_row) == 1;
  opt->subsets = opt->osem ? (guint)gtk_spin_button_get_value_as_int(self->subsets_spin) : 1;
  g_strlcpy(opt->projector, adw_combo_row_get_selected(self->projector_row) == 1 ? "joseph" : "siddon",
            sizeof opt->projector);
}

static const char *const kCtAlgos[] = {"sirt", "os-sart", "cgls", "mlem", "fdk", NULL};
static const char *const kCtAlgoLabels[] = {"SIRT", "OS-SART", "CGLS", "MLEM", "FDK", NULL};
static const char *const kCtProjectors[] = {"joseph", "siddon", "raycast", NULL};
static const char *const kCtProjectorLabels[] = {"Joseph", "Siddon", "Raycast", NULL};
static const char *const kPetAlgoLabels[] = {"MLEM", "OSEM", NULL};
static const char *const kPetProjectorLabels[] = {"Siddon", "Joseph", NULL};

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
  gtk_widget_class_bind_template_callback(wc, on_algorithm);
  gtk_widget_class_bind_template_callback(wc, on_iterations);
  gtk_widget_class_bind_template_callback(wc, on_display);
}

static void tl_side_panel_init(TlSidePanel *self) {
  self->quiet = TRUE;
  gtk_widget_init_template(GTK_WIDGET(self));
  self->quiet = FALSE;
}
