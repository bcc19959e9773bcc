/* Renders a realized widget (usually a whole window) into a PNG file. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

gboolean tl_widget_save_png(GtkWidget *widget, const char *path, GError **error);

G_END_DECLS
