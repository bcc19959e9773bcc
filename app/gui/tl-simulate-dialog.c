/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Layout in ui/tl-simulate-dialog.ui; the choices come from the PET core's preset lists. */
#include "tl-simulate-dialog.h"
#include "image/tl-phantom.h"
#include "pet/scanner/tl-scanner.h"
#include "ct/tl-ct-phantom.h"
#include "dataset/tl-dataset.h"

struct _TlSimulateDialog {
  AdwWindow parent_instance;
  AdwComboRow *phantom_row, *scanner_row;
  GtkSpinButton *events_spin, *seed_spin, *coarsen_spin;
  GtkSwitch *attenuation_switch, *tof_switch;
  AdwActionRow *tof_row;
  AdwComboRow *modality_row, *ct_phantom_row, *beam_row;
  AdwPreferencesGroup *pet_group, *ct_group;
  GtkSpinButton *size_spin, *views_spin, *detector_spin, *i0_spin, *ct_seed_spin;
};

G_DEFINE_FINAL_TYPE(TlSimulateDialog, tl_simulate_dialog, ADW_TYPE_WINDOW)

static const char *selected_string(AdwComboRow *row) {
  GtkStringObject *o = GTK_STRING_OBJECT(adw_combo_row_get_selected_item(row));
  return o ? gtk_string_object_get_string(o) : "";
}

gboolean tl_simulate_dialog_get_ct(TlSimulateDialog *self) {
  return adw_combo_row_get_selected(self->modality_row) == 1;
}

void tl_simulate_dialog_set_ct(TlSimulateDialog *self, gboolean ct) {
  adw_combo_row_set_selected(self->modality_row, ct ? 1 : 0);
}

static void on_modality(TlSimulateDialog *self) {
  gboolean ct = tl_simulate_dialog_get_ct(self);
  gtk_widget_set_visible(GTK_WIDGET(self->ct_group), ct);
  gtk_widget_set_visible(GTK_WIDGET(self->pet_group), !ct);
}

/* TOF only where the scanner preset records TOF bins (the simulator refuses it elsewhere). */
static void on_scanner(TlSimulateDialog *self) {
  g_autoptr(TlScanner) s = tl_scanner_new_preset(selected_string(self->scanner_row), NULL);
  gboolean tof = s && s->tof_bins > 0;
  gtk_widget_set_sensitive(GTK_WIDGET(self->tof_row), tof);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->tof_row), tof ? NULL : "This scanner has no TOF bins");
  if (!tof)
    gtk_switch_set_active(self->tof_switch, FALSE);
}

static guint32 spin_u(GtkSpinButton *s) { return (guint32)gtk_spin_button_get_value(s); }

GVariant *tl_simulate_dialog_get_params(TlSimulateDialog *self) {
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
  if (tl_simulate_dialog_get_ct(self)) {
    g_variant_builder_add(&b, "{sv}", "modality", g_variant_new_string("ct"));
    g_variant_builder_add(&b, "{sv}", "phantom", g_variant_new_string(selected_string(self->ct_phantom_row)));
    g_variant_builder_add(&b, "{sv}", "beam", g_variant_new_string(adw_combo_row_get_selected(self->beam_row) == 1 ? "parallel" : "cone"));
    g_variant_builder_add(&b, "{sv}", "size", g_variant_new_uint32(spin_u(self->size_spin)));
    g_variant_builder_add(&b, "{sv}", "views", g_variant_new_uint32(spin_u(self->views_spin)));
    g_variant_builder_add(&b, "{sv}", "detector", g_variant_new_uint32(spin_u(self->detector_spin)));
    g_variant_builder_add(&b, "{sv}", "i0", g_variant_new_double(gtk_spin_button_get_value(self->i0_spin)));
    g_variant_builder_add(&b, "{sv}", "seed", g_variant_new_uint64((guint64)gtk_spin_button_get_value(self->ct_seed_spin)));
    return g_variant_builder_end(&b);
  }
  g_variant_builder_add(&b, "{sv}", "phantom", g_variant_new_string(selected_string(self->phantom_row)));
  g_variant_builder_add(&b, "{sv}", "scanner", g_variant_new_string(selected_string(self->scanner_row)));
  g_variant_builder_add(&b, "{sv}", "events", g_variant_new_double(gtk_spin_button_get_value(self->events_spin)));
  g_variant_builder_add(&b, "{sv}", "seed", g_variant_new_uint64((guint64)gtk_spin_button_get_value(self->seed_spin)));
  g_variant_builder_add(&b, "{sv}", "coarsen", g_variant_new_uint32((guint32)gtk_spin_button_get_value(self->coarsen_spin)));
  g_variant_builder_add(&b, "{sv}", "attenuation", g_variant_new_boolean(gtk_switch_get_active(self->attenuation_switch)));
  g_variant_builder_add(&b, "{sv}", "tof", g_variant_new_boolean(gtk_switch_get_active(self->tof_switch)));
  return g_variant_builder_end(&b);
}

static void on_simulate(TlSimulateDialog *self) {
  GtkWindow *parent = gtk_window_get_transient_for(GTK_WINDOW(self));
  if (parent)
    g_action_group_activate_action(G_ACTION_GROUP(parent), "simulate", tl_simulate_dialog_get_params(self));
  gtk_window_destroy(GTK_WINDOW(self));
}

static void on_cancel(TlSimulateDialog *self) { gtk_window_destroy(GTK_WINDOW(self)); }

static GListModel *names_model(const char *const *names) {
  return G_LIST_MODEL(gtk_string_list_new(names));
}

static void tl_simulate_dialog_class_init(TlSimulateDialogClass *klass) {
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
  gtk_widget_class_set_template_from_resource(wc, "/org/tomolab/Tomolab/ui/tl-simulate-dialog.ui");
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, phantom_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, scanner_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, events_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, seed_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, coarsen_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, attenuation_switch);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, tof_switch);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, tof_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, modality_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, ct_phantom_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, beam_row);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, pet_group);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, ct_group);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, size_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, views_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, detector_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, i0_spin);
  gtk_widget_class_bind_template_child(wc, TlSimulateDialog, ct_seed_spin);
  gtk_widget_class_bind_template_callback(wc, on_modality);
  gtk_widget_class_bind_template_callback(wc, on_simulate);
  gtk_widget_class_bind_template_callback(wc, on_cancel);
  gtk_widget_class_add_binding_action(wc, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void select_name(AdwComboRow *row, const char *name) {
  GListModel *m = adw_combo_row_get_model(row);
  for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
    g_autoptr(GtkStringObject) o = g_list_model_get_item(m, i);
    if (g_strcmp0(gtk_string_object_get_string(o), name) == 0)
      adw_combo_row_set_selected(row, i);
  }
}

static void tl_simulate_dialog_init(TlSimulateDialog *self) {
  gtk_widget_init_template(GTK_WIDGET(self));
  g_autoptr(GListModel) phantoms = names_model(tl_phantom_preset_names());
  g_autoptr(GListModel) scanners = names_model(tl_scanner_preset_names());
  adw_combo_row_set_model(self->phantom_row, phantoms);
  adw_combo_row_set_model(self->scanner_row, scanners);
  select_name(self->phantom_row, "nema");
  select_name(self->scanner_row, "dmi");
  g_signal_connect_swapped(self->scanner_row, "notify::selected", G_CALLBACK(on_scanner), self);
  on_scanner(self);
  g_autoptr(GListModel) ct_phantoms = names_model(tl_ct_phantom_preset_names());
  adw_combo_row_set_model(self->ct_phantom_row, ct_phantoms);
  select_name(self->ct_phantom_row, "shepp-logan");
  /* the dataset layer's defaults, as the demo and `tomolab-cli simulate` take them */
  gtk_spin_button_set_value(self->events_spin, TL_DATASET_SIM_EVENTS);
  gtk_spin_button_set_value(self->coarsen_spin, TL_DATASET_PET_COARSEN);
}

GtkWidget *tl_simulate_dialog_new(GtkWindow *parent) {
  return g_object_new(TL_TYPE_SIMULATE_DIALOG, "transient-for", parent, "modal", TRUE, NULL);
}
