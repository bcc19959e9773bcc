/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Snapshots and the comparison of two. The difference volume is computed once when the pair
 * is set (a subtraction per voxel: milliseconds for the largest grids); slices are cut
 * from the host copies on the main thread, one plane at a time. */
#include <math.h>
#include <string.h>
#include "tl-compare-view.h"

TlSnapshot *tl_snapshot_new(const char *name, TlImage *image) {
  TlSnapshot *s = g_rc_box_new0(TlSnapshot);
  s->name = g_strdup(name);
  s->image = image;
  GArray **arrays[] = {&s->objective_x, &s->objective_y, &s->rmse_x, &s->rmse_y, &s->cr_x, &s->cr_y};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
    *arrays[i] = g_array_new(FALSE, FALSE, sizeof(double));
  return s;
}

static void snapshot_clear(gpointer data) {
  TlSnapshot *s = data;
  g_free(s->name);
  g_free(s->settings);
  tl_image_free(s->image);
  GArray *arrays[] = {s->objective_x, s->objective_y, s->rmse_x, s->rmse_y, s->cr_x, s->cr_y};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
    g_array_unref(arrays[i]);
  if (s->options_free)
    s->options_free(s->options);
}

TlSnapshot *tl_snapshot_ref(TlSnapshot *s) { return g_rc_box_acquire(s); }

void tl_snapshot_unref(TlSnapshot *s) {
  if (s)
    g_rc_box_release_full(s, snapshot_clear);
}

struct _TlCompareView {
  GtkWidget parent_instance;
  GtkWidget *box;
  TlSliceView *views[3];
  GtkLabel *labels[3];
  TlPlot *convergence, *contrast;
  TlSnapshot *a, *b;  /* references */
  TlImage *diff;
  guint pos[3];
};

G_DEFINE_FINAL_TYPE(TlCompareView, tl_compare_view, GTK_TYPE_WIDGET)

/* The axial plane k of an image as a TlSlice (row 0 at the top = y 0, as the runner's). */
static void axial(const TlImage *im, guint k, TlSlice *out) {
  const guint nx = im->grid.dims[0], ny = im->grid.dims[1];
  out->width = nx;
  out->height = ny;
  out->data = g_memdup2(im->data + (gsize)k * nx * ny, (gsize)nx * ny * sizeof(float));
}

static void show(TlCompareView *self) {
  if (!self->diff)
    return;
  const TlImage *ims[3] = {self->a->image, self->b->image, self->diff};
  for (int v = 0; v < 3; v++) {
    TlSlice s;
    axial(ims[v], self->pos[2], &s);
    tl_slice_view_set_slice(self->views[v], &s);
    tl_slice_view_set_position(self->views[v], self->pos);
    g_free(s.data);
  }
}

void tl_compare_view_set_position(TlCompareView *self, const guint pos[3]) {
  if (!self->diff)
    return;
  for (int a = 0; a < 3; a++)
    self->pos[a] = MIN(pos[a], self->diff->grid.dims[a] - 1);
  show(self);
}

static void on_position(TlSliceView *view, guint i, guint j, guint k, TlCompareView *self) {
  tl_compare_view_set_position(self, (guint[3]){i, j, k});
}

/* A and B share window/level; the difference keeps its own. */
static void on_levels(TlSliceView *view, double lo, double hi, TlCompareView *self) {
  if (view == self->views[2])
    return;
  for (int v = 0; v < 2; v++)
    tl_slice_view_set_levels(self->views[v], lo, hi);
}

static void append_curve(TlPlot *plot, const char *name, const GdkRGBA *c, gboolean dashed, GArray *x,
                         GArray *y, guint group) {
  guint s = tl_plot_add_series(plot, name, c, dashed);
  tl_plot_set_series(plot, s, (const double *)x->data, (const double *)y->data, x->len);
  tl_plot_set_series_group(plot, s, group);
}

gboolean tl_compare_view_set(TlCompareView *self, TlSnapshot *a, TlSnapshot *b, GError **error) {
  if (!tl_image_grid_equal(&a->image->grid, &b->image->grid)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "Snapshots \"%s\" and \"%s\" are on different grids: nothing to compare voxel by voxel",
                a->name, b->name);
    return FALSE;
  }
  tl_snapshot_ref(a);
  tl_snapshot_ref(b);
  g_clear_pointer(&self->a, tl_snapshot_unref);
  g_clear_pointer(&self->b, tl_snapshot_unref);
  self->a = a;
  self->b = b;
  g_clear_pointer(&self->diff, tl_image_free);
  self->diff = tl_image_new(&a->image->grid);
  guint64 n = tl_image_grid_n_voxels(&a->image->grid);
  float lo = INFINITY, hi = -INFINITY, dmax = 0;
  for (guint64 i = 0; i < n; i++) {
    float x = a->image->data[i], y = b->image->data[i];
    self->diff->data[i] = x - y;
    lo = MIN(lo, MIN(x, y));
    hi = MAX(hi, MAX(x, y));
    dmax = MAX(dmax, fabsf(x - y));
  }
  for (int v = 0; v < 3; v++)
    tl_slice_view_set_grid(self->views[v], &a->image->grid);
  for (int v = 0; v < 2; v++)
    tl_slice_view_set_levels(self->views[v], MIN(lo, 0), hi > lo ? hi : lo + 1);
  tl_slice_view_set_levels(self->views[2], -(dmax > 0 ? dmax : 1), dmax > 0 ? dmax : 1);
  g_autofree char *la = g_strdup_printf("A: %s (%s, %u sub-iterations)", a->name, a->settings ? a->settings : "", a->sub_iterations);
  g_autofree char *lb = g_strdup_printf("B: %s (%s, %u sub-iterations)", b->name, b->settings ? b->settings : "", b->sub_iterations);
  gtk_label_set_text(self->labels[0], la);
  gtk_label_set_text(self->labels[1], lb);
  gtk_label_set_text(self->labels[2], "A − B");
  for (int d = 0; d < 3; d++)
    self->pos[d] = MIN(self->pos[d], a->image->grid.dims[d] - 1);
  if (self->pos[2] == 0 && self->pos[0] == 0)
    for (int d = 0; d < 3; d++)
      self->pos[d] = a->image->grid.dims[d] / 2;
  show(self);

  const GdkRGBA ca = {0.98, 0.6, 0.2, 1}, cb = {0.35, 0.7, 1.0, 1};
  tl_plot_clear(self->convergence);
  g_autofree char *oa = g_strdup_printf("A objective"), *ob = g_strdup_printf("B objective");
  append_curve(self->convergence, oa, &ca, FALSE, a->objective_x, a->objective_y, 1);
  append_curve(self->convergence, ob, &cb, FALSE, b->objective_x, b->objective_y, 1);
  tl_plot_set_axis_title(self->convergence, 0, "objective");
  if (a->rmse_x->len || b->rmse_x->len) {
    append_curve(self->convergence, "A RMSE (% of truth mean)", &ca, TRUE, a->rmse_x, a->rmse_y, 2);
    append_curve(self->convergence, "B RMSE (% of truth mean)", &cb, TRUE, b->rmse_x, b->rmse_y, 2);
    tl_plot_set_axis_title(self->convergence, 2, "RMSE (% of truth mean)");
  }
  tl_plot_clear(self->contrast);
  append_curve(self->contrast, "A mean CR", &ca, FALSE, a->cr_x, a->cr_y, 1);
  append_curve(self->contrast, "B mean CR", &cb, FALSE, b->cr_x, b->cr_y, 1);
  tl_plot_set_axis_title(self->contrast, 0, "mean contrast recovery (fraction)");
  return TRUE;
}

const TlImage *tl_compare_view_get_difference(TlCompareView *self) { return self->diff; }
TlSliceView *tl_compare_view_get_slice_view(TlCompareView *self, int which) { return self->views[which]; }
TlPlot *tl_compare_view_get_convergence_plot(TlCompareView *self) { return self->convergence; }
TlPlot *tl_compare_view_get_contrast_plot(TlCompareView *self) { return self->contrast; }

static void tl_compare_view_dispose(GObject *object) {
  TlCompareView *self = TL_COMPARE_VIEW(object);
  g_clear_pointer(&self->box, gtk_widget_unparent);
  g_clear_pointer(&self->diff, tl_image_free);
  g_clear_pointer(&self->a, tl_snapshot_unref);
  g_clear_pointer(&self->b, tl_snapshot_unref);
  G_OBJECT_CLASS(tl_compare_view_parent_class)->dispose(object);
}

static void tl_compare_view_class_init(TlCompareViewClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = tl_compare_view_dispose;
  gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "tl-compare-view");
}

static void tl_compare_view_init(TlCompareView *self) {
  self->box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_parent(self->box, GTK_WIDGET(self));
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 2);
  gtk_box_set_homogeneous(GTK_BOX(row), TRUE);
  gtk_widget_set_vexpand(row, TRUE);
  for (int v = 0; v < 3; v++) {
    GtkWidget *col = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    self->labels[v] = GTK_LABEL(gtk_label_new(NULL));
    gtk_label_set_ellipsize(self->labels[v], PANGO_ELLIPSIZE_END);
    self->views[v] = TL_SLICE_VIEW(tl_slice_view_new(TL_VIEW_AXIAL));
    gtk_widget_set_vexpand(GTK_WIDGET(self->views[v]), TRUE);
    gtk_box_append(GTK_BOX(col), GTK_WIDGET(self->labels[v]));
    gtk_box_append(GTK_BOX(col), GTK_WIDGET(self->views[v]));
    gtk_box_append(GTK_BOX(row), col);
    g_signal_connect(self->views[v], "position-changed", G_CALLBACK(on_position), self);
    g_signal_connect(self->views[v], "levels-changed", G_CALLBACK(on_levels), self);
  }
  tl_slice_view_set_colormap(self->views[2], TL_COLORMAP_GREY);
  gtk_box_append(GTK_BOX(self->box), row);
  GtkWidget *plots = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 2);
  gtk_widget_set_size_request(plots, -1, 170);
  self->convergence = TL_PLOT(tl_plot_new("Convergence (A and B)", "sub-iteration"));
  self->contrast = TL_PLOT(tl_plot_new("Contrast recovery vs background variability", "background variability N (fraction)"));
  gtk_box_append(GTK_BOX(plots), GTK_WIDGET(self->convergence));
  gtk_box_append(GTK_BOX(plots), GTK_WIDGET(self->contrast));
  gtk_box_append(GTK_BOX(self->box), plots);
}

GtkWidget *tl_compare_view_new(void) {
  return g_object_new(TL_TYPE_COMPARE_VIEW, NULL);
}
