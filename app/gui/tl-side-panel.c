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

guint tl_side_panel_get_iterations(TlSidePanel *self) {
  return (guint)gtk_spin_button_get_value_as_int(self->iterations_spin);
}

void tl_side_panel_set_iterations(TlSidePanel *self, guint iterations) {
  gtk_spin_button_set_value(self->iterations_spin, iterations);
}

void tl_side_panel_set_algorithm(TlSidePanel *self, gboolean osem, guint subsets, guint iterations) {
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
  gtk_widget_set_sensitive(GTK_WIDGET(self->subsets_row), adw_combo_row_get_selected(self->algo_row) == 1);
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
