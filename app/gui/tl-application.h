/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlApplication: the `tomolab` GTK application (org.tomolab.Tomolab).
 * Owns the command-line options and the app-wide actions (about, quit). */
#pragma once
#include <adwaita.h>

G_BEGIN_DECLS

#define TL_APPLICATION_ID "org.tomolab.Tomolab"

#define TL_TYPE_APPLICATION (tl_application_get_type())
G_DECLARE_FINAL_TYPE(TlApplication, tl_application, TL, APPLICATION, AdwApplication)

TlApplication *tl_application_new(void);
/* Non-zero when a --screenshot run failed; main() returns it. */
int tl_application_get_exit_status(TlApplication *self);

G_END_DECLS
