/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Renders a realized widget (usually a whole window), or an off-screen drawing, into a PNG
 * file. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

gboolean tl_widget_save_png(GtkWidget *widget, const char *path, GError **error);
/* Writes a cairo image surface as a PNG and destroys it (the plots' and the data view's
 * exports, drawn off screen). */
gboolean tl_surface_save_png(cairo_surface_t *surface, const char *path, GError **error);

G_END_DECLS
