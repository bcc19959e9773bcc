/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NIfTI-1 through nifticlib. Convention (docs/formats.md): scanner coordinates are the
 * NIfTI world coordinates (RAS-like, mm); voxel (i,j,k) has its centre at
 * origin + (i*vx, j*vy, k*vz). Both qform (identity rotation, qfac 1) and sform carry that
 * affine with code SCANNER_ANAT, so any reader lands the volume where it was. */
#include <nifti1_io.h>
#include "tl-image.h"
#include "tl-file.h"
#include "tl-format.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <gio/gio.h>

static void quiet(void) {
  /* nifticlib prints its own complaints; ours go into the GError */
  static gsize once;
  if (g_once_init_enter(&once)) {
    nifti_set_debug_level(0);
    g_once_init_leave(&once, 1);
  }
}

/* The header of a float32 volume on g (NULL + GError when NIfTI-1 cannot hold it). */
static nifti_image *make_header(const TlImageGrid *g, const char *unit, const char *path,
                                GError **error) {
  quiet();
  int dims[8] = {3, (int)g->dims[0], (int)g->dims[1], (int)g->dims[2], 1, 1, 1, 1};
  if (g->dims[0] > G_MAXINT16 || g->dims[1] > G_MAXINT16 || g->dims[2] > G_MAXINT16) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "'%s': NIfTI-1 holds at most 32767 voxels per axis, the grid has %u x %u x %u",
                path, g->dims[0], g->dims[1], g->dims[2]);
    return NULL;
  }
  nifti_image *nim = nifti_make_new_nim(dims, DT_FLOAT32, 0);
  if (!nim) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "'%s': nifticlib could not make a header", path);
    return NULL;
  }
  nim->dx = nim->pixdim[1] = g->voxel_mm[0];
  nim->dy = nim->pixdim[2] = g->voxel_mm[1];
  nim->dz = nim->pixdim[3] = g->voxel_mm[2];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_SEC;
  nim->qform_code = nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->quatern_b = nim->quatern_c = nim->quatern_d = 0.0f;
  nim->qfac = 1.0f;
  nim->qoffset_x = g->origin_mm[0];
  nim->qoffset_y = g->origin_mm[1];
  nim->qoffset_z = g->origin_mm[2];
  nim->qto_xyz = nifti_quatern_to_mat44(0, 0, 0, g->origin_mm[0], g->origin_mm[1], g->origin_mm[2],
                                        g->voxel_mm[0], g->voxel_mm[1], g->voxel_mm[2], 1.0f);
  nim->qto_ijk = nifti_mat44_inverse(nim->qto_xyz);
  memset(&nim->sto_xyz, 0, sizeof nim->sto_xyz);
  for (int d = 0; d < 3; d++) {
    nim->sto_xyz.m[d][d] = g->voxel_mm[d];
    nim->sto_xyz.m[d][3] = g->origin_mm[d];
  }
  nim->sto_xyz.m[3][3] = 1.0f;
  nim->sto_ijk = nifti_mat44_inverse(nim->sto_xyz);
  /* NIfTI-1 has no field for a value unit other than its codes for space and time: the unit
   * goes into descrip as "unit=X", which the reader below takes back (other software shows
   * descrip as free text) */
  if (unit && unit[0]) g_snprintf(nim->descrip, sizeof nim->descrip, "Tomolab unit=%s", unit);
  else g_strlcpy(nim->descrip, "Tomolab", sizeof nim->descrip);
  return nim;
}

/* Planes of a whole image in memory (tl_image_save_nifti through the plane writer). */
static gboolean image_planes(guint first, guint n, float *buf, gpointer data, GError **error) {
  const TlImage *im = data;
  gsize plane = (gsize)im->grid.dims[0] * im->grid.dims[1];
  memcpy(buf, im->data + plane * first, plane * n * sizeof(float));
  return TRUE;
}

gboolean tl_image_save_nifti(const TlImage *im, const char *path, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  return tl_image_save_nifti_planes(&im->grid, im->unit, path, image_planes, (gpointer)im, error);
}

/* The header through nifticlib (left open past it: nifti_image_write_hdr_img's option 2), then
 * the planes in chunks of at most 64 MiB, so a volume larger than the host's memory can be
 * written from wherever it is held. */
#define PLANE_CHUNK_BYTES (G_GUINT64_CONSTANT(64) << 20)

gboolean tl_image_save_nifti_planes(const TlImageGrid *g, const char *unit, const char *path,
                                    TlImagePlanesFunc read, gpointer data, GError **error) {
  if (!tl_image_grid_validate_shape(g, error)) return FALSE;
  nifti_image *nim = make_header(g, unit, path, error);
  if (!nim) return FALSE;
  gboolean gz = g_str_has_suffix(path, ".gz");
  g_autofree char *tmp = tl_file_temp_name(path, gz ? ".nii.gz" : ".nii");
  /* nifticlib reports nothing when it cannot write: try the temp file first for a reason */
  FILE *probe = g_fopen(tmp, "wb");
  if (!probe) {
    int e = errno;
    nifti_image_free(nim);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write NIfTI '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  fclose(probe);
  guint64 plane = (guint64)g->dims[0] * g->dims[1];
  guint per = (guint)MAX(1, MIN((guint64)g->dims[2], PLANE_CHUNK_BYTES / (4 * plane)));
  GError *e = NULL;
  gboolean ok = nifti_set_filenames(nim, tmp, 0, 1) == 0 && nifti_set_type_from_names(nim) == 0;
  znzFile fp = ok ? nifti_image_write_hdr_img(nim, 2, "wb") : NULL;
  ok = ok && !znz_isnull(fp);
  float *buf = ok ? g_try_malloc(4 * plane * per) : NULL;
  if (ok && !buf)
    g_set_error(&e, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "cannot write NIfTI '%s': no host memory for %u planes of %u x %u floats", path,
                per, g->dims[0], g->dims[1]);
  ok = ok && buf;
  for (guint z = 0; ok && z < g->dims[2]; z += per) {
    guint n = MIN(per, g->dims[2] - z);
    ok = read(z, n, buf, data, &e) && znzwrite(buf, 4, plane * n, fp) == plane * n;
  }
  g_free(buf);
  if (!znz_isnull(fp) && znzclose(fp) != 0) ok = FALSE;
  int dims1 = nim->nx, dims2 = nim->ny, dims3 = nim->nz;
  nifti_image_free(nim);
  /* nifti_image_write reports nothing: read the header back and check the size */
  nifti_image *chk = ok ? nifti_image_read(tmp, 0) : NULL;
  ok = chk && chk->nx == dims1 && chk->ny == dims2 && chk->nz == dims3;
  GStatBuf st;
  if (ok && !gz && (g_stat(tmp, &st) != 0 ||
                    (guint64)st.st_size < (guint64)chk->iname_offset + 4 * (guint64)chk->nvox))
    ok = FALSE;
  if (chk) nifti_image_free(chk);
  if (ok && !tl_file_rename(tmp, path)) ok = FALSE;
  if (!ok) {
    g_remove(tmp);
    if (e) g_propagate_error(error, e);
    else
      g_set_error(error, TL_ERROR, TL_ERROR_IO,
                  "cannot write NIfTI '%s': the file written is short or unreadable (disk full?)",
                  path);
  }
  return ok;
}

/* v * slope + inter, but no "+ 0": -0.0 + 0 is +0.0, and a saved image must load back with
 * the same bits (found by tests/fuzz/fuzz-image). */
static inline double scaled(double v, double slope, double inter) {
  return inter != 0 ? v * slope + inter : v * slope;
}

/* Voxel values of any NIfTI datatype as float, with the scl_slope/scl_inter scaling. */
static gboolean to_float(const nifti_image *nim, float *out, const char *path, GError **error) {
  double slope = nim->scl_slope, inter = nim->scl_inter;
  if (slope == 0 || !isfinite(slope)) slope = 1, inter = 0; /* NIfTI: slope 0 = no scaling */
  if (!isfinite(inter)) inter = 0;
  size_t n = nim->nvox;
#define CONV(T)                                                          \
  for (size_t i = 0; i < n; i++) out[i] = tl_float_from_double(scaled(((const T *)nim->data)[i], slope, inter)); \
  break
  switch (nim->datatype) {
  case DT_UINT8: CONV(guint8);
  case DT_INT8: CONV(gint8);
  case DT_INT16: CONV(gint16);
  case DT_UINT16: CONV(guint16);
  case DT_INT32: CONV(gint32);
  case DT_UINT32: CONV(guint32);
  case DT_INT64: CONV(gint64);
  case DT_UINT64: CONV(guint64);
  case DT_FLOAT32: CONV(float);
  case DT_FLOAT64: CONV(double);
  default:
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': datatype %d (%s) is not a real scalar (expected an integer or "
                "float type)", path, nim->datatype, nifti_datatype_string(nim->datatype));
    return FALSE;
  }
#undef CONV
  return TRUE;
}

/* The voxel-to-mm affine must map each voxel axis onto one scanner axis (a signed
 * permutation with scaling); the data are then reordered so x runs fastest along +x.
 * perm[d] = the voxel axis along scanner axis d, step[d] = its signed voxel size. */
static gboolean axis_map(const mat44 *m, const char *path, int perm[3], double step[3],
                         GError **error) {
  gboolean used[3] = {FALSE, FALSE, FALSE};
  for (int j = 0; j < 3; j++) {
    int r = 0;
    double len = 0;
    for (int i = 0; i < 3; i++) len = MAX(len, fabs(m->m[i][j]));
    for (int i = 0; i < 3; i++)
      if (fabs(m->m[i][j]) == len) r = i;
    for (int i = 0; i < 3; i++)
      if (i != r && fabs(m->m[i][j]) > 1e-4 * len) len = -1;
    if (len <= 0 || used[r]) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "NIfTI '%s': oblique affine (voxel axis %d maps to (%g, %g, %g) mm); Tomolab "
                  "images need voxel axes along the scanner axes (reslice it first)",
                  path, j, m->m[0][j], m->m[1][j], m->m[2][j]);
      return FALSE;
    }
    used[r] = TRUE;
    perm[r] = j;
    step[r] = m->m[r][j];
  }
  return TRUE;
}

/* The fields nifticlib would complain about on stderr (and refuse without a reason), checked
 * first from the header's bytes (through znzlib, so .nii.gz too). A .hdr/.img pair is read
 * through its .hdr. */
static gboolean header_check(const char *path, GError **error) {
  guint8 h[348];
  znzFile fp = znzopen(path, "rb", 1);
  long n = znz_isnull(fp) ? -1 : (long)znzread(h, 1, sizeof h, fp);
  if (!znz_isnull(fp)) znzclose(fp);
  if (n < (long)sizeof h) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': header truncated: %ld bytes (expected at least 348)", path, MAX(n, 0));
    return FALSE;
  }
  gint32 size;
  memcpy(&size, h, 4);
  if (size != 348 && GUINT32_SWAP_LE_BE((guint32)size) != 348) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': field sizeof_hdr is %d (expected 348: not a NIfTI-1 file)", path,
                (int)size);
    return FALSE;
  }
  gboolean swap = size != 348;
  gint16 dim0;
  memcpy(&dim0, h + 40, 2);
  if (swap) dim0 = (gint16)GUINT16_SWAP_LE_BE((guint16)dim0);
  if (dim0 < 1 || dim0 > 7) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': field dim[0] is %d (expected 1 to 7 dimensions)", path, dim0);
    return FALSE;
  }
  return TRUE;
}

/* nifticlib refused a header that header_check() let through. */
static void header_reason(const char *path, GError **error) {
  guint8 h[348] = {0};
  znzFile fp = znzopen(path, "rb", 1);
  if (!znz_isnull(fp)) {
    znzread(h, 1, sizeof h, fp);
    znzclose(fp);
  }
  g_autofree char *magic = tl_text_quote((const char *)h + 344, h[344] && h[345] && h[346] && h[347] ? 4 : strlen((const char *)h + 344), 8);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "NIfTI '%s': nifticlib refused the header (field magic '%s', expected 'n+1' or "
              "'ni1'; or a dim, datatype or vox_offset out of range)", path, magic);
}

/* nifticlib's own short-read check never fires (its reader returns (size_t)-1 and the caller
 * compares with the wanted size), so a truncated file would load zero-filled: the data bytes
 * are counted here before anything is allocated, in the file or through the gzip stream. */
static gboolean check_data_size(const nifti_image *nim, const char *path, guint64 need_data,
                                GError **error) {
  guint64 need = (guint64)MAX(nim->iname_offset, 0) + need_data, have = 0;
  gboolean gz = nifti_is_gzfile(nim->iname);
  if (!gz) {
    GStatBuf st;
    if (g_stat(nim->iname, &st) != 0) {
      int e = errno;
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "NIfTI '%s': cannot open its data file '%s': %s",
                  path, nim->iname, g_strerror(e));
      return FALSE;
    }
    have = (guint64)st.st_size;
  } else {
    znzFile fp = znzopen(nim->iname, "rb", 1);
    if (znz_isnull(fp)) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "NIfTI '%s': cannot open '%s'", path, nim->iname);
      return FALSE;
    }
    g_autofree guint8 *buf = g_malloc(1 << 20);
    for (;;) {
      long got = (long)znzread(buf, 1, 1 << 20, fp);
      if (got <= 0) break; /* end, or a corrupt stream: what was read so far counts */
      have += (guint64)got;
      if (have >= need) break;
    }
    znzclose(fp);
  }
  if (have < need) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': truncated: %" G_GUINT64_FORMAT " bytes%s, but vox_offset %d + %d x "
                "%d x %d voxels of %d bytes need %" G_GUINT64_FORMAT, path, have,
                gz ? " after decompression" : "", nim->iname_offset, nim->nx, nim->ny, nim->nz,
                nim->nbyper, need);
    return FALSE;
  }
  return TRUE;
}

/* The voxels read here, not by nifti_image_load(): that one silently turns NaN and infinite
 * floats into 0 (a corrupt mu-map would reach a reconstruction as holes), and its short-read
 * check never fires. */
static gboolean read_voxels(nifti_image *nim, guint64 nvox) {
  gsize bytes = (gsize)(nvox * (guint64)nim->nbyper);
  znzFile fp = znzopen(nim->iname, "rb", nifti_is_gzfile(nim->iname));
  if (znz_isnull(fp)) return FALSE;
  void *data = g_try_malloc(MAX(bytes, 1));
  gboolean ok = data && znzseek(fp, nim->iname_offset, SEEK_SET) >= 0; /* gzseek: the offset */
  for (gsize done = 0; ok && done < bytes;) {
    long got = (long)znzread((char *)data + done, 1, MIN(bytes - done, (gsize)1 << 30), fp);
    if (got <= 0) ok = FALSE;
    else done += (gsize)got;
  }
  znzclose(fp);
  if (!ok) {
    g_free(data);
    return FALSE;
  }
  if (nim->swapsize > 1 && nim->byteorder != nifti_short_order())
    nifti_swap_Nbytes(nvox, nim->swapsize, data);
  nim->data = data; /* freed by nifti_image_free (malloc'd; g_malloc is malloc) */
  return TRUE;
}

static TlImage *load_nifti_named(const char *path, GError **error);

/* nifticlib finds files by their extension: NIfTI content under another name (content
 * detection, tl-formats.h) is read through a symlink named .nii / .nii.gz in a private
 * folder, and messages name the real file. */
TlImage *tl_image_load_nifti(const char *path, GError **error) {
  if (tl_format_path_has_extension(path, ".nii .nii.gz .hdr .img .hdr.gz .img.gz"))
    return load_nifti_named(path, error);
  if (!tl_file_check_input(path, "NIfTI image", error)) return NULL;
  gsize n = 0;
  g_autofree guint8 *head = tl_format_read_head(path, &n, error);
  if (!head) return NULL;
  gboolean gz = n >= 2 && head[0] == 0x1f && head[1] == 0x8b;
  g_autofree char *dir = g_dir_make_tmp("tl-nifti-XXXXXX", error);
  if (!dir) return NULL;
  g_autofree char *link = g_build_filename(dir, gz ? "image.nii.gz" : "image.nii", NULL);
  g_autofree char *target = g_canonicalize_filename(path, NULL);
  TlImage *im = NULL;
  GError *e = NULL;
  g_autoptr(GFile) lf = g_file_new_for_path(link);
  if (!g_file_make_symbolic_link(lf, target, NULL, &e)) {
    g_prefix_error(&e, "NIfTI '%s': cannot read it under a .nii name: ", path);
  } else {
    im = load_nifti_named(link, &e);
  }
  g_remove(link);
  g_rmdir(dir);
  if (e) {
    g_autoptr(GString) msg = g_string_new(e->message);
    g_string_replace(msg, link, path, 0);
    g_set_error_literal(error, e->domain, e->code, msg->str);
    g_error_free(e);
  }
  return im;
}

static TlImage *load_nifti_named(const char *path, GError **error) {
  quiet();
  if (!tl_file_check_input(path, "NIfTI image", error)) return NULL;
  g_autofree char *hdr = NULL;
  if (g_str_has_suffix(path, ".img") || g_str_has_suffix(path, ".img.gz")) {
    hdr = g_strdup(path);
    memcpy(strstr(hdr, ".img") + 1, "hdr", 3);
  }
  if (!header_check(hdr && g_file_test(hdr, G_FILE_TEST_EXISTS) ? hdr : path, error)) return NULL;
  nifti_image *nim = nifti_image_read(path, 0); /* the header only: sizes are checked first */
  if (!nim) {
    header_reason(path, error);
    return NULL;
  }
  /* the voxel count from dim[], checked against the stated limit without overflowing (nvox
   * is nifticlib's product, which 7 large dims can wrap) */
  guint64 nvox = 1;
  for (int d = 1; d <= nim->ndim && d <= 7; d++) {
    if (nim->dim[d] < 1) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "NIfTI '%s': field dim[%d] is %d (expected >= 1)",
                  path, d, nim->dim[d]);
      nifti_image_free(nim);
      return NULL;
    }
    nvox *= (guint64)nim->dim[d];
    if (nvox > TL_IMAGE_MAX_VOXELS) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "NIfTI '%s': field dim claims %d x %d x %d x %d voxels (expected at most 2^28 "
                  "voxels: larger images are refused)", path, nim->nx, nim->ny, nim->nz,
                  nim->nt);
      nifti_image_free(nim);
      return NULL;
    }
  }
  GError *e = NULL;
  if (nim->nbyper < 1 || nim->nbyper > 32 || nim->ndim < 1 ||
      !check_data_size(nim, path, nvox * (guint64)nim->nbyper, &e) ||
      !read_voxels(nim, nvox)) {
    if (!e)
      g_set_error(&e, TL_ERROR, TL_ERROR_FORMAT,
                  "NIfTI '%s': nifticlib could not read the voxels (field datatype %d, %d bytes "
                  "each)", path, nim->datatype, nim->nbyper);
    g_propagate_error(error, e);
    nifti_image_free(nim);
    return NULL;
  }
  TlImage *im = NULL;
  float *flat = NULL;
  int extra = 1; /* voxels per (x, y, z): the product of the dims past the third */
  for (int d = 4; d <= nim->ndim && d <= 7; d++) extra *= MAX(nim->dim[d], 1);
  if (nim->ndim < 3 || nim->ndim > 7 || extra != 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "NIfTI '%s': %d-D image of %d x %d x %d x %d (expected a 3-D volume, or 4-D with one "
                "frame)", path, nim->ndim, nim->nx, nim->ny, nim->nz, nim->nt);
    goto out;
  }
  mat44 m;
  if (nim->sform_code > 0)
    m = nim->sto_xyz;
  else if (nim->qform_code > 0)
    m = nim->qto_xyz;
  else { /* "method 1" of nifti1.h: voxel sizes only, no origin */
    memset(&m, 0, sizeof m);
    m.m[0][0] = nim->dx > 0 ? nim->dx : 1;
    m.m[1][1] = nim->dy > 0 ? nim->dy : 1;
    m.m[2][2] = nim->dz > 0 ? nim->dz : 1;
  }
  int perm[3];
  double step[3];
  if (!axis_map(&m, path, perm, step, error)) goto out;
  int n_in[3] = {nim->nx, nim->ny, nim->nz};
  TlImageGrid g;
  for (int d = 0; d < 3; d++) {
    int j = perm[d];
    g.dims[d] = (guint)n_in[j];
    g.voxel_mm[d] = (float)fabs(step[d]);
    /* the voxel with the smallest coordinate along d becomes index 0 */
    /* no "+ 0" for a positive step: -0.0 + 0 is +0.0, and the grid must load back bit for bit
     * (found by tests/fuzz/fuzz-image) */
    g.origin_mm[d] = (float)(step[d] < 0 ? m.m[d][3] + step[d] * (n_in[j] - 1) : m.m[d][3]);
  }
  if (!tl_image_grid_validate(&g, error)) {
    g_prefix_error(error, "NIfTI '%s': ", path);
    goto out;
  }
  flat = g_new(float, nim->nvox);
  if (!to_float(nim, flat, path, error)) goto out;
  /* NaN and infinities are refused, as in the raw reader: they would reach a reconstruction
   * as garbage (or as 0 after a clamp) */
  for (size_t i = 0; i < nim->nvox; i++)
    if (!isfinite(flat[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "NIfTI '%s': voxel %" G_GSIZE_FORMAT " (file order) holds %g (expected a finite "
                  "value)", path, (gsize)i, flat[i]);
      goto out;
    }
  im = tl_image_new(&g);
  /* the unit from descrip's "unit=X" (Tomolab's writer above); a malformed one is ignored,
   * since descrip is free text to every other writer */
  char desc[sizeof nim->descrip + 1] = {0};
  memcpy(desc, nim->descrip, sizeof nim->descrip);
  const char *u = strstr(desc, "unit=");
  if (u && (u == desc || u[-1] == ' ')) {
    char unit[TL_IMAGE_UNIT_MAX + 1] = {0};
    gsize k = 0;
    for (u += 5; *u && *u != ' ' && k < TL_IMAGE_UNIT_MAX; u++) unit[k++] = *u;
    tl_image_set_unit(im, unit);
  }
  guint64 stride_in[3] = {1, (guint64)n_in[0], (guint64)n_in[0] * n_in[1]};
  for (guint z = 0; z < g.dims[2]; z++)
    for (guint y = 0; y < g.dims[1]; y++)
      for (guint x = 0; x < g.dims[0]; x++) {
        guint a[3] = {x, y, z};
        guint64 src = 0;
        for (int d = 0; d < 3; d++) {
          guint idx = step[d] < 0 ? g.dims[d] - 1 - a[d] : a[d];
          src += idx * stride_in[perm[d]];
        }
        im->data[x + (guint64)g.dims[0] * (y + (guint64)g.dims[1] * z)] = flat[src];
      }
out:
  g_free(flat);
  nifti_image_free(nim);
  return im;
}

/* --- the format table's entry (compute/dataset/tl-formats.c) --- */

/* NIfTI-1: sizeof_hdr = 348 at offset 0 (either byte order) and the magic "n+1" (one file)
 * or "ni1" (.hdr/.img pair) at 344; Analyze 7.5 has the size without the magic. A gzip
 * stream is recognised by its extension only (its header is compressed). */
static guint nifti_probe(const char *path, const guint8 *head, gsize n) {
  if (n >= 348) {
    guint32 le = head[0] | head[1] << 8 | head[2] << 16 | (guint32)head[3] << 24;
    guint32 be = head[3] | head[2] << 8 | head[1] << 16 | (guint32)head[0] << 24;
    if (le == 348 || be == 348) {
      if (memcmp(head + 344, "n+1", 4) == 0 || memcmp(head + 344, "ni1", 4) == 0)
        return TL_FORMAT_SURE;
      return TL_FORMAT_LIKELY;
    }
  }
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b &&
      tl_format_path_has_extension(path, ".nii.gz .hdr.gz .img.gz"))
    return TL_FORMAT_LIKELY;
  return tl_format_path_has_extension(path, ".nii .nii.gz .hdr .img") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer nifti_load(const char *path, GError **error) {
  return tl_image_load_nifti(path, error);
}

static gboolean nifti_save(gconstpointer data, const char *path, GError **error) {
  return tl_image_save_nifti(data, path, error);
}

const TlFormatClass tl_format_nifti = {
    .name = "nifti",
    .summary = "NIfTI-1 image (.nii, .nii.gz; .hdr/.img pairs read)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".nii .nii.gz .hdr .img .hdr.gz .img.gz",
    .probe = nifti_probe,
    .load = nifti_load,
    .save = nifti_save,
};
