/* SPDX-License-Identifier: GPL-3.0-or-later */
#define _POSIX_C_SOURCE 200809L /* fseeko */
/* MetaImage reader and writer (tl-metaimage.h). The header is "Key = Value" lines ending with
 * ElementDataFile; keys are matched case-insensitively. Conventions: Offset (or Origin /
 * Position) is the centre of voxel 0 and is taken as Tomolab scanner coordinates as it stands
 * (no LPS/RAS flip); the first DimSize axis is x (fastest). */
#include "tl-metaimage.h"
#include "tl-interfile.h"
#include "tl-file.h"
#include "tl-datafile.h"
#include "tl-format.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

typedef struct {
  const char *path;
  GHashTable *keys; /* lower-case key -> value */
  GHashTable *lines;
  gsize data_start; /* byte after the ElementDataFile line */
} Header;

static gboolean fail(const Header *h, const char *key, const char *value, const char *expected,
                     GError **error) {
  g_autofree char *q = value ? tl_text_quote(value, -1, 80) : NULL;
  if (value)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "MetaImage '%s' line %u: key '%s' has value '%s' (expected %s)", h->path,
                GPOINTER_TO_UINT(g_hash_table_lookup(h->lines, key)), key, q, expected);
  else
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "MetaImage '%s': key '%s' missing (expected %s)",
                h->path, key, expected);
  return FALSE;
}

static const char *get(const Header *h, const char *key) {
  return g_hash_table_lookup(h->keys, key);
}

/* n numbers of the key's value into out; FALSE + GError when not exactly n finite numbers. */
static gboolean numbers(const Header *h, const char *key, guint n, double *out, GError **error) {
  const char *v = get(h, key);
  g_autofree char *exp = g_strdup_printf("%u finite numbers", n);
  if (!v) return fail(h, key, NULL, exp, error);
  const char *p = v;
  for (guint i = 0; i < n; i++) {
    char *end;
    while (*p == ' ' || *p == '\t') p++;
    out[i] = g_ascii_strtod(p, &end);
    if (end == p || !isfinite(out[i])) return fail(h, key, v, exp, error);
    p = end;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p) return fail(h, key, v, exp, error);
  return TRUE;
}

static gboolean boolean(const Header *h, const char *key, gboolean def, gboolean *out,
                        GError **error) {
  const char *v = get(h, key);
  if (!v) return *out = def, TRUE;
  if (g_ascii_strcasecmp(v, "true") == 0) return *out = TRUE, TRUE;
  if (g_ascii_strcasecmp(v, "false") == 0) return *out = FALSE, TRUE;
  return fail(h, key, v, "True or False", error);
}

/* Reads the text header of `buf` (n bytes): lines up to and including ElementDataFile. */
static gboolean parse_header(Header *h, const char *buf, gsize n, GError **error) {
  const char *p = buf, *end = buf + n;
  guint line = 0;
  g_autoptr(GHashTable) seen = tl_kv_seen_new(); /* DimSize twice read half the data */
  while (p < end) {
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    if (!nl) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "MetaImage '%s': header has no "
                  "ElementDataFile line within its first %" G_GSIZE_FORMAT " bytes (expected "
                  "'ElementDataFile = LOCAL' or a file name as the last key)", h->path, n);
      return FALSE;
    }
    line++;
    if (!tl_text_check(h->path, p, (gsize)(nl - p), line, error)) return FALSE;
    g_autofree char *text = g_strndup(p, (gsize)(nl - p));
    p = nl + 1;
    g_strstrip(text);
    if (!*text) continue;
    char *eq = strchr(text, '=');
    if (!eq) {
      g_autofree char *q = tl_text_quote(text, -1, 80);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "MetaImage '%s' line %u: '%s' (expected "
                  "'Key = Value')", h->path, line, q);
      return FALSE;
    }
    *eq = '\0';
    char *key = g_ascii_strdown(g_strstrip(text), -1);
    if (!tl_kv_once(seen, h->path, key, line, error)) {
      g_free(key);
      return FALSE;
    }
    char *value = g_strdup(g_strstrip(eq + 1));
    g_hash_table_replace(h->lines, g_strdup(key), GUINT_TO_POINTER(line));
    gboolean last = g_str_equal(key, "elementdatafile");
    g_hash_table_replace(h->keys, key, value);
    if (last) {
      h->data_start = (gsize)(p - buf);
      return TRUE;
    }
  }
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "MetaImage '%s': no ElementDataFile line "
              "(expected it as the header's last key)", h->path);
  return FALSE;
}

static const struct {
  const char *name;
  TlInterfileNumber number;
  guint bytes;
} types[] = {
    {"met_uchar", TL_INTERFILE_UNSIGNED, 1}, {"met_char", TL_INTERFILE_SIGNED, 1},
    {"met_ushort", TL_INTERFILE_UNSIGNED, 2}, {"met_short", TL_INTERFILE_SIGNED, 2},
    {"met_uint", TL_INTERFILE_UNSIGNED, 4},  {"met_int", TL_INTERFILE_SIGNED, 4},
    {"met_ulong", TL_INTERFILE_UNSIGNED, 4}, {"met_long", TL_INTERFILE_SIGNED, 4},
    {"met_float", TL_INTERFILE_FLOAT, 4},    {"met_double", TL_INTERFILE_FLOAT, 8},
};

char *tl_metaimage_data_path(const char *path) {
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) return NULL;
  g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  Header h = {path, keys, lines, 0};
  FILE *f = g_fopen(path, "rb");
  if (!f) return NULL;
  g_autofree char *buf = g_malloc(TL_METAIMAGE_MAX_HEADER);
  gsize nb = fread(buf, 1, TL_METAIMAGE_MAX_HEADER, f);
  fclose(f);
  if (!parse_header(&h, buf, nb, NULL)) return NULL;
  const char *edf = get(&h, "elementdatafile");
  if (!edf || g_ascii_strcasecmp(edf, "local") == 0) return NULL;
  return tl_datafile_resolve(path, "ElementDataFile", edf, NULL);
}

TlImage *tl_image_load_metaimage(const char *path, GError **error) {
  if (!tl_file_check_input(path, "MetaImage file", error)) return NULL;
  g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  Header h = {path, keys, lines, 0};
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open MetaImage '%s': %s", path,
                g_strerror(e));
    return NULL;
  }
  g_autofree char *buf = g_malloc(TL_METAIMAGE_MAX_HEADER);
  gsize nb = fread(buf, 1, TL_METAIMAGE_MAX_HEADER, f);
  fclose(f);
  if (!parse_header(&h, buf, nb, error)) return NULL;

  const char *ot = get(&h, "objecttype");
  if (ot && g_ascii_strcasecmp(ot, "image") != 0)
    return fail(&h, "objecttype", ot, "Image", error), NULL;
  const char *nd_s = get(&h, "ndims");
  double nd_d;
  if (!numbers(&h, "ndims", 1, &nd_d, error)) return NULL;
  if (nd_d != 2 && nd_d != 3) return fail(&h, "ndims", nd_s, "2 or 3", error), NULL;
  guint nd = (guint)nd_d;
  double dims[3] = {1, 1, 1}, sp[3] = {1, 1, 1}, org[3] = {0, 0, 0};
  if (!numbers(&h, "dimsize", nd, dims, error)) return NULL;
  for (guint d = 0; d < nd; d++)
    if (dims[d] < 1 || dims[d] > TL_IMAGE_MAX_VOXELS || dims[d] != floor(dims[d]))
      return fail(&h, "dimsize", get(&h, "dimsize"), "positive integers", error), NULL;
  if (dims[0] * dims[1] * dims[2] > (double)TL_IMAGE_MAX_VOXELS)
    return fail(&h, "dimsize", get(&h, "dimsize"), "at most 2^28 voxels in all", error), NULL;
  const char *spk = get(&h, "elementspacing") ? "elementspacing"
                    : get(&h, "elementsize")  ? "elementsize" : NULL;
  if (spk) {
    if (!numbers(&h, spk, nd, sp, error)) return NULL;
    for (guint d = 0; d < nd; d++)
      if (!(sp[d] > 0)) return fail(&h, spk, get(&h, spk), "positive spacings", error), NULL;
  }
  const char *ok_ = get(&h, "offset") ? "offset" : get(&h, "origin") ? "origin"
                    : get(&h, "position") ? "position" : NULL;
  if (ok_ && !numbers(&h, ok_, nd, org, error)) return NULL;
  const char *tk = get(&h, "transformmatrix") ? "transformmatrix"
                   : get(&h, "rotation") ? "rotation" : get(&h, "orientation") ? "orientation"
                   : NULL;
  if (tk) {
    double m[9];
    if (!numbers(&h, tk, nd * nd, m, error)) return NULL;
    for (guint i = 0; i < nd; i++)
      for (guint j = 0; j < nd; j++)
        if (fabs(m[i * nd + j] - (i == j ? 1.0 : 0.0)) > 1e-6)
          return fail(&h, tk, get(&h, tk), "the identity (rotated or flipped axes are not read; "
                      "resample the image to axis-aligned first)", error), NULL;
  }
  double ch = 1;
  if (get(&h, "elementnumberofchannels")) {
    if (!numbers(&h, "elementnumberofchannels", 1, &ch, error)) return NULL;
    if (ch != 1)
      return fail(&h, "elementnumberofchannels", get(&h, "elementnumberofchannels"),
                  "1 (one value per voxel)", error), NULL;
  }
  const char *et = get(&h, "elementtype");
  TlInterfileSample fmt = {.scale = 1.0};
  gboolean found = FALSE;
  for (guint i = 0; et && i < G_N_ELEMENTS(types); i++)
    if (g_ascii_strcasecmp(et, types[i].name) == 0)
      fmt.number = types[i].number, fmt.bytes = types[i].bytes, found = TRUE;
  if (!found)
    return fail(&h, "elementtype", et, "MET_UCHAR, MET_CHAR, MET_USHORT, MET_SHORT, MET_UINT, "
                "MET_INT, MET_ULONG, MET_LONG, MET_FLOAT or MET_DOUBLE", error), NULL;
  gboolean msb = FALSE, binary = TRUE, compressed = FALSE;
  const char *bok = get(&h, "binarydatabyteordermsb") ? "binarydatabyteordermsb"
                                                       : "elementbyteordermsb";
  if (!boolean(&h, bok, FALSE, &msb, error) || !boolean(&h, "binarydata", TRUE, &binary, error) ||
      !boolean(&h, "compresseddata", FALSE, &compressed, error))
    return NULL;
  if (!binary) return fail(&h, "binarydata", get(&h, "binarydata"), "True (ASCII data is not "
                           "read)", error), NULL;
  fmt.big_endian = msb;

  TlImageGrid g;
  for (int d = 0; d < 3; d++) {
    g.dims[d] = (guint)dims[d];
    g.voxel_mm[d] = tl_float_from_double(sp[d]);
    g.origin_mm[d] = tl_float_from_double(org[d]);
  }
  if (!tl_image_grid_validate(&g, error)) {
    g_prefix_error(error, "MetaImage '%s': ", path);
    return NULL;
  }
  guint64 n = tl_image_grid_n_voxels(&g), raw_bytes = n * fmt.bytes;

  /* where the data are */
  const char *edf = get(&h, "elementdatafile");
  g_autofree char *data_path = NULL;
  guint64 start = 0;
  if (g_ascii_strcasecmp(edf, "local") == 0) {
    data_path = g_strdup(path);
    start = h.data_start;
  } else {
    if (!*edf || strchr(edf, '%') || g_ascii_strncasecmp(edf, "list", 4) == 0 ||
        strchr(edf, ' '))
      return fail(&h, "elementdatafile", edf, "LOCAL or one file name (lists and patterns of "
                  "slice files are not read)", error), NULL;
    data_path = tl_datafile_resolve(path, "ElementDataFile", edf, error);
    if (!data_path) return NULL;
    if (!tl_file_check_input(data_path, "MetaImage data file", error)) {
      g_prefix_error(error, "MetaImage '%s' (ElementDataFile = %s): ", path, edf);
      return NULL;
    }
  }
  GStatBuf st;
  if (g_stat(data_path, &st) != 0) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "MetaImage '%s': '%s': %s", path, data_path,
                g_strerror(e));
    return NULL;
  }
  guint64 size = (guint64)st.st_size;
  double hs = 0;
  if (get(&h, "headersize")) {
    if (!numbers(&h, "headersize", 1, &hs, error)) return NULL;
    if (hs != floor(hs) || hs < -1 || hs > (double)size)
      return fail(&h, "headersize", get(&h, "headersize"), "-1 (data at the end) or a byte count "
                  "within the data file", error), NULL;
    if (hs >= 0) start += (guint64)hs;
  }
  guint64 stored = raw_bytes;
  if (compressed) {
    double cs = -1;
    if (get(&h, "compresseddatasize") && !numbers(&h, "compresseddatasize", 1, &cs, error))
      return NULL;
    if (cs < 0) stored = start <= size ? size - start : 0;
    else if (cs != floor(cs) || cs > (double)size)
      return fail(&h, "compresseddatasize", get(&h, "compresseddatasize"),
                  "a byte count within the file", error), NULL;
    else stored = (guint64)cs;
  } else if (hs == -1 && size >= raw_bytes)
    start = size - raw_bytes;
  if (start > size || stored > size - start) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "MetaImage '%s': data file '%s' has %" G_GUINT64_FORMAT " bytes, the header asks "
                "for %" G_GUINT64_FORMAT " bytes from offset %" G_GUINT64_FORMAT " (DimSize %s, "
                "ElementType %s%s)", path, data_path, size, stored, start, get(&h, "dimsize"), et,
                compressed ? ", compressed" : "");
    return NULL;
  }
  /* exactly the header's bytes (HeaderSize -1 excepted: it means "the data are the file's
   * end"): a larger file means DimSize was misread (given twice, the smaller first) */
  if (hs != -1 && start + stored != size) {
    g_autofree char *layout = g_strdup_printf("%" G_GUINT64_FORMAT " bytes of DimSize %s, "
                                              "ElementType %s%s from offset %" G_GUINT64_FORMAT,
                                              stored, get(&h, "dimsize"), et,
                                              compressed ? ", compressed" : "", start);
    if (!tl_datafile_check_size(path, data_path, start + stored, layout, error)) return NULL;
  }
  /* deflate expands at most 1032:1 (zlib's technical notes): a header asking for more than
   * that from the stored bytes is refused before the buffer is allocated */
  if (compressed && raw_bytes > stored * 1032 + 64) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "MetaImage '%s': CompressedData of %" G_GUINT64_FORMAT " bytes cannot inflate to "
                "the %" G_GUINT64_FORMAT " bytes DimSize %s of %s needs (zlib expands at most "
                "1032:1)", path, stored, raw_bytes, get(&h, "dimsize"), et);
    return NULL;
  }
  g_autofree guint8 *raw = g_try_malloc(MAX(raw_bytes, 1));
  g_autofree guint8 *packed = compressed ? g_try_malloc(MAX(stored, 1)) : NULL;
  if (!raw || (compressed && !packed)) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "MetaImage '%s': no memory for %"
                G_GUINT64_FORMAT " bytes", path, raw_bytes);
    return NULL;
  }
  f = g_fopen(data_path, "rb");
  guint8 *dst = compressed ? packed : raw;
  if (!f || fseeko(f, (off_t)start, SEEK_SET) != 0 || fread(dst, 1, stored, f) != stored) {
    if (f) fclose(f);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "MetaImage '%s': cannot read %" G_GUINT64_FORMAT
                " bytes of '%s'", path, stored, data_path);
    return NULL;
  }
  fclose(f);
  if (compressed) {
    uLongf out_len = (uLongf)raw_bytes;
    int zr = uncompress(raw, &out_len, packed, (uLong)stored);
    if (zr != Z_OK || out_len != raw_bytes) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "MetaImage '%s': CompressedData: the zlib stream of %" G_GUINT64_FORMAT
                  " bytes does not inflate to %" G_GUINT64_FORMAT " bytes (zlib: %s)", path,
                  stored, raw_bytes, zr == Z_OK ? "wrong length" : zError(zr));
      return NULL;
    }
  }
  g_autoptr(TlImage) im = tl_image_new(&g);
  for (guint64 i = 0; i < n; i++) {
    double v = tl_interfile_sample_value(raw + i * fmt.bytes, &fmt);
    float fv = tl_float_from_double(v);
    if (!isfinite(fv)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "MetaImage '%s': voxel %" G_GUINT64_FORMAT
                  " is %g (expected a finite float)", path, i, v);
      return NULL;
    }
    im->data[i] = fv;
  }
  return g_steal_pointer(&im);
}

static gboolean write_floats(FILE *f, const float *v, guint64 n) {
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN) return fwrite(v, 4, n, f) == n;
  for (guint64 i = 0; i < n; i++) {
    guint32 u;
    memcpy(&u, &v[i], 4);
    u = GUINT32_TO_LE(u);
    if (fwrite(&u, 4, 1, f) != 1) return FALSE;
  }
  return TRUE;
}

/* The header of `im` (MET_FLOAT, little endian, uncompressed) naming `data_name`. */
static char *metaimage_header_text(gconstpointer data, const char *data_name) {
  const TlImageGrid *g = &((const TlImage *)data)->grid;
  char v[3][32], o[3][32];
  for (int d = 0; d < 3; d++) tl_format_float(v[d], g->voxel_mm[d]), tl_format_float(o[d], g->origin_mm[d]);
  return g_strdup_printf(
      "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
      "CompressedData = False\nTransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = %s %s %s\n"
      "CenterOfRotation = 0 0 0\nElementSpacing = %s %s %s\nDimSize = %u %u %u\n"
      "ElementType = MET_FLOAT\nElementDataFile = %s\n", o[0], o[1], o[2], v[0], v[1], v[2],
      g->dims[0], g->dims[1], g->dims[2], data_name);
}

gboolean tl_image_save_metaimage(const TlImage *im, const char *path, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  gboolean mha = tl_format_path_has_extension(path, ".mha");
  if (!mha && !tl_format_path_has_extension(path, ".mhd")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "'%s': a MetaImage is named *.mha (one file) or *.mhd (+ *.raw)", path);
    return FALSE;
  }
  guint64 n = tl_image_grid_n_voxels(&im->grid);
  g_autofree char *tmp = NULL;
  if (mha) {
    g_autofree char *text = metaimage_header_text(im, "LOCAL");
    FILE *f = tl_file_begin(path, &tmp, error);
    if (!f) return FALSE;
    if (fputs(text, f) < 0 || !write_floats(f, im->data, n)) {
      tl_file_abort(f, &tmp);
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write MetaImage '%s'", path);
      return FALSE;
    }
    return tl_file_commit(f, &tmp, path, error);
  }
  /* .mhd: X.raw, through X~1.raw: the header's rename is the commit (image/tl-file.h,
   * "Two-file outputs") */
  g_autofree char *named_now = tl_metaimage_data_path(path);
  g_autofree char *raw_path = tl_file_pair_next_data(path, ".raw", named_now);
  FILE *f = tl_file_begin(raw_path, &tmp, error);
  if (!f) return FALSE;
  if (!write_floats(f, im->data, n)) {
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write MetaImage data '%s'", raw_path);
    return FALSE;
  }
  if (!tl_file_commit(f, &tmp, raw_path, error)) return FALSE;
  return tl_file_pair_commit(path, ".raw", raw_path, metaimage_header_text, im, error);
}

/* "ObjectType = Image" or "NDims = " at the start, with an ElementType key in the head. */
static guint metaimage_probe(const char *path, const guint8 *head, gsize n) {
  g_autofree char *s = tl_interfile_squash(head, n);
  gboolean start = g_str_has_prefix(s, "objecttype=") || g_str_has_prefix(s, "ndims=") ||
                   g_str_has_prefix(s, "comment=");
  if (start && strstr(s, "elementtype=met_") && strstr(s, "dimsize=")) return TL_FORMAT_SURE;
  if (start) return TL_FORMAT_LIKELY;
  return tl_format_path_has_extension(path, ".mha .mhd") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer metaimage_load(const char *path, GError **error) {
  return tl_image_load_metaimage(path, error);
}

static gboolean metaimage_save(gconstpointer data, const char *path, GError **error) {
  return tl_image_save_metaimage(data, path, error);
}

static char **metaimage_companions(const char *path, gboolean writing) {
  if (writing)
    return tl_format_path_has_extension(path, ".mhd") ? tl_file_pair_data_paths(path, ".raw")
                                                      : NULL;
  char *data = tl_metaimage_data_path(path);
  if (!data) return NULL;
  char **v = g_new0(char *, 2);
  v[0] = data;
  return v;
}

const TlFormatClass tl_format_metaimage = {
    .name = "metaimage",
    .summary = "MetaImage (.mha one file, .mhd + .raw/.zraw; zlib-compressed data read)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".mha .mhd",
    .probe = metaimage_probe,
    .load = metaimage_load,
    .save = metaimage_save,
    .companions = metaimage_companions,
};
