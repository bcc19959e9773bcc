/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Data Exchange HDF5 (De Carlo et al. 2014, J. Synchrotron Rad. 21: "Scientific data
 * exchange: a schema for HDF5-based storage of raw and analyzed data"), the layout of
 * synchrotron tomography (APS, tomopy, dxchange), read through libhdf5:
 *
 *   /exchange/data        [views][rows][columns]  projections (counts)
 *   /exchange/data_white  [flats][rows][columns]  open-beam images (required)
 *   /exchange/data_dark   [darks][rows][columns]  dark images (optional: zero)
 *   /exchange/theta       [views]                 angles; attribute units = degrees | radians
 *
 * Every rank and extent is checked (each 1 .. TL_DXCHANGE_MAX_DIM, the projection count
 * <= TL_DXCHANGE_MAX_VALUES, rows and columns the same in all three images, one angle per
 * view) before anything is allocated; libhdf5 converts float or integer element types to
 * float on reading. Flat/dark normalisation (Beer-Lambert):
 *
 *   p = -log t,   t = (I - D) / (W - D),   W, D = per-pixel means of the flats / darks,
 *
 * with t clamped below at TL_DXCHANGE_MIN_TRANSMISSION (also where W - D <= 0 or t is not a
 * number); the clamped count is reported in the description. */
#include "tl-ct-formats.h"
#include "tl-progress.h"
#include "tl-ct-normalise.h"
#include "image/tl-format.h"
#include "image/tl-file.h"
#include "image/tl-isolate.h"
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <string.h>

#define DX_DATA "/exchange/data"
#define DX_WHITE "/exchange/data_white"
#define DX_DARK "/exchange/data_dark"
#define DX_THETA "/exchange/theta"

TlCtGeometry *tl_ct_geometry_new_parallel_angles(guint n_views, const double *theta,
                                                 guint det_u, guint det_v, double pixel_u_mm,
                                                 double pixel_v_mm, double centre_u,
                                                 GError **error) {
  if (n_views == 0 || det_u == 0 || det_v == 0 || !(pixel_u_mm > 0) || !(pixel_v_mm > 0) ||
      !isfinite(pixel_u_mm) || !isfinite(pixel_v_mm) || !isfinite(centre_u)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "parallel-beam geometry: %u views, detector %u x %u, pixels %g x %g mm, "
                "centre column %g: every count must be > 0 and every size finite and > 0",
                n_views, det_u, det_v, pixel_u_mm, pixel_v_mm, centre_u);
    return NULL;
  }
  /* As tl-ct-geometry.c's orbit: u = e_u.X / du + c_u, v = z / dv + c_v, w = 1. */
  g_autofree double *m = g_new0(double, 12 * (gsize)n_views);
  double cv = 0.5 * (det_v - 1.0);
  for (guint k = 0; k < n_views; k++) {
    if (!isfinite(theta[k])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "parallel-beam geometry: angle %u is %g, expected a finite value", k, theta[k]);
      return NULL;
    }
    double *P = m + 12 * (gsize)k;
    P[0] = -sin(theta[k]) / pixel_u_mm, P[1] = cos(theta[k]) / pixel_u_mm, P[3] = centre_u;
    P[6] = 1.0 / pixel_v_mm, P[7] = cv;
    P[11] = 1;
  }
  return tl_ct_geometry_new_matrices(TL_CT_PARALLEL, n_views, det_u, det_v, m, error);
}

/* --- the HDF5 layout --- */

typedef struct {
  const char *path;
  hid_t file;
  hid_t data, white, dark, theta; /* H5I_INVALID_HID when absent */
  guint views, rows, cols, flats, darks;
  char units[32];                 /* theta's units attribute, "" when absent */
  char data_type[48];
} DxLayout;

static void dx_close(DxLayout *l) {
  hid_t *ids[] = {&l->data, &l->white, &l->dark, &l->theta};
  for (guint i = 0; i < G_N_ELEMENTS(ids); i++)
    if (*ids[i] >= 0) H5Dclose(*ids[i]), *ids[i] = H5I_INVALID_HID;
  if (l->file >= 0) H5Fclose(l->file), l->file = H5I_INVALID_HID;
}

static gboolean dx_fail(const DxLayout *l, const char *name, GError **error, const char *fmt,
                        ...) G_GNUC_PRINTF(4, 5);
static gboolean dx_fail(const DxLayout *l, const char *name, GError **error, const char *fmt,
                        ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': Data Exchange dataset '%s': %s", l->path,
              name, what);
  return FALSE;
}

/* libhdf5 prints its error stack to stderr by default; the GError says it instead. */
static void dx_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static gboolean dx_open(DxLayout *l, const char *name, gboolean required, hid_t *out,
                        GError **error) {
  *out = H5I_INVALID_HID;
  htri_t group = H5Lexists(l->file, "/exchange", H5P_DEFAULT);
  htri_t there = group > 0 ? H5Lexists(l->file, name, H5P_DEFAULT) : group;
  if (there < 0) return dx_fail(l, name, error, "the file's link table cannot be read");
  if (there == 0) {
    if (!required) return TRUE;
    return dx_fail(l, name, error, "missing (a Data Exchange file holds /exchange/data, "
                   "data_white and theta)");
  }
  /* data only from this file (image/tl-datafile.h's policy, docs/reliability.md): an external
   * link, external raw storage or a virtual dataset would make HDF5 read other files, found
   * relative to the working directory or HDF5's own prefixes, not the file's folder */
  H5L_info_t li; /* H5Lget_info: 1.10 and 1.12+ (mapped to H5Lget_info2) */
  if (H5Lget_info(l->file, "/exchange", &li, H5P_DEFAULT) >= 0 && li.type == H5L_TYPE_EXTERNAL)
    return dx_fail(l, "/exchange", error, "is an external link to another file (expected data "
                   "stored in this file)");
  if (H5Lget_info(l->file, name, &li, H5P_DEFAULT) < 0)
    return dx_fail(l, name, error, "the file's link table cannot be read");
  if (li.type == H5L_TYPE_EXTERNAL)
    return dx_fail(l, name, error, "is an external link to another file (expected data stored "
                   "in this file)");
  hid_t obj = H5Oopen(l->file, name, H5P_DEFAULT);
  if (obj < 0) return dx_fail(l, name, error, "cannot be opened");
  if (H5Iget_type(obj) != H5I_DATASET) {
    H5Oclose(obj);
    return dx_fail(l, name, error, "not a dataset");
  }
  hid_t dcpl = H5Dget_create_plist(obj);
  int n_external = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
  H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
  if (dcpl >= 0) H5Pclose(dcpl);
  const char *refused = NULL;
  if (n_external > 0) refused = "keeps its values in external files";
  else if (layout == H5D_VIRTUAL) refused = "is a virtual dataset over other files";
  else if (n_external < 0 || layout == H5D_LAYOUT_ERROR) refused = "has no readable storage layout";
  if (refused) {
    H5Oclose(obj);
    return dx_fail(l, name, error, "%s (expected data stored in this file)", refused);
  }
  *out = obj; /* a dataset opened by H5Oopen is closed by H5Dclose */
  return TRUE;
}

/* Rank, extents (each 1 .. TL_DXCHANGE_MAX_DIM) and a numeric element type. */
static gboolean dx_shape(DxLayout *l, const char *name, hid_t d, int rank, hsize_t dims[3],
                         char *type_text, gsize type_len, GError **error) {
  hid_t space = H5Dget_space(d);
  if (space < 0) return dx_fail(l, name, error, "no dataspace");
  int r = H5Sget_simple_extent_type(space) == H5S_SIMPLE ? H5Sget_simple_extent_ndims(space) : -1;
  hsize_t dd[H5S_MAX_RANK] = {0};
  if (r == rank) H5Sget_simple_extent_dims(space, dd, NULL);
  H5Sclose(space);
  if (r != rank)
    return dx_fail(l, name, error, "rank %d, expected %d%s", r, rank,
                   rank == 3 ? " (angle, row, column)" : " (one angle per view)");
  static const char *axis[3] = {"first", "second", "third"};
  for (int i = 0; i < rank; i++) {
    if (dd[i] < 1 || dd[i] > TL_DXCHANGE_MAX_DIM)
      return dx_fail(l, name, error, "%s extent %" G_GUINT64_FORMAT ", expected 1 .. %u",
                     axis[i], (guint64)dd[i], TL_DXCHANGE_MAX_DIM);
    dims[i] = dd[i];
  }
  hid_t t = H5Dget_type(d);
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  size_t size = t >= 0 ? H5Tget_size(t) : 0;
  H5T_sign_t sign = c == H5T_INTEGER ? H5Tget_sign(t) : H5T_SGN_NONE;
  if (t >= 0) H5Tclose(t);
  if ((c != H5T_FLOAT && c != H5T_INTEGER) || size < 1 || size > 8)
    return dx_fail(l, name, error, "element type class %d of %zu bytes, expected an integer "
                   "or floating-point number of 1 to 8 bytes", (int)c, size);
  if (type_text)
    g_snprintf(type_text, type_len, "%s%zu", c == H5T_FLOAT ? "float" : sign == H5T_SGN_NONE ?
               "uint" : "int", size * 8);
  return TRUE;
}

/* A string attribute (fixed or variable length) into buf; "" when absent. */
static gboolean dx_string_attr(DxLayout *l, const char *name, hid_t d, const char *attr,
                               char *buf, gsize len, GError **error) {
  buf[0] = 0;
  if (H5Aexists(d, attr) <= 0) return TRUE;
  hid_t a = H5Aopen(d, attr, H5P_DEFAULT);
  if (a < 0) return dx_fail(l, name, error, "attribute '%s' cannot be opened", attr);
  hid_t t = H5Aget_type(a), space = H5Aget_space(a);
  gboolean ok = FALSE;
  hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && n == 1) {
    hid_t mem = H5Tcopy(H5T_C_S1);
    /* libhdf5 converts no character sets: read ASCII or UTF-8 (h5py 3's str) as stored; the
     * units compared below are ASCII either way */
    H5T_cset_t cset = H5Tget_cset(t);
    if (cset == H5T_CSET_ASCII || cset == H5T_CSET_UTF8) H5Tset_cset(mem, cset);
    if (H5Tis_variable_str(t) > 0) {
      char *s = NULL;
      H5Tset_size(mem, H5T_VARIABLE);
      if (H5Aread(a, mem, &s) >= 0 && s) {
        g_strlcpy(buf, s, len);
        ok = TRUE;
      }
      if (s) H5free_memory(s);
    } else {
      size_t size = H5Tget_size(t);
      if (size > 0 && size < 4096) {
        g_autofree char *s = g_malloc0(size + 1);
        H5Tset_size(mem, size + 1);
        H5Tset_strpad(mem, H5T_STR_NULLTERM);
        if (H5Aread(a, mem, s) >= 0) {
          g_strlcpy(buf, s, len);
          ok = TRUE;
        }
      }
    }
    H5Tclose(mem);
  }
  if (t >= 0) H5Tclose(t);
  if (space >= 0) H5Sclose(space);
  H5Aclose(a);
  if (!ok) return dx_fail(l, name, error, "attribute '%s' is not one readable string", attr);
  g_strstrip(buf);
  return TRUE;
}

/* Opens the file and checks the whole layout (no data read). */
static gboolean dx_layout(const char *path, DxLayout *l, GError **error) {
  *l = (DxLayout){.path = path, .file = H5I_INVALID_HID, .data = H5I_INVALID_HID,
                  .white = H5I_INVALID_HID, .dark = H5I_INVALID_HID, .theta = H5I_INVALID_HID};
  dx_quiet();
  if (H5Fis_hdf5(path) <= 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "'%s': not an HDF5 file (no HDF5 superblock signature found)", path);
    return FALSE;
  }
  l->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (l->file < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "'%s': libhdf5 cannot open it (damaged or truncated HDF5 file)", path);
    return FALSE;
  }
  hsize_t dd[3], dw[3], dk[3] = {0, 0, 0}, dt[3];
  if (!dx_open(l, DX_DATA, TRUE, &l->data, error) ||
      !dx_shape(l, DX_DATA, l->data, 3, dd, l->data_type, sizeof l->data_type, error) ||
      !dx_open(l, DX_WHITE, TRUE, &l->white, error) ||
      !dx_shape(l, DX_WHITE, l->white, 3, dw, NULL, 0, error) ||
      !dx_open(l, DX_DARK, FALSE, &l->dark, error) ||
      (l->dark >= 0 && !dx_shape(l, DX_DARK, l->dark, 3, dk, NULL, 0, error)) ||
      !dx_open(l, DX_THETA, TRUE, &l->theta, error) ||
      !dx_shape(l, DX_THETA, l->theta, 1, dt, NULL, 0, error) ||
      !dx_string_attr(l, DX_THETA, l->theta, "units", l->units, sizeof l->units, error))
    return FALSE;
  l->views = (guint)dd[0], l->rows = (guint)dd[1], l->cols = (guint)dd[2];
  l->flats = (guint)dw[0], l->darks = (guint)dk[0];
  guint64 n = (guint64)dd[0] * dd[1] * dd[2];
  if (n > TL_DXCHANGE_MAX_VALUES)
    return dx_fail(l, DX_DATA, error, "%u x %u x %u = %" G_GUINT64_FORMAT " values, more than "
                   "the %llu this reader takes", l->views, l->rows, l->cols, n,
                   (unsigned long long)TL_DXCHANGE_MAX_VALUES);
  if (dw[1] != dd[1] || dw[2] != dd[2])
    return dx_fail(l, DX_WHITE, error, "images of %u x %u (rows x columns), expected %u x %u as "
                   DX_DATA, (guint)dw[1], (guint)dw[2], l->rows, l->cols);
  if (l->dark >= 0 && (dk[1] != dd[1] || dk[2] != dd[2]))
    return dx_fail(l, DX_DARK, error, "images of %u x %u (rows x columns), expected %u x %u as "
                   DX_DATA, (guint)dk[1], (guint)dk[2], l->rows, l->cols);
  if (dt[0] != dd[0])
    return dx_fail(l, DX_THETA, error, "%u angles, expected one per view of " DX_DATA " (%u)",
                   (guint)dt[0], l->views);
  if (l->units[0] && g_ascii_strcasecmp(l->units, "degrees") != 0 &&
      g_ascii_strcasecmp(l->units, "deg") != 0 && g_ascii_strcasecmp(l->units, "degree") != 0 &&
      g_ascii_strcasecmp(l->units, "radians") != 0 && g_ascii_strcasecmp(l->units, "rad") != 0 &&
      g_ascii_strcasecmp(l->units, "radian") != 0) {
    g_autofree char *q = tl_text_quote(l->units, -1, 30);
    return dx_fail(l, DX_THETA, error, "units '%s', expected degrees or radians", q);
  }
  return TRUE;
}

/* The whole dataset as float (libhdf5 converts), every value finite. */
static float *dx_read(DxLayout *l, const char *name, hid_t d, guint64 n, GError **error) {
  float *v = g_try_new(float, n);
  if (!v) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "'%s': dataset '%s': %" G_GUINT64_FORMAT
                " values do not fit in memory", l->path, name, n);
    return NULL;
  }
  if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
    g_free(v);
    dx_fail(l, name, error, "libhdf5 cannot read its %" G_GUINT64_FORMAT " values (truncated "
            "file, or a compression filter this libhdf5 lacks)", n);
    return NULL;
  }
  for (guint64 i = 0; i < n; i++)
    if (!isfinite(v[i])) {
      dx_fail(l, name, error, "value %" G_GUINT64_FORMAT " is %g, expected a finite number", i,
              v[i]);
      g_free(v);
      return NULL;
    }
  return v;
}

/* --- libhdf5 in a child process (image/tl-isolate.h) ---
 *
 * libhdf5 1.10 is not safe on damaged files (fuzz-dxchange: reads of freed memory and a
 * segfault inside H5Lexists and H5Aexists on a few hundred mutated bytes), so every libhdf5
 * call runs in a forked child. The child answers a DxInfo, then for a load the angles (double)
 * and the line integrals (float); the parent checks the answer like a file (dx_info_check). */

/* The reader's bounds: a layout (describe) within a minute and 1 GiB; a load also gets a
 * second per 4 MB of the file, and its child raises the memory to what the layout needs
 * (dx_child_load). A damaged file made libhdf5 allocate and touch memory until the kernel's
 * OOM killer ended it a minute later (fuzz-dxchange), and could as well make it loop. */
#define DX_READER_BASE_S 60
#define DX_READER_BYTES_PER_S (4u << 20)
#define DX_READER_MEMORY (1ull << 30)

typedef struct {
  guint32 views, rows, cols, flats, darks, has_dark;
  guint64 clamped;
  char units[32];
  char data_type[48];
} DxInfo;

static void dx_info_from_layout(const DxLayout *l, DxInfo *info) {
  *info = (DxInfo){.views = l->views, .rows = l->rows, .cols = l->cols, .flats = l->flats,
                   .darks = l->darks, .has_dark = l->dark >= 0};
  g_strlcpy(info->units, l->units, sizeof info->units);
  g_strlcpy(info->data_type, l->data_type, sizeof info->data_type);
}

/* Child: the layout only (describe). */
static gboolean dx_child_layout(const char *path, GByteArray *out, GError **error) {
  DxLayout l;
  gboolean ok = dx_layout(path, &l, error);
  if (ok) {
    DxInfo info;
    dx_info_from_layout(&l, &info);
    g_byte_array_append(out, (const guint8 *)&info, sizeof info);
  }
  dx_close(&l);
  return ok;
}

/* Child: the layout, the angles as stored and p = -log t for every projection value. */
static gboolean dx_child_load(const char *path, GByteArray *out, GError **error) {
  DxLayout l;
  if (!dx_layout(path, &l, error)) {
    dx_close(&l);
    return FALSE;
  }
  guint64 pixels = (guint64)l.rows * l.cols, n = pixels * l.views;
  /* what the layout needs: the data as float and the answer (8 n), flats and darks as float,
   * their means (16 per pixel), the angles; libhdf5's conversion buffer is 1 MiB */
  tl_isolate_set_memory_limit(DX_READER_MEMORY + 8 * n + 4 * pixels * ((guint64)l.flats + l.darks)
                              + 16 * pixels + 16 * (guint64)l.views);
  g_autofree double *theta = g_new(double, l.views);
  if (H5Dread(l.theta, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, theta) < 0) {
    dx_fail(&l, DX_THETA, error, "libhdf5 cannot read its %u values", l.views);
    dx_close(&l);
    return FALSE;
  }
  for (guint k = 0; k < l.views; k++)
    if (!isfinite(theta[k]) || fabs(theta[k]) > 1e6) {
      dx_fail(&l, DX_THETA, error, "angle %u is %g, expected a finite angle", k, theta[k]);
      dx_close(&l);
      return FALSE;
    }
  g_autofree float *white = dx_read(&l, DX_WHITE, l.white, pixels * l.flats, error);
  g_autofree float *dark = white && l.dark >= 0 ? dx_read(&l, DX_DARK, l.dark,
                                                          pixels * l.darks, error) : NULL;
  g_autofree float *data = white && (dark || l.dark < 0) ? dx_read(&l, DX_DATA, l.data, n, error)
                                                          : NULL;
  dx_close(&l);
  if (!data) return FALSE;

  gsize head = sizeof(DxInfo) + sizeof(double) * l.views;
  g_byte_array_set_size(out, head + sizeof(float) * n);
  float *proj = (float *)(out->data + head); /* head is a multiple of 8 */
  /* tl-ct-normalise.c: the same arithmetic as Python's tomolab.normalize */
  guint64 clamped = 0;
  if (!tl_ct_normalise(data, l.views, pixels, white, l.flats, dark, dark ? l.darks : 0,
                       TL_DXCHANGE_MIN_TRANSMISSION, TRUE, proj, &clamped, error))
    return FALSE;
  DxInfo info;
  dx_info_from_layout(&l, &info);
  info.clamped = clamped;
  memcpy(out->data, &info, sizeof info);
  memcpy(out->data + sizeof info, theta, sizeof(double) * l.views);
  return TRUE;
}

/* Degrees unless the units say radians; without units, degrees when any angle exceeds
 * 2 pi in magnitude (Data Exchange writers store degrees), else radians. */
static gboolean dx_theta_degrees(const DxInfo *l, const double *theta, gboolean *inferred) {
  *inferred = l->units[0] == 0;
  if (!*inferred) return g_ascii_strncasecmp(l->units, "rad", 3) != 0;
  for (guint k = 0; k < l->views; k++)
    if (fabs(theta[k]) > 2 * G_PI + 1e-6) return TRUE;
  return FALSE;
}

/* Parent: the child's answer checked as a file's header is (`values`: TRUE for a load). */
static gboolean dx_info_check(const char *path, GBytes *bytes, gboolean values, DxInfo *info,
                              GError **error) {
  gsize size = g_bytes_get_size(bytes);
  if (size < sizeof *info) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': the libhdf5 reader process answered "
                "%" G_GSIZE_FORMAT " bytes, expected at least %zu", path, size, sizeof *info);
    return FALSE;
  }
  memcpy(info, g_bytes_get_data(bytes, NULL), sizeof *info);
  info->units[sizeof info->units - 1] = info->data_type[sizeof info->data_type - 1] = 0;
  guint32 dims[] = {info->views, info->rows, info->cols, info->flats};
  guint64 n = (guint64)info->views * info->rows * info->cols;
  gboolean ok = info->darks <= TL_DXCHANGE_MAX_DIM && info->has_dark <= 1 &&
                n <= TL_DXCHANGE_MAX_VALUES;
  for (guint i = 0; i < G_N_ELEMENTS(dims); i++)
    ok = ok && dims[i] >= 1 && dims[i] <= TL_DXCHANGE_MAX_DIM;
  guint64 expected = sizeof *info + (values ? sizeof(double) * info->views + sizeof(float) * n : 0);
  if (!ok || size != expected) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': the libhdf5 reader process answered "
                "%u views x %u rows x %u columns, %u flats, %u darks in %" G_GSIZE_FORMAT
                " bytes: not a consistent layout", path, info->views, info->rows, info->cols,
                info->flats, info->darks, size);
    return FALSE;
  }
  return TRUE;
}

static GBytes *dx_run(const char *path, TlIsolatedFunc fn, gsize max_bytes, gboolean load,
                      GError **error) {
  if (!tl_file_check_input(path, "Data Exchange HDF5 file", error)) return NULL;
  H5open(); /* the library's own set-up once, here, not again in every child */
  g_autofree char *what = g_strdup_printf("'%s': libhdf5", path);
  TlIsolateLimits lim = {.timeout_s = DX_READER_BASE_S, .memory_bytes = DX_READER_MEMORY};
  GStatBuf st;
  if (load && g_stat(path, &st) == 0)
    lim.timeout_s += (guint)MIN((guint64)st.st_size / DX_READER_BYTES_PER_S, 86400);
  return tl_isolate_run_limited(what, fn, path, max_bytes, &lim, error);
}

TlCtData *tl_ct_dxchange_load(const char *path, GError **error) {
  gsize max_bytes = sizeof(DxInfo) + sizeof(double) * TL_DXCHANGE_MAX_DIM +
                    sizeof(float) * (gsize)TL_DXCHANGE_MAX_VALUES;
  /* one read in the reader process: the step reports its start and end (elapsed), no fraction */
  tl_progress_begin("reading Data Exchange file", 0);
  g_autoptr(GBytes) bytes = dx_run(path, dx_child_load, max_bytes, TRUE, error);
  tl_progress_end();
  DxInfo l;
  if (!bytes || !dx_info_check(path, bytes, TRUE, &l, error)) return NULL;
  const guint8 *p = g_bytes_get_data(bytes, NULL);
  guint64 pixels = (guint64)l.rows * l.cols, n = pixels * l.views;
  g_autofree double *theta = g_new(double, l.views);
  memcpy(theta, p + sizeof l, sizeof(double) * l.views);

  gboolean inferred, degrees = dx_theta_degrees(&l, theta, &inferred);
  g_autofree double *rad = g_new(double, l.views);
  for (guint k = 0; k < l.views; k++) rad[k] = degrees ? theta[k] * G_PI / 180.0 : theta[k];
  TlCtGeometry *g = tl_ct_geometry_new_parallel_angles(l.views, rad, l.cols, l.rows, 1.0, 1.0,
                                                       0.5 * (l.cols - 1.0), error);
  if (!g) return NULL;
  g_autoptr(TlCtData) d = tl_ct_data_new(g);
  memcpy(d->proj, p + sizeof l + sizeof(double) * l.views, sizeof(float) * n);
  for (guint64 i = 0; i < n; i++)
    if (!isfinite(d->proj[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': the libhdf5 reader process answered "
                  "line integral %" G_GUINT64_FORMAT " = %g, expected a finite value", path,
                  i, d->proj[i]);
      return NULL;
    }
  d->values = TL_CT_LINE_INTEGRALS;
  d->has_grid = TRUE;
  d->grid = tl_image_grid_centred(l.cols, l.cols, l.rows, 1, 1, 1);
  double t0 = theta[0], t1 = theta[l.views - 1];
  d->description = g_strdup_printf(
      "Data Exchange %s: %u views (theta %g .. %g %s%s), %u rows x %u columns (%s), %u flats, "
      "%u darks; p = -log((I - D) / (W - D)), %" G_GUINT64_FORMAT " values clamped at "
      "transmission %g; pixel size not stored (1 mm assumed); rotation centre not stored "
      "(middle column %g assumed)", path, l.views, t0, t1, degrees ? "deg" : "rad",
      inferred ? ", units inferred" : "", l.rows, l.cols, l.data_type, l.flats, l.darks,
      l.clamped, TL_DXCHANGE_MIN_TRANSMISSION, 0.5 * (l.cols - 1.0));
  return g_steal_pointer(&d);
}

/* --- the format table's entry (compute/tl-formats.c) --- */

static const guint8 hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

static guint dx_probe(const char *path, const guint8 *head, gsize n) {
  /* the superblock sits at 0 or, after a user block, at 512, 1024, 2048 ... */
  gboolean hdf5 = FALSE;
  for (gsize at = 0; at + 8 <= n && !hdf5; at = at ? at * 2 : 512)
    hdf5 = memcmp(head + at, hdf5_signature, 8) == 0;
  if (hdf5) {
    /* the root group's names ("exchange") sit in its local heap, near the start */
    for (gsize i = 0; i + 8 <= n; i++)
      if (memcmp(head + i, "exchange", 8) == 0) return TL_FORMAT_SURE;
    return TL_FORMAT_LIKELY - 20; /* an HDF5 file: the layout is checked on load */
  }
  return tl_format_path_has_extension(path, ".h5 .hdf5 .hdf .dxchange") ? TL_FORMAT_EXTENSION
                                                                           : 0;
}

static gboolean dx_describe(const char *path, GString *out, GError **error) {
  g_autoptr(GBytes) bytes = dx_run(path, dx_child_layout, sizeof(DxInfo), FALSE, error);
  DxInfo l;
  if (!bytes || !dx_info_check(path, bytes, FALSE, &l, error)) return FALSE;
  g_string_append_printf(out,
      "layout: Data Exchange (/exchange/data, data_white, data_dark, theta)\n"
      "projections: %u views x %u rows x %u columns (%s)\n"
      "flats: %u\ndarks: %u%s\ntheta units: %s\n"
      "beam: parallel (one slice per detector row)\n"
      "pixel size: not stored (1 mm assumed; ct-recon --pixel-size)\n"
      "rotation centre: not stored (ct-recon --centre auto finds it)\n",
      l.views, l.rows, l.cols, l.data_type, l.flats, l.darks,
      l.has_dark ? "" : " (no data_dark: zero)",
      l.units[0] ? l.units : "not stored (inferred from the values on load)");
  return TRUE;
}

static gpointer dx_load(const char *path, GError **error) {
  return tl_ct_dxchange_load(path, error);
}

const TlFormatClass tl_format_dxchange = {
    .name = "dxchange",
    .summary = "Data Exchange HDF5 projections (/exchange/data, flats, darks, theta; "
               "synchrotron parallel beam; read only)",
    .kind = TL_DATA_CT,
    .extensions = ".h5 .hdf5 .hdf .dxchange",
    .probe = dx_probe,
    .describe = dx_describe,
    .load = dx_load,
};
