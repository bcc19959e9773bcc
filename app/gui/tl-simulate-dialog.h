/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSimulateDialog: a modality switch, then for PET phantom, scanner preset, events, seed,
 * grid coarsening, attenuation and TOF (scanners with TOF bins only), for CT phantom, beam, volume, views, detector, incident photons and seed;
 * "Simulate" activates win.simulate on the window it belongs to with an a{sv} of those
 * values (CT: modality = "ct"). */
#pragma once
#include <adwaita.h>

G_BEGIN_DECLS

#define TL_TYPE_SIMULATE_DIALOG (tl_simulate_dialog_get_type())
G_DECLARE_FINAL_TYPE(TlSimulateDialog, tl_simulate_dialog, TL, SIMULATE_DIALOG, AdwWindow)

GtkWidget *tl_simulate_dialog_new(GtkWindow *parent);
/* The parameters as win.simulate takes them. */
GVariant *tl_simulate_dialog_get_params(TlSimulateDialog *self);
gboolean tl_simulate_dialog_get_ct(TlSimulateDialog *self);
void tl_simulate_dialog_set_ct(TlSimulateDialog *self, gboolean ct);

G_END_DECLS
