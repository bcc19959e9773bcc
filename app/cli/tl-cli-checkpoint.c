/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reconstruction checkpoints (tl-cli-dist.h): a text header, then the image as little-endian
 * float32 voxels (x fastest):
 *
 *   TOMOLAB-CHECKPOINT 1
 *   sub_iterations = 7         done; iteration = 7 / subsets + 1, subset = 7 mod subsets next
 *   subsets = 5
 *   options_sha256 = <64 hex>  the options that shape the image (tl-cli-recon.c)
 *   dims = 16 16 8
 *   voxel_mm = 4 4 4
 *   origin_mm = -30 -30 -14
 *   end_header
 *
 * Written by rank 0 only, atomically (tl_file_begin / commit): a crash or a killed rank during
 * the write leaves the previous checkpoint whole. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "tl-cli-dist.h"
#include "image/tl-file.h"
#include <errno.h>
#include <math.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAGIC "TOMOLAB-CHECKPOINT 1"

void tl_cli_checkpoint_clear(TlCliCheckpoint *c) {
  g_clear_pointer(&c->image, tl_image_free);
}

gboolean tl_cli_checkpoint_save(const char *path, const TlImage *image, guint sub_iterations,
                                guint subsets, const char *hash, GError **error) {
  const TlImageGrid *g = &image->grid;
  char v[3][32], o[3][32];
  for (int i = 0; i < 3; i++) {
    tl_format_float(v[i], g->voxel_mm[i]);
    tl_format_float(o[i], g->origin_mm[i]);
  }
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  fprintf(f, MAGIC "\nsub_iterations = %u\nsubsets = %u\noptions_sha256 = %s\n"
          "dims = %u %u %u\nvoxel_mm = %s %s %s\norigin_mm = %s %s %s\nend_header\n",
          sub_iterations, subsets, hash, g->dims[0], g->dims[1], g->dims[2], v[0], v[1], v[2],
          o[0], o[1], o[2]);
  guint64 n = tl_image_grid_n_voxels(g);
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < n; i++) {
    guint32 w;
    memcpy(&w, &image->data[i], 4);
    w = GUINT32_TO_LE(w);
    ok = fwrite(&w, 4, 1, f) == 1;
  }
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write checkpoint '%s': %s", path,
                g_strerror(e));
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

static gboolean parse_header(FILE *f, const char *path, TlCliCheckpoint *c, TlImageGrid *g,
                             GError **error) {
  char *line = NULL;
  size_t cap = 0;
  guint lineno = 0, seen = 0;
  gboolean ok = FALSE;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (;;) {
    ssize_t len = getline(&line, &cap, f);
    lineno++;
    if (len < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: the header ends before 'end_header' (line %u)", path, lineno);
      goto out;
    }
    if (lineno == 1) {
      g_strchomp(line);
      if (strcmp(line, MAGIC) != 0) {
        g_autofree char *q = tl_text_quote(line, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s: not a Tomolab checkpoint (first line '%s', expected '" MAGIC "')",
                    path, q);
        goto out;
      }
      continue;
    }
    if (!tl_text_check(path, line, (gsize)len, lineno, error)) goto out;
    g_strchomp(line);
    if (strcmp(line, "end_header") == 0) break;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(line, &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", path,
                  lineno);
      goto out;
    }
    if (!tl_kv_once(keys_seen, path, key, lineno, error)) goto out;
    guint64 u;
    double d[3];
    if (strcmp(key, "sub_iterations") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, G_MAXUINT32 - 1, &u, error)) goto out;
      c->sub_iterations = (guint)u;
      seen |= 1;
    } else if (strcmp(key, "subsets") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, 1000, &u, error)) goto out;
      if (u == 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'subsets': value 0 (expected 1 to 1000)", path, lineno);
        goto out;
      }
      c->subsets = (guint)u;
      seen |= 2;
    } else if (strcmp(key, "options_sha256") == 0) {
      gboolean hex = strlen(value) == 64;
      for (const char *p = value; hex && *p; p++) hex = g_ascii_isxdigit(*p);
      if (!hex) {
        g_autofree char *q = tl_text_quote(value, -1, 80);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'options_sha256': value '%s' (expected 64 hex digits)", path,
                    lineno, q);
        goto out;
      }
      memcpy(c->hash, value, 65);
      seen |= 4;
    } else if (strcmp(key, "dims") == 0) {
      if (!tl_kv_doubles(path, lineno, key, value, 3, d, error)) goto out;
      for (int i = 0; i < 3; i++) {
        if (!(d[i] >= 1 && d[i] <= 65535 && d[i] == (guint)d[i])) {
          g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                      "%s:%u: key 'dims': value %g (expected whole numbers 1 to 65535)", path,
                      lineno, d[i]);
          goto out;
        }
        g->dims[i] = (guint)d[i];
      }
      seen |= 8;
    } else if (strcmp(key, "voxel_mm") == 0 || strcmp(key, "origin_mm") == 0) {
      if (!tl_kv_doubles(path, lineno, key, value, 3, d, error)) goto out;
      float *dst = key[0] == 'v' ? g->voxel_mm : g->origin_mm;
      for (int i = 0; i < 3; i++) dst[i] = tl_float_from_double(d[i]);
      seen |= key[0] == 'v' ? 16 : 32;
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", path, lineno,
                  key);
      goto out;
    }
  }
  static const char *names[] = {"sub_iterations", "subsets", "options_sha256", "dims",
                                "voxel_mm", "origin_mm"};
  for (int i = 0; i < 6; i++)
    if (!(seen & (1u << i))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks '%s'", path,
                  names[i]);
      goto out;
    }
  ok = tl_image_grid_validate(g, error);
  if (!ok) g_prefix_error(error, "checkpoint '%s': ", path);
out:
  free(line);
  return ok;
}

gboolean tl_cli_checkpoint_load(const char *path, TlCliCheckpoint *c, GError **error) {
  memset(c, 0, sizeof *c);
  if (!tl_file_check_input(path, "checkpoint", error)) return FALSE;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  TlImageGrid g = {{0}};
  gboolean ok = parse_header(f, path, c, &g, error);
  if (ok) {
    struct stat st;
    off_t start = ftello(f);
    guint64 n = tl_image_grid_n_voxels(&g), need = n * 4;
    guint64 have = fstat(fileno(f), &st) == 0 && start >= 0 ? (guint64)st.st_size - start : 0;
    if (have != need) { /* bounded by the file size before allocating */
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s: the header's dims %u x %u x %u need %" G_GUINT64_FORMAT " bytes of "
                  "voxels, but %" G_GUINT64_FORMAT " bytes follow it", path, g.dims[0],
                  g.dims[1], g.dims[2], need, have);
      ok = FALSE;
    } else {
      c->image = tl_image_new(&g);
      ok = fread(c->image->data, 4, n, f) == n;
      if (!ok) g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error in the voxels", path);
      for (guint64 i = 0; ok && i < n; i++) {
        guint32 w;
        memcpy(&w, &c->image->data[i], 4);
        w = GUINT32_FROM_LE(w);
        memcpy(&c->image->data[i], &w, 4);
        if (!isfinite(c->image->data[i])) {
          g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                      "%s: voxel %" G_GUINT64_FORMAT ": %g (expected a finite value)", path,
                      i, (double)c->image->data[i]);
          ok = FALSE;
        }
      }
    }
  }
  fclose(f);
  if (!ok) tl_cli_checkpoint_clear(c);
  return ok;
}
