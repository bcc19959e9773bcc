/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Drawing: the slice becomes a premultiplied ARGB texture at voxel resolution whenever
 * data, levels or colours change. It is scaled to the screen with nearest-neighbour
 * filtering so zoomed voxels stay crisp: gtk_snapshot_append_scaled_texture on GTK >= 4.10,
 * else a cairo node whose pattern filter is CAIRO_FILTER_NEAREST (GTK 4.8, Debian 12). */
#include <math.h>
#include <string.h>
#include "tl-slice-view.h"
#include "tl-axis.h"
#include "tl-text.h"
#include "image/tl-roi.h"

#define COLORBAR_W 12
#define COLORBAR_MARGIN 84   /* room for the bar, its tick labels and its unit */
/* The least on-screen extent of a slice (px, before zoom): a volume of 2 slices would
 * otherwise be a strip a few pixels high in the coronal and sagittal views. */
#define MIN_EXTENT_PX 56
#define INSET_X 16           /* room for the left and right letters */
#define INSET_Y 24           /* for the title and top letter, the bottom letter and scale bar */

struct _TlSliceView {
  GtkWidget parent_instance;
  int orientation;
  TlImageGrid grid;
  gboolean has_grid;
  TlSlice slice;              /* owned copy */
  guint pos[3];
  float lo, hi;
  TlColormap colormap;
  char *unit;
  GdkTexture *texture;
  GBytes *pixels;
  cairo_surface_t *surface;   /* shares `pixels` */
  double zoom, pan_x, pan_y;  /* zoom 1 = fit; pan in widget pixels */
  /* gestures */
  double drag_start_pan[2], drag_start_levels[2];
  gboolean dragged, profiling;
  double line[4];             /* the profile line, slice pixels; drawn when profiling */
  double pointer[2];
  gboolean detector;          /* a detector image (tl_slice_view_set_detector), not a slice */
  char *title;                /* NULL: the orientation's */
  GArray *rois;               /* TlRoi drawn where they cut the slice */
  /* Ctrl+drag: a ROI being drawn (index -1), moved or resized (its index) */
  int roi_mode;               /* 0 none, 1 new, 2 move, 3 resize */
  int roi_index;
  TlRoi roi_edit;
  double roi_start_mm[3], roi_start_centre[3];
  /* what the last draw showed (tests read it) */
  GPtrArray *drawn;           /* every text drawn */
  guint clipped;              /* texts that left the widget */
  char letters[5];            /* orientation letters: left, right, top, bottom ("" none) */
  double bar_mm;              /* the scale bar's length (0: none) */
  guint bar_ticks;            /* the colour bar's tick labels */
};

G_DEFINE_FINAL_TYPE(TlSliceView, tl_slice_view, GTK_TYPE_WIDGET)

enum { SIG_POSITION, SIG_LEVELS, SIG_HOVER, SIG_LINE, SIG_ROI, N_SIGNALS };
static guint signals[N_SIGNALS];

static const char *const kTitles[TL_N_VIEWS] = {"Axial", "Coronal", "Sagittal", "MIP"};

static const char *title(TlSliceView *self) {
  return self->title ? self->title : kTitles[self->orientation];
}

/* Slice pixel size in mm (columns, rows). */
static void pixel_mm(TlSliceView *self, double *w, double *h) {
  const float *v = self->grid.voxel_mm;
  *w = self->orientation == TL_VIEW_SAGITTAL ? v[1] : v[0];
  *h = self->orientation == TL_VIEW_AXIAL ? v[1] : v[2];
}

/* Where the slice goes in the widget: fitted, aspect kept, then zoom and pan. */
static graphene_rect_t image_rect(TlSliceView *self) {
  /* inset so the title, the letters and the scale bar sit beside the image, not on it (the
   * same on opposite sides: zooming keeps the centre) */
  double W = MAX(gtk_widget_get_width(GTK_WIDGET(self)) - COLORBAR_MARGIN - 2 * INSET_X, 1);
  double H = MAX(gtk_widget_get_height(GTK_WIDGET(self)) - 2 * INSET_Y, 1);
  double pw, ph;
  pixel_mm(self, &pw, &ph);
  double iw = self->slice.width * pw, ih = self->slice.height * ph;
  double s = (iw > 0 && ih > 0) ? MIN(W / iw, H / ih) : 1;
  double w = iw * s, h = ih * s;
  /* A thin slab keeps its aspect down to a least extent; the view then says it is stretched. */
  double least_w = MIN(W, MIN_EXTENT_PX), least_h = MIN(H, MIN_EXTENT_PX);
  w = MAX(w, least_w) * self->zoom;
  h = MAX(h, least_h) * self->zoom;
  return GRAPHENE_RECT_INIT(INSET_X + (W - w) / 2 + self->pan_x, INSET_Y + (H - h) / 2 + self->pan_y, w, h);
}

/* How much the least extent stretched the slice's height over its width (1: true aspect). */
static double stretch(TlSliceView *self, const graphene_rect_t *r) {
  double pw, ph;
  pixel_mm(self, &pw, &ph);
  double iw = self->slice.width * pw, ih = self->slice.height * ph;
  if (!(iw > 0 && ih > 0) || r->size.width <= 0)
    return 1;
  return (r->size.height / ih) / (r->size.width / iw);
}

static gboolean widget_to_pixel(TlSliceView *self, double x, double y, double *col, double *row) {
  if (!self->slice.data)
    return FALSE;
  graphene_rect_t r = image_rect(self);
  *col = (x - r.origin.x) / r.size.width * self->slice.width;
  *row = (y - r.origin.y) / r.size.height * self->slice.height;
  return *col >= 0 && *row >= 0 && *col < self->slice.width && *row < self->slice.height;
}

void tl_slice_view_pixel_to_voxel(TlSliceView *self, double col, double row, double ijk[3]) {
  const guint nz = self->grid.dims[2];
  ijk[0] = self->pos[0];
  ijk[1] = self->pos[1];
  ijk[2] = self->pos[2];
  double up = nz - row;  /* rows count down, z counts up: pixel row r is z = nz - 1 - r */
  switch (self->orientation) {
  case TL_VIEW_AXIAL: ijk[0] = col; ijk[1] = row; break;
  case TL_VIEW_SAGITTAL: ijk[1] = col; ijk[2] = up; break;
  default: ijk[0] = col; ijk[2] = up; break;
  }
}

/* The axis normal to the view and the two in the picture (columns, rows). */
static int normal_axis(TlSliceView *self) {
  return self->orientation == TL_VIEW_AXIAL ? 2 : self->orientation == TL_VIEW_SAGITTAL ? 0 : 1;
}

/* Slice pixel (continuous) -> scanner mm: voxel i spans pixels [i, i + 1), its centre is
 * origin + i * size; along the normal, the slice's own plane. */
static void pixel_to_mm(TlSliceView *self, double col, double row, double mm[3]) {
  double ijk[3];
  tl_slice_view_pixel_to_voxel(self, col, row, ijk);
  int n = normal_axis(self);
  for (int a = 0; a < 3; a++)
    mm[a] = self->grid.origin_mm[a] + (a == n ? self->pos[a] : ijk[a] - 0.5) * self->grid.voxel_mm[a];
}

static void mm_to_pixel(TlSliceView *self, const double mm[3], double *col, double *row) {
  double ijk[3];
  for (int a = 0; a < 3; a++)
    ijk[a] = (mm[a] - self->grid.origin_mm[a]) / self->grid.voxel_mm[a] + 0.5;
  switch (self->orientation) {
  case TL_VIEW_AXIAL: *col = ijk[0]; *row = ijk[1]; break;
  case TL_VIEW_SAGITTAL: *col = ijk[1]; *row = self->grid.dims[2] - ijk[2]; break;
  default: *col = ijk[0]; *row = self->grid.dims[2] - ijk[2]; break;
  }
}

/* The radius (mm) of the ROI's cut through the slice shown, <= 0 when it misses it. */
static double roi_cut(TlSliceView *self, const TlRoi *roi) {
  int n = normal_axis(self);
  double plane = self->grid.origin_mm[n] + self->pos[n] * (double)self->grid.voxel_mm[n];
  if (roi->kind == TL_ROI_CIRCLE) {
    if ((int)roi->axis != n)
      return 0;
    double k = floor((roi->centre_mm[n] - self->grid.origin_mm[n]) / self->grid.voxel_mm[n] + 0.5);
    return k == self->pos[n] ? roi->radius_mm : 0;
  }
  double d = roi->centre_mm[n] - plane;
  return d * d < roi->radius_mm * roi->radius_mm ? sqrt(roi->radius_mm * roi->radius_mm - d * d) : 0;
}

static void rebuild_texture(TlSliceView *self) {
  g_clear_object(&self->texture);
  g_clear_pointer(&self->surface, cairo_surface_destroy);
  g_clear_pointer(&self->pixels, g_bytes_unref);
  if (self->slice.data) {
    const guint w = self->slice.width, h = self->slice.height;
    const guint32 *lut = tl_colormap_lut(self->colormap);
    guint32 *px = g_new(guint32, (gsize)w * h);
    for (gsize i = 0; i < (gsize)w * h; i++)
      px[i] = lut[tl_colormap_index(self->slice.data[i], self->lo, self->hi)];
    self->pixels = g_bytes_new_take(px, (gsize)w * h * 4);
    /* cairo's ARGB32 is a native-endian word: B, G, R, A bytes on little-endian. */
    GdkMemoryFormat fmt = G_BYTE_ORDER == G_LITTLE_ENDIAN ? GDK_MEMORY_B8G8R8A8_PREMULTIPLIED
                                                          : GDK_MEMORY_A8R8G8B8_PREMULTIPLIED;
    self->texture = gdk_memory_texture_new(w, h, fmt, self->pixels, (gsize)w * 4);
    self->surface = cairo_image_surface_create_for_data(
        (unsigned char *)g_bytes_get_data(self->pixels, NULL), CAIRO_FORMAT_ARGB32, w, h, w * 4);
  }
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void draw_image(TlSliceView *self, GtkSnapshot *snapshot, const graphene_rect_t *r) {
#if GTK_CHECK_VERSION(4, 10, 0)
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS /* newer than GDK_VERSION_MAX_ALLOWED, hence guarded */
  gtk_snapshot_append_scaled_texture(snapshot, self->texture, GSK_SCALING_FILTER_NEAREST, r);
  G_GNUC_END_IGNORE_DEPRECATIONS
#else
  cairo_t *cr = gtk_snapshot_append_cairo(snapshot, r);
  cairo_translate(cr, r->origin.x, r->origin.y);
  cairo_scale(cr, r->size.width / self->slice.width, r->size.height / self->slice.height);
  cairo_set_source_surface(cr, self->surface, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_destroy(cr);
#endif
}

/* The crosshair in slice pixels: which voxel coordinates are the columns and rows. */
static void crosshair(TlSliceView *self, double *col, double *row) {
  const guint nz = self->grid.dims[2];
  switch (self->orientation) {
  case TL_VIEW_AXIAL: *col = self->pos[0] + 0.5; *row = self->pos[1] + 0.5; break;
  case TL_VIEW_SAGITTAL: *col = self->pos[1] + 0.5; *row = nz - self->pos[2] - 0.5; break;
  default: *col = self->pos[0] + 0.5; *row = nz - self->pos[2] - 0.5; break;
  }
}

/* Text at (x, y) (baseline start; upwards reads bottom to top) with a dark halo so it reads over any colour,
 * recorded for the tests with whether it left the widget. */
static void text_at(TlSliceView *self, cairo_t *cr, double x, double y, const char *text, gboolean upwards,
                    double W, double H) {
  if (tl_text_draw(cr, x, y, text, upwards, TRUE, W, H))
    self->clipped++;
  g_ptr_array_add(self->drawn, g_strdup(text));
}

static double text_width(cairo_t *cr, const char *text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text, &e);
  return e.x_advance;
}

/* The colour bar: ticks at nice values inside the window (tl-axis) and the unit reading
 * upwards at the right edge, with the ticks' common power of ten. */
static void draw_colorbar(TlSliceView *self, cairo_t *cr, double W, double H) {
  const guint32 *lut = tl_colormap_lut(self->colormap);
  double x = W - COLORBAR_MARGIN + 6, top = 24, h = MAX(H - 44, 10);
  for (int i = 0; i < 256; i++) {
    guint32 c = lut[255 - i];
    cairo_set_source_rgb(cr, (c >> 16 & 255) / 255.0, (c >> 8 & 255) / 255.0, (c & 255) / 255.0);
    cairo_rectangle(cr, x, top + h * i / 256.0, COLORBAR_W, h / 256.0 + 1);
    cairo_fill(cr);
  }
  TlAxis axis;
  tl_axis_make(&axis, self->lo, self->hi, CLAMP((guint)(h / 36), 2, 8), FALSE);
  cairo_set_font_size(cr, 10);
  char text[64];
  double tick_w = 0;
  self->bar_ticks = 0;
  for (guint i = 0; i < axis.n; i++) {
    double y = top + h - tl_axis_map(&axis, axis.ticks[i], h);
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, x + COLORBAR_W, floor(y) + 0.5);
    cairo_line_to(cr, x + COLORBAR_W + 4, floor(y) + 0.5);
    cairo_stroke(cr);
    tl_axis_label(&axis, axis.ticks[i], text, sizeof text);
    text_at(self, cr, x + COLORBAR_W + 6, y + 3.5, text, FALSE, W, H);
    tick_w = MAX(tick_w, text_width(cr, text));
    self->bar_ticks++;
  }
  char factor[32];
  tl_axis_factor(&axis, factor, sizeof factor);
  const char *unit = self->unit && self->unit[0] ? self->unit : "a.u.";
  g_autofree char *label = factor[0] ? g_strdup_printf("%s %s", factor, unit) : g_strdup(unit);
  /* a unit longer than the bar gets a smaller font, never cut */
  double size = 11;
  cairo_set_font_size(cr, size);
  while (size > 7 && text_width(cr, label) > h) cairo_set_font_size(cr, --size);
  cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
  /* next to its tick labels, so it reads as this bar's and not the neighbouring view's */
  text_at(self, cr, MIN(x + COLORBAR_W + 6 + tick_w + 14, W - 5), top + h / 2 + MIN(text_width(cr, label), h) / 2,
          label, TRUE, W, H);
}

/* Orientation letters of the scanner frame: TlImageGrid is axis-aligned in a RAS-like frame
 * (x to the right, y anterior, z superior; the loaders bring files into it, DICOM's LPS
 * flipped), so a view's column and row axes name the sides directly. */
static char axis_letter(int axis, gboolean positive) {
  static const char pos[3] = {'R', 'A', 'S'}, neg[3] = {'L', 'P', 'I'};
  return positive ? pos[axis] : neg[axis];
}

static void draw_orientation(TlSliceView *self, cairo_t *cr, const graphene_rect_t *r, double Wv, double H) {
  /* columns count up along cx to the right; rows count down, so the top is -ry's side */
  int cx = self->orientation == TL_VIEW_SAGITTAL ? 1 : 0;
  int ry = self->orientation == TL_VIEW_AXIAL ? 1 : 2;
  gboolean rows_up = self->orientation != TL_VIEW_AXIAL;  /* z counts up the screen */
  self->letters[0] = axis_letter(cx, FALSE);
  self->letters[1] = axis_letter(cx, TRUE);
  self->letters[2] = axis_letter(ry, rows_up);
  self->letters[3] = axis_letter(ry, !rows_up);
  self->letters[4] = 0;
  cairo_set_font_size(cr, 13);
  cairo_set_source_rgb(cr, 1, 0.95, 0.5);
  double x0 = MAX(r->origin.x, 0), x1 = MIN(r->origin.x + r->size.width, Wv);
  double y0 = MAX(r->origin.y, 0), y1 = MIN(r->origin.y + r->size.height, H);
  if (x1 <= x0 || y1 <= y0)
    return;  /* panned out of sight */
  double mx = (x0 + x1) / 2, my = (y0 + y1) / 2;
  char l[2] = {0};
  /* outside the image where there is room, else just inside its edge */
  l[0] = self->letters[0];
  double w = text_width(cr, l);
  text_at(self, cr, x0 - 4 - w >= 0 ? x0 - 4 - w : x0 + 4, my + 5, l, FALSE, Wv, H);
  l[0] = self->letters[1];
  w = text_width(cr, l);
  text_at(self, cr, x1 + 4 + w <= Wv ? x1 + 4 : x1 - 4 - w, my + 5, l, FALSE, Wv, H);
  l[0] = self->letters[2];
  w = text_width(cr, l);
  text_at(self, cr, mx - w / 2, y0 - 5 >= 12 ? y0 - 5 : y0 + 15, l, FALSE, Wv, H);
  l[0] = self->letters[3];
  w = text_width(cr, l);
  text_at(self, cr, mx - w / 2, y1 + 14 <= H - 2 ? y1 + 14 : y1 - 4, l, FALSE, Wv, H);
}

/* A scale bar of a nice length (about a quarter of the view) at the bottom left. */
static void draw_scale_bar(TlSliceView *self, cairo_t *cr, const graphene_rect_t *r, double Wv, double H) {
  double pw, ph;
  pixel_mm(self, &pw, &ph);
  double px_per_mm = r->size.width / (self->slice.width * pw);
  self->bar_mm = 0;
  if (!(px_per_mm > 0) || !isfinite(px_per_mm))
    return;
  double mm = tl_axis_nice(Wv / 4 / px_per_mm, TRUE);
  double len = mm * px_per_mm;
  if (len < 12)
    return;
  self->bar_mm = mm;
  double x = 10, y = H - 4;
  cairo_set_line_width(cr, 5);
  cairo_set_source_rgba(cr, 0, 0, 0, 0.8);
  cairo_move_to(cr, x - 1, y);
  cairo_line_to(cr, x + len + 1, y);
  cairo_stroke(cr);
  cairo_set_line_width(cr, 3);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_move_to(cr, x, y);
  cairo_line_to(cr, x + len, y);
  cairo_stroke(cr);
  char text[32];
  g_snprintf(text, sizeof text, "%g mm", mm);
  cairo_set_font_size(cr, 10);
  text_at(self, cr, x, y - 5, text, FALSE, Wv, H);
}

static void tl_slice_view_snapshot(GtkWidget *widget, GtkSnapshot *snapshot) {
  TlSliceView *self = TL_SLICE_VIEW(widget);
  double W = gtk_widget_get_width(widget), H = gtk_widget_get_height(widget);
  graphene_rect_t all = GRAPHENE_RECT_INIT(0, 0, W, H);
  gtk_snapshot_append_color(snapshot, &(GdkRGBA){0, 0, 0, 1}, &all);
  gtk_snapshot_push_clip(snapshot, &all);
  graphene_rect_t r = image_rect(self);
  if (self->texture)
    draw_image(self, snapshot, &r);
  cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &all);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  g_ptr_array_set_size(self->drawn, 0);
  self->clipped = 0;
  self->letters[0] = 0;
  self->bar_mm = 0;
  self->bar_ticks = 0;
  if (self->texture && !self->detector) {
    double c, w;
    crosshair(self, &c, &w);
    double sx = r.size.width / self->slice.width, sy = r.size.height / self->slice.height;
    cairo_set_source_rgba(cr, 0.2, 0.8, 1.0, 0.7);
    cairo_set_line_width(cr, 1);
    double x = r.origin.x + c * sx, y = r.origin.y + w * sy;
    cairo_move_to(cr, x, r.origin.y);
    cairo_line_to(cr, x, r.origin.y + r.size.height);
    cairo_move_to(cr, r.origin.x, y);
    cairo_line_to(cr, r.origin.x + r.size.width, y);
    cairo_stroke(cr);
    if (self->profiling) {
      cairo_set_source_rgb(cr, 1, 0.85, 0.1);
      cairo_set_line_width(cr, 2);
      cairo_move_to(cr, r.origin.x + self->line[0] * sx, r.origin.y + self->line[1] * sy);
      cairo_line_to(cr, r.origin.x + self->line[2] * sx, r.origin.y + self->line[3] * sy);
      cairo_stroke(cr);
    }
    /* ROIs, numbered as in the window's list; the one being drawn dashed. */
    double mm_px = sx / (self->orientation == TL_VIEW_SAGITTAL ? self->grid.voxel_mm[1] : self->grid.voxel_mm[0]);
    guint n_rois = self->rois ? self->rois->len : 0;
    for (guint i = 0; self->orientation != TL_VIEW_MIP && i <= n_rois; i++) {
      const TlRoi *roi = i < n_rois ? &g_array_index(self->rois, TlRoi, i) : self->roi_mode ? &self->roi_edit : NULL;
      if (!roi || (self->roi_mode >= 2 && (int)i == self->roi_index))
        continue;
      double rad = roi_cut(self, roi), pc, pr;
      if (rad <= 0)
        continue;
      mm_to_pixel(self, roi->centre_mm, &pc, &pr);
      cairo_set_source_rgba(cr, 0.3, 1.0, 0.4, 0.9);
      cairo_set_line_width(cr, 1.5);
      cairo_set_dash(cr, (double[]){4, 3}, i < n_rois ? 0 : 2, 0);
      cairo_new_sub_path(cr);
      cairo_arc(cr, r.origin.x + pc * sx, r.origin.y + pr * sy, rad * mm_px, 0, 2 * G_PI);
      cairo_stroke(cr);
      cairo_set_dash(cr, NULL, 0, 0);
      if (i < n_rois) {
        char label[16];
        g_snprintf(label, sizeof label, "%u", i + 1);
        cairo_set_font_size(cr, 11);
        cairo_move_to(cr, r.origin.x + pc * sx + rad * mm_px * 0.72, r.origin.y + pr * sy - rad * mm_px * 0.72);
        cairo_show_text(cr, label);
      }
    }
  }
  if (self->texture) {
    double Wv = MAX(W - COLORBAR_MARGIN, 1);
    cairo_save(cr);
    cairo_rectangle(cr, 0, 0, Wv, H);
    cairo_clip(cr);
    if (!self->detector) {
      draw_orientation(self, cr, &r, Wv, H);
      draw_scale_bar(self, cr, &r, Wv, H);
      double k = stretch(self, &r);
      if (k > 1.05) {
        /* say so: the slab's true height would be a few pixels */
        double pw, ph;
        pixel_mm(self, &pw, &ph);
        g_autofree char *note = g_strdup_printf("%u × %.3g mm shown ×%.0f tall", self->slice.height, ph, k);
        cairo_set_font_size(cr, 11);
        cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
        text_at(self, cr, MAX(Wv - 8 - text_width(cr, note), 0), H - 8, note, FALSE, Wv, H);
      }
    }
    cairo_restore(cr);
    draw_colorbar(self, cr, W, H);
  }
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  cairo_set_font_size(cr, 12);
  text_at(self, cr, 6, 16, title(self), FALSE, W, H);
  cairo_destroy(cr);
  gtk_snapshot_pop(snapshot);
}

static void emit_position(TlSliceView *self, double col, double row) {
  if (self->detector)
    return;  /* no voxels here */
  double ijk[3];
  tl_slice_view_pixel_to_voxel(self, col, row, ijk);
  guint p[3];
  for (int a = 0; a < 3; a++)
    p[a] = (guint)CLAMP(floor(ijk[a]), 0, self->grid.dims[a] - 1);
  g_signal_emit(self, signals[SIG_POSITION], 0, p[0], p[1], p[2]);
}

static void on_motion(GtkEventControllerMotion *m, double x, double y, TlSliceView *self) {
  self->pointer[0] = x;
  self->pointer[1] = y;
  double col, row;
  if (!widget_to_pixel(self, x, y, &col, &row))
    return;
  if (self->detector) {
    /* Row 0 is the top: the detector's last row (v counts up with z). */
    float v = self->slice.data[(gsize)floor(row) * self->slice.width + (gsize)floor(col)];
    g_autofree char *text = g_strdup_printf("%s  pixel (u %u, v %u)  value %.4g", title(self), (guint)floor(col),
                                            self->slice.height - 1 - (guint)floor(row), v);
    g_signal_emit(self, signals[SIG_HOVER], 0, text);
    return;
  }
  double ijk[3], mm[3];
  tl_slice_view_pixel_to_voxel(self, col, row, ijk);
  guint p[3];
  for (int a = 0; a < 3; a++)
    p[a] = (guint)CLAMP(floor(ijk[a]), 0, self->grid.dims[a] - 1);
  tl_image_grid_voxel_centre(&self->grid, p[0], p[1], p[2], mm);
  float v = self->slice.data[(gsize)floor(row) * self->slice.width + (gsize)floor(col)];
  g_autofree char *text = g_strdup_printf("%s  (%.1f, %.1f, %.1f) mm  voxel [%u, %u, %u]%s  value %.4g",
      kTitles[self->orientation], mm[0], mm[1], mm[2], p[0], p[1], p[2],
      self->orientation == TL_VIEW_MIP ? " (max along y)" : "", v);
  g_signal_emit(self, signals[SIG_HOVER], 0, text);
}

static gboolean on_scroll(GtkEventControllerScroll *s, double dx, double dy, TlSliceView *self) {
  if (!self->slice.data || dy == 0)
    return FALSE;
  GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(s));
  if (mods & GDK_CONTROL_MASK) {
    /* Zoom about the pointer: the point under it stays put. */
    double W = MAX(gtk_widget_get_width(GTK_WIDGET(self)) - COLORBAR_MARGIN, 1);
    double H = gtk_widget_get_height(GTK_WIDGET(self));
    double f = dy < 0 ? 1.25 : 1 / 1.25;
    double nz = CLAMP(self->zoom * f, 0.5, 64);
    f = nz / self->zoom;
    double cx = W / 2 + self->pan_x, cy = H / 2 + self->pan_y;  /* image centre */
    self->pan_x += (cx - self->pointer[0]) * (f - 1);
    self->pan_y += (cy - self->pointer[1]) * (f - 1);
    self->zoom = nz;
    gtk_widget_queue_draw(GTK_WIDGET(self));
    return TRUE;
  }
  if (self->orientation == TL_VIEW_MIP || self->detector)
    return FALSE;  /* a detector view: its parent moves through the views */
  int axis = self->orientation == TL_VIEW_AXIAL ? 2 : self->orientation == TL_VIEW_CORONAL ? 1 : 0;
  int step = dy > 0 ? -1 : 1;
  guint p[3] = {self->pos[0], self->pos[1], self->pos[2]};
  gint64 v = (gint64)p[axis] + step;
  p[axis] = (guint)CLAMP(v, 0, (gint64)self->grid.dims[axis] - 1);
  g_signal_emit(self, signals[SIG_POSITION], 0, p[0], p[1], p[2]);
  return TRUE;
}

static void on_drag_begin(GtkGestureDrag *g, double x, double y, TlSliceView *self) {
  guint button = gtk_gesture_single_get_current_button(GTK_GESTURE_SINGLE(g));
  GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(g));
  self->dragged = FALSE;
  self->drag_start_pan[0] = self->pan_x;
  self->drag_start_pan[1] = self->pan_y;
  self->drag_start_levels[0] = self->lo;
  self->drag_start_levels[1] = self->hi;
  self->roi_mode = 0;
  double c0, r0;
  if (button == GDK_BUTTON_PRIMARY && (mods & GDK_CONTROL_MASK) && !self->detector &&
      self->orientation != TL_VIEW_MIP && widget_to_pixel(self, x, y, &c0, &r0)) {
    /* Ctrl+drag: inside a ROI's cut moves it, on its rim resizes it, elsewhere draws a
     * new sphere (Ctrl+Shift: a circle in this view's plane) centred where it starts. */
    pixel_to_mm(self, c0, r0, self->roi_start_mm);
    graphene_rect_t ir = image_rect(self);
    double px_mm = ir.size.width / self->slice.width /
                   (self->orientation == TL_VIEW_SAGITTAL ? self->grid.voxel_mm[1] : self->grid.voxel_mm[0]);
    self->roi_mode = 1;
    self->roi_index = -1;
    self->roi_edit = (TlRoi){(mods & GDK_SHIFT_MASK) ? TL_ROI_CIRCLE : TL_ROI_SPHERE,
                             {self->roi_start_mm[0], self->roi_start_mm[1], self->roi_start_mm[2]}, 0,
                             (guint)normal_axis(self)};
    for (guint i = 0; self->rois && i < self->rois->len; i++) {
      const TlRoi *roi = &g_array_index(self->rois, TlRoi, i);
      double rad = roi_cut(self, roi), d2 = 0;
      for (int a = 0; a < 3; a++)
        if (a != normal_axis(self))
          d2 += (roi->centre_mm[a] - self->roi_start_mm[a]) * (roi->centre_mm[a] - self->roi_start_mm[a]);
      if (rad <= 0)
        continue;
      if (fabs(sqrt(d2) - rad) * px_mm < 5 || sqrt(d2) < rad) {
        self->roi_mode = fabs(sqrt(d2) - rad) * px_mm < 5 ? 3 : 2;
        self->roi_index = (int)i;
        self->roi_edit = *roi;
        memcpy(self->roi_start_centre, roi->centre_mm, sizeof self->roi_start_centre);
        break;
      }
    }
    return;
  }
  self->profiling = button == GDK_BUTTON_PRIMARY && (mods & GDK_SHIFT_MASK);
  if (self->profiling) {
    double c, r;
    widget_to_pixel(self, x, y, &c, &r);
    self->line[0] = self->line[2] = c;
    self->line[1] = self->line[3] = r;
  }
}

static void on_drag_update(GtkGestureDrag *g, double dx, double dy, TlSliceView *self) {
  if (fabs(dx) + fabs(dy) > 3)
    self->dragged = TRUE;
  if (!self->dragged || !self->slice.data)
    return;
  guint button = gtk_gesture_single_get_current_button(GTK_GESTURE_SINGLE(g));
  if (self->roi_mode) {
    double x0, y0, c, r, mm[3];
    gtk_gesture_drag_get_start_point(g, &x0, &y0);
    widget_to_pixel(self, x0 + dx, y0 + dy, &c, &r);
    pixel_to_mm(self, c, r, mm);
    int n = normal_axis(self);
    double d2 = 0;
    if (self->roi_mode == 2) {
      for (int a = 0; a < 3; a++)
        if (a != n)
          self->roi_edit.centre_mm[a] = self->roi_start_centre[a] + mm[a] - self->roi_start_mm[a];
    } else {
      for (int a = 0; a < 3; a++)
        if (a != n)
          d2 += (mm[a] - self->roi_edit.centre_mm[a]) * (mm[a] - self->roi_edit.centre_mm[a]);
      /* a sphere's cut through this slice follows the pointer */
      double off = self->roi_edit.kind == TL_ROI_SPHERE ? self->roi_edit.centre_mm[n] - mm[n] : 0;
      self->roi_edit.radius_mm = sqrt(d2 + off * off);
    }
    gtk_widget_queue_draw(GTK_WIDGET(self));
    return;
  }
  if (self->profiling) {
    double x0, y0, c, r;
    gtk_gesture_drag_get_start_point(g, &x0, &y0);
    widget_to_pixel(self, x0 + dx, y0 + dy, &c, &r);
    self->line[2] = c;
    self->line[3] = r;
    gtk_widget_queue_draw(GTK_WIDGET(self));
  } else if (button == GDK_BUTTON_SECONDARY) {
    /* Window/level: right/left widens the window, down/up lowers the level. */
    double lo = self->drag_start_levels[0], hi = self->drag_start_levels[1];
    double width = MAX(hi - lo, 1e-12), level = (lo + hi) / 2;
    width *= exp(dx / 200.0);
    level += dy / 200.0 * width;
    g_signal_emit(self, signals[SIG_LEVELS], 0, level - width / 2, level + width / 2);
  } else {
    self->pan_x = self->drag_start_pan[0] + dx;
    self->pan_y = self->drag_start_pan[1] + dy;
    gtk_widget_queue_draw(GTK_WIDGET(self));
  }
}

static void on_drag_end(GtkGestureDrag *g, double dx, double dy, TlSliceView *self) {
  guint button = gtk_gesture_single_get_current_button(GTK_GESTURE_SINGLE(g));
  if (self->roi_mode) {
    int mode = self->roi_mode;
    self->roi_mode = 0;
    gtk_widget_queue_draw(GTK_WIDGET(self));
    if (self->dragged && self->roi_edit.radius_mm > 0)
      g_signal_emit(self, signals[SIG_ROI], 0, mode == 1 ? -1 : self->roi_index, (int)self->roi_edit.kind,
                    (int)self->roi_edit.axis, self->roi_edit.centre_mm[0], self->roi_edit.centre_mm[1],
                    self->roi_edit.centre_mm[2], self->roi_edit.radius_mm);
    return;
  }
  if (self->profiling && self->dragged) {
    g_signal_emit(self, signals[SIG_LINE], 0, self->line[0], self->line[1], self->line[2], self->line[3]);
    return;
  }
  self->profiling = FALSE;
  if (!self->dragged && button == GDK_BUTTON_PRIMARY) {
    double x, y, c, r;
    gtk_gesture_drag_get_start_point(g, &x, &y);
    if (widget_to_pixel(self, x, y, &c, &r))
      emit_position(self, c, r);
  }
}

guint tl_slice_view_sample_line(TlSliceView *self, const double line[4], guint n, float *out, double *ijk) {
  if (!self->slice.data || n < 2)
    return 0;
  for (guint i = 0; i < n; i++) {
    double t = (double)i / (n - 1);
    double c = line[0] + t * (line[2] - line[0]), r = line[1] + t * (line[3] - line[1]);
    gsize ci = (gsize)CLAMP(floor(c), 0, self->slice.width - 1);
    gsize ri = (gsize)CLAMP(floor(r), 0, self->slice.height - 1);
    out[i] = self->slice.data[ri * self->slice.width + ci];
    if (ijk)
      tl_slice_view_pixel_to_voxel(self, c, r, ijk + 3 * i);
  }
  return n;
}

void tl_slice_view_set_detector(TlSliceView *self, guint det_u, guint det_v, const char *title_text) {
  self->detector = TRUE;
  self->orientation = TL_VIEW_MIP;  /* columns along x, rows down along z */
  g_free(self->title);
  self->title = g_strdup(title_text);
  self->grid = tl_image_grid_centred(MAX(det_u, 1), 1, MAX(det_v, 1), 1, 1, 1);
  self->has_grid = TRUE;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_slice_view_set_grid(TlSliceView *self, const TlImageGrid *grid) {
  self->grid = *grid;
  self->has_grid = TRUE;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_slice_view_set_slice(TlSliceView *self, const TlSlice *slice) {
  g_free(self->slice.data);
  self->slice = (TlSlice){0};
  if (slice && slice->data) {
    self->slice = *slice;
    self->slice.data = g_memdup2(slice->data, (gsize)slice->width * slice->height * sizeof(float));
  }
  rebuild_texture(self);
}

void tl_slice_view_set_position(TlSliceView *self, const guint pos[3]) {
  memcpy(self->pos, pos, sizeof self->pos);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

void tl_slice_view_set_levels(TlSliceView *self, float lo, float hi) {
  if (lo == self->lo && hi == self->hi)
    return;
  self->lo = lo;
  self->hi = hi;
  rebuild_texture(self);
}

void tl_slice_view_set_colormap(TlSliceView *self, TlColormap c) {
  self->colormap = c;
  rebuild_texture(self);
}

void tl_slice_view_set_unit(TlSliceView *self, const char *unit) {
  g_free(self->unit);
  self->unit = g_strdup(unit);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

const char *tl_slice_view_get_unit(TlSliceView *self) { return self->unit; }
GdkTexture *tl_slice_view_get_texture(TlSliceView *self) { return self->texture; }
const TlSlice *tl_slice_view_get_slice(TlSliceView *self) { return &self->slice; }
int tl_slice_view_get_orientation(TlSliceView *self) { return self->orientation; }
const GPtrArray *tl_slice_view_get_drawn_text(TlSliceView *self) { return self->drawn; }
guint tl_slice_view_get_clipped(TlSliceView *self) { return self->clipped; }
const char *tl_slice_view_get_letters(TlSliceView *self) { return self->letters; }
double tl_slice_view_get_scale_bar_mm(TlSliceView *self) { return self->bar_mm; }
guint tl_slice_view_get_colorbar_ticks(TlSliceView *self) { return self->bar_ticks; }
graphene_rect_t tl_slice_view_get_image_rect(TlSliceView *self) { return image_rect(self); }
double tl_slice_view_get_zoom(TlSliceView *self) { return self->zoom; }

void tl_slice_view_reset_zoom(TlSliceView *self) {
  self->zoom = 1;
  self->pan_x = self->pan_y = 0;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void tl_slice_view_finalize(GObject *object) {
  TlSliceView *self = TL_SLICE_VIEW(object);
  g_free(self->slice.data);
  g_free(self->unit);
  g_free(self->title);
  g_ptr_array_unref(self->drawn);
  if (self->rois)
    g_array_unref(self->rois);
  g_clear_object(&self->texture);
  g_clear_pointer(&self->surface, cairo_surface_destroy);
  g_clear_pointer(&self->pixels, g_bytes_unref);
  G_OBJECT_CLASS(tl_slice_view_parent_class)->finalize(object);
}

static void tl_slice_view_class_init(TlSliceViewClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = tl_slice_view_finalize;
  GTK_WIDGET_CLASS(klass)->snapshot = tl_slice_view_snapshot;
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "tl-slice-view");
  signals[SIG_POSITION] = g_signal_new("position-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
      0, NULL, NULL, NULL, G_TYPE_NONE, 3, G_TYPE_UINT, G_TYPE_UINT, G_TYPE_UINT);
  signals[SIG_LEVELS] = g_signal_new("levels-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
      0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_DOUBLE, G_TYPE_DOUBLE);
  signals[SIG_HOVER] = g_signal_new("hover", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
      0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIG_LINE] = g_signal_new("line", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
      0, NULL, NULL, NULL, G_TYPE_NONE, 4, G_TYPE_DOUBLE, G_TYPE_DOUBLE, G_TYPE_DOUBLE, G_TYPE_DOUBLE);
  signals[SIG_ROI] = g_signal_new("roi", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
      0, NULL, NULL, NULL, G_TYPE_NONE, 7, G_TYPE_INT, G_TYPE_INT, G_TYPE_INT, G_TYPE_DOUBLE, G_TYPE_DOUBLE,
      G_TYPE_DOUBLE, G_TYPE_DOUBLE);
}

void tl_slice_view_set_rois(TlSliceView *self, const TlRoi *rois, guint n) {
  if (!self->rois)
    self->rois = g_array_new(FALSE, FALSE, sizeof(TlRoi));
  g_array_set_size(self->rois, 0);
  g_array_append_vals(self->rois, rois, n);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void tl_slice_view_init(TlSliceView *self) {
  self->zoom = 1;
  self->hi = 1;
  self->colormap = TL_COLORMAP_HOT_METAL;
  self->drawn = g_ptr_array_new_with_free_func(g_free);
  gtk_widget_set_hexpand(GTK_WIDGET(self), TRUE);
  gtk_widget_set_vexpand(GTK_WIDGET(self), TRUE);
  gtk_widget_set_size_request(GTK_WIDGET(self), 160, 140);
  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
  gtk_widget_add_controller(GTK_WIDGET(self), motion);
  GtkEventController *scroll = gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_VERTICAL |
                                                               GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
  gtk_widget_add_controller(GTK_WIDGET(self), scroll);
  GtkGesture *drag = gtk_gesture_drag_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(drag), 0);  /* any button */
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
  g_signal_connect(drag, "drag-end", G_CALLBACK(on_drag_end), self);
  gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drag));
}

GtkWidget *tl_slice_view_new(int orientation) {
  TlSliceView *self = g_object_new(TL_TYPE_SLICE_VIEW, NULL);
  self->orientation = CLAMP(orientation, 0, TL_N_VIEWS - 1);
  return GTK_WIDGET(self);
}
