/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Draws the widget through its paintable into a render node and has the window's own
 * GskRenderer turn that into a texture: what is saved is what the screen shows. */
#include "tl-screenshot.h"

gboolean tl_widget_save_png(GtkWidget *widget, const char *path, GError **error) {
  GtkNative *native = gtk_widget_get_native(widget);
  GskRenderer *renderer = native ? gtk_native_get_renderer(native) : NULL;
  int width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget);
  if (!renderer || width <= 0 || height <= 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot screenshot a widget that is not shown");
    return FALSE;
  }

  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(widget);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new();
  gdk_paintable_snapshot(paintable, GDK_SNAPSHOT(snapshot), width, height);
  g_autoptr(GskRenderNode) node = gtk_snapshot_free_to_node(g_steal_pointer(&snapshot));
  if (!node) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "The widget drew nothing");
    return FALSE;
  }

  graphene_rect_t bounds = GRAPHENE_RECT_INIT(0, 0, width, height);
  g_autoptr(GdkTexture) texture = gsk_renderer_render_texture(renderer, node, &bounds);
  if (!gdk_texture_save_to_png(texture, path)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "Could not write %s", path);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_surface_save_png(cairo_surface_t *surface, const char *path, GError **error) {
  cairo_status_t st = cairo_surface_write_to_png(surface, path);
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "Could not write %s: %s", path,
                cairo_status_to_string(st));
    return FALSE;
  }
  return TRUE;
}
