/* SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>
#include "tl-projection-view.h"

struct _TlProjectionView {
  GtkBox parent_instance;
  TlSliceView *image;
  GtkScale *scale;
  GtkLabel *label;
  TlDocument *dataset;
  guint view;
};

G_DEFINE_FINAL_TYPE(TlProjectionView, tl_projection_view, GTK_TYPE_BOX)

static void show_view(TlProjectionView *self) {
  const TlCtData *ct = self->dataset ? self->dataset->ct : NULL;
  if (!ct) {
    tl_slice_view_set_slice(self->image, NULL);
    gtk_label_set_text(self->label, "");
    return;
  }
  const TlCtGeometry *g = ct->geometry;
  const guint nu = g->det_u, nv = g->det_v;
  const float *p = ct->proj + (gsize)self->view * nu * nv;
  float *data = g_new(float, (gsize)nu * nv);
  for (guint r = 0; r < nv; r++)  /* row 0 on screen is the top: the last detector row */
    memcpy(data + (gsize)r * nu, p + (gsize)(nv - 1 - r) * nu, nu * sizeof(float));
  TlSlice s = {nu, nv, data};
  tl_slice_view_set_slice(self->image, &s);
  g_free(data);
  g_autofree char *text = g_strdup_printf("View %u / %u", self->view + 1, g->n_views);
  gtk_label_set_text(self->label, text);
}

static void on_value(GtkRange *range, TlProjectionView *self) {
  guint v = (guint)lround(gtk_range_get_value(range));
  if (v == self->view && self->dataset)
    return;
  self->view = v;
  show_view(self);
}

void tl_projection_view_set_view(TlProjectionView *self, guint view) {
  guint n = tl_projection_view_get_n_views(self);
  gtk_range_set_value(GTK_RANGE(self->scale), n ? MIN(view, n - 1) : 0);
}

guint tl_projection_view_get_view(TlProjectionView *self) { return self->view; }

guint tl_projection_view_get_n_views(TlProjectionView *self) {
  return self->dataset && self->dataset->ct ? self->dataset->ct->geometry->n_views : 0;
}

void tl_projection_view_set_colormap(TlProjectionView *self, TlColormap c) {
  tl_slice_view_set_colormap(self->image, c);
}

TlSliceView *tl_projection_view_get_image(TlProjectionView *self) { return self->image; }

void tl_projection_view_set_dataset(TlProjectionView *self, TlDocument *d) {
  g_clear_pointer(&self->dataset, tl_document_unref);
  self->view = 0;
  if (d && d->ct) {
    self->dataset = tl_document_ref(d);
    const TlCtData *ct = d->ct;
    float lo = INFINITY, hi = -INFINITY;
    for (guint64 i = 0; i < tl_ct_data_n_values(ct); i++) {
      lo = MIN(lo, ct->proj[i]);
      hi = MAX(hi, ct->proj[i]);
    }
    tl_slice_view_set_detector(self->image, ct->geometry->det_u, ct->geometry->det_v, "Projection");
    tl_slice_view_set_unit(self->image, ct->values == TL_CT_COUNTS ? "counts" : "line integral");
    tl_slice_view_set_levels(self->image, lo, hi > lo ? hi : lo + 1);
    tl_slice_view_reset_zoom(self->image);
    gtk_range_set_range(GTK_RANGE(self->scale), 0, MAX(ct->geometry->n_views, 2) - 1);
  }
  gtk_range_set_value(GTK_RANGE(self->scale), 0);
  show_view(self);
}

/* The wheel over the image steps through the views (the image view leaves it to us). */
static gboolean on_scroll(GtkEventControllerScroll *s, double dx, double dy, TlProjectionView *self) {
  guint n = tl_projection_view_get_n_views(self);
  if (!n || dy == 0)
    return FALSE;
  gint64 v = (gint64)self->view + (dy > 0 ? -1 : 1);
  tl_projection_view_set_view(self, (guint)CLAMP(v, 0, (gint64)n - 1));
  return TRUE;
}

static void tl_projection_view_dispose(GObject *object) {
  TlProjectionView *self = TL_PROJECTION_VIEW(object);
  g_clear_pointer(&self->dataset, tl_document_unref);
  G_OBJECT_CLASS(tl_projection_view_parent_class)->dispose(object);
}

static void tl_projection_view_class_init(TlProjectionViewClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = tl_projection_view_dispose;
}

static void tl_projection_view_init(TlProjectionView *self) {
  gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
  gtk_widget_set_hexpand(GTK_WIDGET(self), TRUE);
  gtk_widget_set_vexpand(GTK_WIDGET(self), TRUE);
  self->image = TL_SLICE_VIEW(tl_slice_view_new(TL_VIEW_MIP));
  tl_slice_view_set_detector(self->image, 1, 1, "Projection");
  gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->image));
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  self->label = GTK_LABEL(gtk_label_new(""));
  gtk_widget_add_css_class(GTK_WIDGET(self->label), "caption");
  gtk_widget_add_css_class(GTK_WIDGET(self->label), "numeric");
  self->scale = GTK_SCALE(gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 1, 1));
  gtk_scale_set_digits(self->scale, 0);
  gtk_widget_set_hexpand(GTK_WIDGET(self->scale), TRUE);
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->scale), "Projection view (or the wheel over the image)");
  g_signal_connect(self->scale, "value-changed", G_CALLBACK(on_value), self);
  gtk_box_append(GTK_BOX(row), GTK_WIDGET(self->scale));
  gtk_box_append(GTK_BOX(row), GTK_WIDGET(self->label));
  gtk_widget_set_margin_start(row, 6);
  gtk_widget_set_margin_end(row, 6);
  gtk_box_append(GTK_BOX(self), row);
  GtkEventController *scroll = gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_VERTICAL |
                                                               GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
  gtk_widget_add_controller(GTK_WIDGET(self), scroll);
}

GtkWidget *tl_projection_view_new(void) { return g_object_new(TL_TYPE_PROJECTION_VIEW, NULL); }
