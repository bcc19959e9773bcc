/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Issue 27 item 5: every file writer killed at every commit step finds the old or the new
 * output, never a mix. image/tl-file.h's fault hook TL_TEST_FAIL_AT=N kills the process
 * (SIGKILL) at its Nth step (renames, removals of replaced data); for N = 1, 2, ... a forked
 * child replaces the OLD output by NEW with the hook set, until a child completes. After each
 * kill the output must load as OLD or NEW exactly (grid and every value); then a plain save
 * must leave the folder with the output's own files only (no temp file, no orphan data file
 * of the killed save). The pair writers (.hv/.v, .mhd/.raw, .hs/.s, .cdh/.cdf, .raw/.raw.txt,
 * the CASToR scanner's .hscan/.lut) are the point; the one-file writers (.nii, .mha) are killed
 * the same way. The DICOM series writer never replaces files: killed at each of its renames it
 * must leave nothing or the whole series (a folder), or nothing, the whole series or a part
 * that every load refuses (numbered files beside the name). */
#define _POSIX_C_SOURCE 200809L
#include "dataset/tl-formats.h"
#include "image/tl-dicom.h"
#include "image/tl-file.h"
#include "image/tl-image.h"
#include "pet/data/tl-format-castor.h"
#include "pet/data/tl-format-petsird.h"
#include "pet/data/tl-sinogram.h"
#include "pet/scanner/tl-scanner.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* One writer: save, load, compare with what was saved (TRUE: equal). */
typedef struct {
  const char *name;     /* the output's file name */
  guint expected_files; /* in the folder after a clean save */
  gpointer (*make)(int which); /* 0: OLD, 1: NEW */
  gboolean (*save)(gpointer data, const char *path, GError **error);
  int (*which)(const char *path); /* 0 OLD, 1 NEW, -1 neither (a mix or unreadable) */
  void (*free)(gpointer data);
} Writer;

/* --- images: OLD and NEW differ in the voxel size (header) and every value (data) --- */

static gpointer image_make(int which) {
  TlImage *im = g_new0(TlImage, 1);
  float v = which ? 3.0f : 2.0f;
  im->grid = tl_image_grid_centred(5, 4, 3, v, v, v);
  im->data = g_new(float, 60);
  for (guint i = 0; i < 60; i++) im->data[i] = (which ? 1000.0f : 0.0f) + (float)i;
  return im;
}

static gboolean image_save(gpointer data, const char *path, GError **error) {
  const TlFormatClass *f = tl_format_for_output(path, TL_DATA_IMAGE, NULL, error);
  return f && tl_format_save(f, data, path, error);
}

static int image_which(const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_format_load_kind(path, TL_DATA_IMAGE, &e);
  if (!im) {
    g_test_message("%s: %s", path, e->message);
    return -1;
  }
  for (int w = 0; w < 2; w++) {
    g_autoptr(TlImage) ref = image_make(w);
    gboolean same = memcmp(im->grid.dims, ref->grid.dims, sizeof ref->grid.dims) == 0 &&
                    im->grid.voxel_mm[0] == ref->grid.voxel_mm[0] &&
                    im->grid.voxel_mm[2] == ref->grid.voxel_mm[2];
    for (guint i = 0; same && i < 60; i++) same = im->data[i] == ref->data[i];
    if (same) return w;
  }
  return -1;
}

static void image_free(gpointer p) { tl_image_free(p); }

/* --- STIR projection data: one segment, one ring; OLD and NEW differ in the number of
 * views (header) and every value (data) --- */

static gpointer sino_make(int which) {
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->name = g_strdup("test");
  s->n_rings = 1;
  s->n_detectors = 16;
  s->inner_radius_mm = 50;
  s->ring_spacing_mm = 4;
  s->bin_size_mm = 3;
  s->n_segments = 1;
  s->n_views = which ? 8 : 4;
  s->n_tangential = 5;
  s->n_axial = g_new0(guint, 1);
  s->n_axial[0] = 1;
  s->min_ring_difference = g_new0(gint, 1);
  s->max_ring_difference = g_new0(gint, 1);
  s->n_bins = (guint64)s->n_views * 5;
  s->data = g_new(float, s->n_bins);
  for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = (which ? 500.0f : 1.0f) + (float)i;
  return s;
}

static gboolean sino_save(gpointer data, const char *path, GError **error) {
  return tl_sinogram_save(data, path, error);
}

static int sino_which(const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_load(path, &e);
  if (!s) {
    g_test_message("%s: %s", path, e->message);
    return -1;
  }
  for (int w = 0; w < 2; w++) {
    g_autoptr(TlSinogram) ref = sino_make(w);
    gboolean same = s->n_views == ref->n_views && s->n_bins == ref->n_bins;
    for (guint64 i = 0; same && i < s->n_bins; i++) same = s->data[i] == ref->data[i];
    if (same) return w;
  }
  return -1;
}

static void sino_free(gpointer p) { tl_sinogram_free(p); }

/* --- CASToR list mode: OLD and NEW differ in the event count (header) and the events --- */

static gpointer castor_make(int which) {
  TlCastorData *d = g_new0(TlCastorData, 1);
  d->scanner_name = g_strdup("ring16");
  d->duration_s = which ? 20 : 10;
  d->calibration = 1;
  d->max_axial_diff_mm = -1;
  d->n_events = which ? 7 : 3;
  d->time_ms = g_new(guint32, d->n_events);
  d->id1 = g_new(guint32, d->n_events);
  d->id2 = g_new(guint32, d->n_events);
  for (guint i = 0; i < d->n_events; i++) {
    d->time_ms[i] = (which ? 5000 : 0) + 10 * i;
    d->id1[i] = i;
    d->id2[i] = 8 + i % 8;
  }
  return d;
}

static gboolean castor_save(gpointer data, const char *path, GError **error) {
  return tl_castor_save(data, path, error);
}

static int castor_which(const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlCastorData) d = tl_castor_load(path, &e);
  if (!d) {
    g_test_message("%s: %s", path, e->message);
    return -1;
  }
  for (int w = 0; w < 2; w++) {
    g_autoptr(TlCastorData) ref = castor_make(w);
    gboolean same = d->n_events == ref->n_events && d->duration_s == ref->duration_s;
    for (guint64 i = 0; same && i < d->n_events; i++)
      same = d->time_ms[i] == ref->time_ms[i] && d->id1[i] == ref->id1[i] &&
             d->id2[i] == ref->id2[i];
    if (same) return w;
  }
  return -1;
}

static void castor_free(gpointer p) { tl_castor_free(p); }

/* --- CASToR scanners: OLD and NEW differ in the crystal size (header) and the radius (every
 * crystal position of the LUT) --- */

static gpointer scanner_make(int which) {
  g_autofree char *text = g_strdup_printf(
      "kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\ncrystal_pitch_mm = %d\n"
      "radius_mm = %d\nring_pitch_mm = 4\ncrystal_size_mm = %d %d 10\n", which ? 5 : 4,
      which ? 50 : 40, which ? 5 : 4, which ? 5 : 4);
  GError *e = NULL;
  TlScanner *s = tl_scanner_from_text(text, "interrupt", 1, &e);
  g_assert_no_error(e);
  return s;
}

static gboolean scanner_save(gpointer data, const char *path, GError **error) {
  return tl_castor_scanner_save(data, path, error);
}

static int scanner_which(const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScanner) s = tl_castor_scanner_load(path, &e);
  if (!s) {
    g_test_message("%s: %s", path, e->message);
    return -1;
  }
  for (int w = 0; w < 2; w++) {
    g_autoptr(TlScanner) ref = scanner_make(w);
    /* the LUT holds float32 middles: positions back within 1e-3 mm */
    gboolean same = s->n_crystals == ref->n_crystals &&
                    s->crystal_size[0] == ref->crystal_size[0] &&
                    s->crystal_size[1] == ref->crystal_size[1];
    for (guint i = 0; same && i < s->n_crystals; i++)
      for (int k = 0; k < 3; k++)
        same = same && fabsf(s->crystals[i].centre[k] - ref->crystals[i].centre[k]) < 1e-3f;
    if (same) return w;
  }
  return -1;
}

static void scanner_free(gpointer p) { tl_scanner_free(p); }

/* --- PETSIRD (one file): OLD and NEW differ in the scanner (header) and every event --- */

static gpointer petsird_make(int which) {
  TlScanner *s = scanner_make(which);
  TlListmode *lm = tl_listmode_new(s, 40 + 8 * which);
  for (guint64 i = 0; i < lm->n_events; i++) { /* ring 0 to the opposite side of ring 1 */
    guint32 a = (guint32)(i % 24);
    lm->events[i] = (TlEvent){a, 24 + (a / 3 + 4) % 8 * 3 + (guint32)(i + which) % 3, 0};
  }
  return lm;
}

static gboolean petsird_save(gpointer data, const char *path, GError **error) {
  return tl_petsird_save(data, NULL, 0, path, error);
}

static int petsird_which(const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlListmode) lm = tl_petsird_load(path, NULL, &e);
  if (!lm) {
    g_test_message("%s: %s", path, e->message);
    return -1;
  }
  for (int w = 0; w < 2; w++) {
    g_autoptr(TlListmode) ref = petsird_make(w);
    gboolean same = lm->n_events == ref->n_events &&
                    lm->scanner->n_crystals == ref->scanner->n_crystals &&
                    memcmp(lm->events, ref->events, sizeof(TlEvent) * lm->n_events) == 0;
    for (guint i = 0; same && i < lm->scanner->n_crystals; i++)
      same = fabsf(lm->scanner->crystals[i].centre[0] - ref->scanner->crystals[i].centre[0]) < 1e-3f;
    if (same) return w;
  }
  return -1;
}

static void petsird_free(gpointer p) { tl_listmode_free(p); }

static const Writer writers[] = {
    {"out.hv", 2, image_make, image_save, image_which, image_free},
    {"out.mhd", 2, image_make, image_save, image_which, image_free},
    {"out.raw", 2, image_make, image_save, image_which, image_free},
    {"out.mha", 1, image_make, image_save, image_which, image_free},
    {"out.nii", 1, image_make, image_save, image_which, image_free},
    {"out.hs", 2, sino_make, sino_save, sino_which, sino_free},
    {"out.cdh", 2, castor_make, castor_save, castor_which, castor_free},
    {"out.hscan", 2, scanner_make, scanner_save, scanner_which, scanner_free},
    {"out.petsird", 1, petsird_make, petsird_save, petsird_which, petsird_free},
};

static guint count_files(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  for (const char *name; (name = g_dir_read_name(d));) {
    g_test_message("  %s", name);
    n++;
  }
  return n;
}

static void test_writer(gconstpointer data) {
  const Writer *w = data;
  gpointer old = w->make(0), new = w->make(1);
  guint kills = 0;
  for (int n = 1; n < 64; n++) {
    g_autofree char *dir = g_dir_make_tmp("tl-interrupt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, w->name, NULL);
    g_autoptr(GError) e = NULL;
    g_assert_true(w->save(old, path, &e));
    g_assert_no_error(e);
    g_assert_cmpint(w->which(path), ==, 0);
    pid_t pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
      g_autofree char *at = g_strdup_printf("%d", n);
      g_setenv("TL_TEST_FAIL_AT", at, TRUE);
      _exit(w->save(new, path, NULL) ? 0 : 1);
    }
    int st = 0;
    g_assert_cmpint(waitpid(pid, &st, 0), ==, pid);
    gboolean killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    g_assert_true(killed || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
    int found = w->which(path);
    g_test_message("%s: killed at step %d: %s", w->name, n,
                   !killed ? "completed" : found == 0 ? "old" : found == 1 ? "new" : "MIX");
    if (killed) {
      g_assert_cmpint(found, >=, 0); /* the old or the new output, never a mix */
      kills++;
    } else {
      g_assert_cmpint(found, ==, 1);
    }
    /* a later save cleans up what the killed one left: only the output's files remain */
    g_assert_true(w->save(new, path, &e));
    g_assert_no_error(e);
    g_assert_cmpint(w->which(path), ==, 1);
    g_assert_cmpuint(count_files(dir), ==, w->expected_files);
    tl_test_remove_tree(dir);
    if (!killed) break;
  }
  g_assert_cmpuint(kills, >=, 1); /* the hook reached every writer */
  g_test_message("%s: %u kill points", w->name, kills);
  w->free(old);
  w->free(new);
}

/* --- the DICOM series: nothing there before (a series never replaces files), NEW after --- */

/* What `dir` holds: 0 no DICOM file (the state before), 1 the NEW image (values to DICOM's
 * 16-bit rescale: within 1e-3 of the range), 2 a series every load refuses as incomplete,
 * -1 anything else (a wrong image, another error). */
static int dicom_which(const char *dir, const char *out) {
  g_autofree char *folder = g_build_filename(dir, out, NULL);
  const char *look = g_str_has_suffix(out, ".dcm") ? dir : folder;
  g_autoptr(GDir) d = g_dir_open(look, 0, NULL);
  gboolean any = FALSE;
  for (const char *n; d && (n = g_dir_read_name(d));) any = any || (n[0] != '.' && g_str_has_suffix(n, ".dcm"));
  if (!any) return 0;
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_format_dicom.load(look, &e); /* a folder opens its series */
  if (!im) {
    g_test_message("%s: %s", look, e->message);
    return strstr(e->message, "ImagesInAcquisition") && strstr(e->message, "interrupted save") ? 2 : -1;
  }
  g_autoptr(TlImage) ref = image_make(1);
  gboolean same = memcmp(im->grid.dims, ref->grid.dims, sizeof ref->grid.dims) == 0;
  for (int k = 0; same && k < 3; k++) same = fabsf(im->grid.voxel_mm[k] - ref->grid.voxel_mm[k]) < 1e-4f;
  for (guint i = 0; same && i < 60; i++) same = fabsf(im->data[i] - ref->data[i]) < 0.1f;
  return same ? 1 : -1;
}

static gboolean dicom_save(const char *path) {
  g_autoptr(TlImage) im = image_make(1);
  TlDicomSaveOptions opt = {.iod = TL_DICOM_SECONDARY_CAPTURE};
  g_autoptr(GError) e = NULL;
  gboolean ok = tl_dicom_save_series(im, path, &opt, &e);
  if (e) g_test_message("%s: %s", path, e->message);
  return ok;
}

static void test_dicom(gconstpointer data) {
  const char *out = data; /* a folder, or numbered files beside a name ending in .dcm */
  gboolean numbered = g_str_has_suffix(out, ".dcm");
  guint kills = 0;
  for (int n = 1; n < 64; n++) {
    g_autofree char *dir = g_dir_make_tmp("tl-interrupt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, out, NULL);
    pid_t pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
      g_autofree char *at = g_strdup_printf("%d", n);
      g_setenv("TL_TEST_FAIL_AT", at, TRUE);
      _exit(dicom_save(path) ? 0 : 1);
    }
    int st = 0;
    g_assert_cmpint(waitpid(pid, &st, 0), ==, pid);
    gboolean killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    g_assert_true(killed || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
    int found = dicom_which(dir, out);
    g_test_message("%s: killed at step %d: %s", out, n, !killed ? "completed" : found == 0 ? "nothing"
                   : found == 1 ? "new" : found == 2 ? "part, refused" : "MIX");
    if (killed) {
      /* nothing or the whole series; numbered files: a part, refused, too */
      g_assert_cmpint(found, >=, 0);
      if (!numbered) g_assert_cmpint(found, <=, 1);
      kills++;
    } else {
      g_assert_cmpint(found, ==, 1);
    }
    /* the killed save's temp files and folders go at the next save into the folder: with the
     * output removed, a save leaves only its own files */
    if (numbered) {
      for (guint k = 1; k <= 3; k++) {
        g_autofree char *slice = g_strdup_printf("%s/%.*s_%04u.dcm", dir, (int)strlen(out) - 4, out, k);
        g_remove(slice);
      }
    } else {
      tl_test_remove_tree(path);
    }
    g_assert_true(dicom_save(path));
    g_assert_cmpint(dicom_which(dir, out), ==, 1);
    g_assert_cmpuint(count_files(dir), ==, numbered ? 3 : 1);
    tl_test_remove_tree(dir);
    if (!killed) break;
  }
  g_assert_cmpuint(kills, >=, 1);
  g_test_message("%s: %u kill points", out, kills);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("TL_TEST_FAIL_AT");
  for (guint i = 0; i < G_N_ELEMENTS(writers); i++) {
    g_autofree char *p = g_strdup_printf("/file-interrupt/%s", writers[i].name);
    g_test_add_data_func(p, &writers[i], test_writer);
  }
  g_test_add_data_func("/file-interrupt/dicom-folder", "series", test_dicom);
  g_test_add_data_func("/file-interrupt/dicom-numbered", "ct.dcm", test_dicom);
  return g_test_run();
}
