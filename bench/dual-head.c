/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/dual-head: Chou et al. 2012's case at a reduced size. A micro Derenzo phantom (rods 2.4 ...
 * 0.75 mm, axis across the gap) between two planar heads 60 mm apart, scanned with a
 * Monte-Carlo written here that models the crystals the way the system response matrix does
 * (photons absorbed at an exponentially distributed depth in a LYSO slab, so crystal
 * penetration and depth-of-interaction blurring are in the data), binned, reconstructed by
 * OSEM with the precomputed matrix (pet-srm) and with the ray tracer (pet-binned, Siddon),
 * from the same counts. Prints the peak-to-valley ratio across each rod group for both, the
 * seconds per subset / iteration of forward and back projection for both, the matrix's memory
 * against the full matrix; writes images and profiles (PNG + CSV) to the folder given by
 * --out (docs/srm/ in the repository).
 *
 *   ./build/bench/dual-head [--heads 20] [--planes 15] [--events 4e6] [--iterations 6]
 *                           [--subsets 8] [--recon 0|1] [--out DIR]
 * (--recon 0: the timings only). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include "image/tl-phantom.h"
#include "pet/tl-pet-operator.h"
#include "pet/srm/tl-srm-operator.h"
#include "recon/tl-csr-operator.h"
#include "recon/tl-solver.h"
#include "tomolab-compute.h"

static double now(void) { return g_get_monotonic_time() * 1e-6; }

G_NORETURN static void die(GError *error) {
  fprintf(stderr, "dual-head: %s\n", error ? error->message : "failed");
  exit(1);
}

/* ---- Monte-Carlo with crystal penetration (independent of tl-srm.c's integral) ---- */

typedef struct {
  guint nu, nv;
  double pitch, hx, depth, mu;
} Heads;

/* xorshift64* (g_rand's Mersenne Twister costs more than the rest of a decay here) */
typedef struct {
  guint64 s;
} Rng;
static double rng_u(Rng *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return ((r->s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

/* Crystal hit by a photon from p along unit e, or -1 (no interaction in the head). */
static gint photon(const Heads *h, Rng *r, const double p[3], const double e[3]) {
  if (e[0] == 0) return -1;
  int head = e[0] > 0;
  double x0 = head ? h->hx : -h->hx, t0 = (x0 - p[0]) / e[0];
  double sec = 1.0 / fabs(e[0]);
  double s = -log(1.0 - rng_u(r)) / h->mu; /* path length to the interaction */
  if (s > h->depth * sec) return -1;
  double t = t0 + s, y = p[1] + t * e[1], z = p[2] + t * e[2];
  double fy = y / h->pitch + 0.5 * h->nu, fz = z / h->pitch + 0.5 * h->nv;
  if (fy < 0 || fz < 0 || fy >= h->nu || fz >= h->nv) return -1;
  return (gint)(head * h->nu * h->nv + (guint)fz * h->nu + (guint)fy);
}

static GArray *simulate(const Heads *h, const TlImage *act, double events, guint64 seed) {
  const TlImageGrid *g = &act->grid;
  guint64 nv = tl_image_grid_n_voxels(g), n = 0;
  double *cdf = g_new(double, nv + 1);
  guint64 *vox = g_new(guint64, nv);
  cdf[0] = 0;
  for (guint64 i = 0; i < nv; i++)
    if (act->data[i] > 0) {
      cdf[n + 1] = cdf[n] + act->data[i];
      vox[n++] = i;
    }
  guint per = h->nu * h->nv;
  float *counts = g_new0(float, (guint64)per * per);
  Rng rs = {seed * 0x9E3779B97F4A7C15ull + 1}, *r = &rs;
  guint64 got = 0, want = (guint64)events;
  while (got < want) {
    double u = rng_u(r) * cdf[n];
    guint64 lo = 0, hi = n;
    while (hi - lo > 1) {
      guint64 mid = (lo + hi) / 2;
      if (cdf[mid] <= u) lo = mid;
      else hi = mid;
    }
    double c[3], p[3];
    guint64 v = vox[lo];
    tl_image_grid_voxel_centre(g, v % g->dims[0], v / g->dims[0] % g->dims[1],
                               v / ((guint64)g->dims[0] * g->dims[1]), c);
    for (int k = 0; k < 3; k++) p[k] = c[k] + (rng_u(r) - 0.5) * g->voxel_mm[k];
    double cz = 2 * rng_u(r) - 1, ph = 2 * G_PI * rng_u(r), st = sqrt(1 - cz * cz);
    /* direction with x as the polar axis: most decays face the heads */
    double e[3] = {cz, st * cos(ph), st * sin(ph)}, ne[3] = {-e[0], -e[1], -e[2]};
    gint a = photon(h, r, p, e), b = photon(h, r, p, ne);
    if (a < 0 || b < 0) continue;
    guint lo_id = (guint)MIN(a, b), hi_id = (guint)MAX(a, b);
    counts[(guint64)lo_id * per + hi_id - per] += 1.0f;
    got++;
  }
  g_free(cdf);
  g_free(vox);
  GArray *bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++) {
      float v = counts[(guint64)a * per + b - per];
      if (v > 0) {
        TlBin bin = {a, b, v};
        g_array_append_val(bins, bin);
      }
    }
  g_free(counts);
  return bins;
}

/* ---- PNG (8-bit gray or RGB) with zlib ---- */

static void put32(GByteArray *b, guint32 v) {
  guint8 x[4] = {v >> 24, v >> 16, v >> 8, v};
  g_byte_array_append(b, x, 4);
}

static void chunk(GByteArray *out, const char *type, const guint8 *data, guint32 len) {
  put32(out, len);
  GByteArray *c = g_byte_array_new();
  g_byte_array_append(c, (const guint8 *)type, 4);
  if (len) g_byte_array_append(c, data, len);
  g_byte_array_append(out, c->data, c->len);
  put32(out, (guint32)crc32(0, c->data, c->len));
  g_byte_array_unref(c);
}

static void write_png(const char *path, guint w, guint h, guint ch, const guint8 *pix) {
  GByteArray *raw = g_byte_array_new(), *out = g_byte_array_new();
  for (guint y = 0; y < h; y++) {
    guint8 f = 0;
    g_byte_array_append(raw, &f, 1);
    g_byte_array_append(raw, pix + (gsize)y * w * ch, w * ch);
  }
  uLongf zl = compressBound(raw->len);
  guint8 *z = g_malloc(zl);
  compress(z, &zl, raw->data, raw->len);
  static const guint8 sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  g_byte_array_append(out, sig, 8);
  guint8 ihdr[13] = {w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16, h >> 8, h, 8,
                     ch == 3 ? 2 : 0, 0, 0, 0};
  chunk(out, "IHDR", ihdr, 13);
  chunk(out, "IDAT", z, (guint32)zl);
  chunk(out, "IEND", NULL, 0);
  GError *error = NULL;
  if (!g_file_set_contents(path, (const char *)out->data, out->len, &error)) die(error);
  g_free(z);
  g_byte_array_unref(raw);
  g_byte_array_unref(out);
}

/* ---- the Derenzo rod groups and their profiles ---- */

static const float diam[6] = {2.4f, 2.0f, 1.7f, 1.35f, 1.0f, 0.75f};

/* The outermost full row of group g (as tl-phantom.c's add_derenzo places rods: rows at
 * r0 + k 2d sqrt(3)/2 with k + 1 rods 2d apart, inside r_rods = 20 mm): its centre and
 * direction in the (y, z) plane and its rod count. */
static guint group_row(int g, double c[2], double t[2]) {
  double d = diam[g], p = 2 * d, r0 = 2 * d, th = G_PI / 2 + g * G_PI / 3;
  int kmax = -1;
  for (int k = 0;; k++) {
    double rk = r0 + k * p * sqrt(3.0) / 2;
    if (hypot(rk, k * p / 2) + d / 2 > 20.0) break;
    kmax = k;
  }
  double rk = r0 + kmax * p * sqrt(3.0) / 2;
  c[0] = rk * cos(th);
  c[1] = rk * sin(th);
  t[0] = -sin(th);
  t[1] = cos(th);
  return (guint)kmax + 1;
}

/* Mean over the planes within 8 mm of the centre, bilinear in (y, z). */
static double sample(const TlImage *im, double y, double z) {
  const TlImageGrid *g = &im->grid;
  double fy = (y - g->origin_mm[1]) / g->voxel_mm[1], fz = (z - g->origin_mm[2]) / g->voxel_mm[2];
  int iy = (int)floor(fy), iz = (int)floor(fz);
  if (iy < 0 || iz < 0 || iy + 1 >= (int)g->dims[1] || iz + 1 >= (int)g->dims[2]) return 0;
  double wy = fy - iy, wz = fz - iz, sum = 0;
  guint n = 0;
  for (guint x = 0; x < g->dims[0]; x++) {
    double xc = g->origin_mm[0] + x * g->voxel_mm[0];
    if (fabs(xc) > 8.0) continue;
    const float *d = im->data + x;
    guint sx = g->dims[0], sy = g->dims[0] * g->dims[1];
    sum += (1 - wy) * (1 - wz) * d[iy * sx + iz * sy] + wy * (1 - wz) * d[(iy + 1) * sx + iz * sy] +
           (1 - wy) * wz * d[iy * sx + (iz + 1) * sy] + wy * wz * d[(iy + 1) * sx + (iz + 1) * sy];
    n++;
  }
  return n ? sum / n : 0;
}

/* Peak-to-valley ratio along the outer row of group g: mean at the rod centres over mean
 * at the midpoints between neighbours. The profile (0.05 mm steps, one rod pitch beyond
 * the end rods) goes to `csv` when given. */
static double peak_valley(const TlImage *im, int g, FILE *csv, const char *label) {
  double c[2], t[2];
  guint n = group_row(g, c, t);
  double p = 2 * diam[g], half = 0.5 * (n - 1) * p, peaks = 0, valleys = 0;
  for (guint i = 0; i < n; i++) {
    double s = -half + i * p;
    peaks += sample(im, c[0] + s * t[0], c[1] + s * t[1]);
    if (i + 1 < n) valleys += sample(im, c[0] + (s + 0.5 * p) * t[0], c[1] + (s + 0.5 * p) * t[1]);
  }
  if (csv)
    for (double s = -half - p; s <= half + p + 1e-9; s += 0.05)
      fprintf(csv, "%s,%d,%.3f,%.6g\n", label, g, s, sample(im, c[0] + s * t[0], c[1] + s * t[1]));
  return n > 1 && valleys > 0 ? (peaks / n) / (valleys / (n - 1)) : 0;
}

/* A y-z image (mean over |x| <= 8 mm), scaled to its maximum, `scale` pixels per voxel. */
static void image_png(const char *path, const TlImage *im, guint scale) {
  const TlImageGrid *g = &im->grid;
  guint w = g->dims[1] * scale, h = g->dims[2] * scale;
  g_autofree double *m = g_new0(double, g->dims[1] * g->dims[2]);
  double mx = 0;
  for (guint z = 0; z < g->dims[2]; z++)
    for (guint y = 0; y < g->dims[1]; y++) {
      double s = 0;
      guint n = 0;
      for (guint x = 0; x < g->dims[0]; x++)
        if (fabs(g->origin_mm[0] + x * g->voxel_mm[0]) <= 8.0) {
          s += im->data[x + g->dims[0] * (y + (guint64)g->dims[1] * z)];
          n++;
        }
      m[z * g->dims[1] + y] = n ? s / n : 0;
      mx = MAX(mx, m[z * g->dims[1] + y]);
    }
  g_autofree guint8 *pix = g_new(guint8, (gsize)w * h);
  for (guint r = 0; r < h; r++)
    for (guint q = 0; q < w; q++) {
      guint z = g->dims[2] - 1 - r / scale, y = q / scale; /* z up */
      pix[(gsize)r * w + q] = (guint8)CLAMP(255.0 * m[z * g->dims[1] + y] / (mx > 0 ? mx : 1), 0, 255);
    }
  write_png(path, w, h, 1, pix);
}

/* Profiles of the given images along group g's outer row, as lines on a white canvas. */
static void profile_png(const char *path, const TlImage *const *ims, const guint8 (*rgb)[3],
                        guint n_ims, int g) {
  enum { W = 480, H = 200 };
  g_autofree guint8 *pix = g_new(guint8, W * H * 3);
  memset(pix, 255, W * H * 3);
  double c[2], t[2];
  guint n = group_row(g, c, t);
  double p = 2 * diam[g], half = 0.5 * (n - 1) * p, s0 = -half - p, s1 = half + p;
  for (guint k = 0; k < n_ims; k++) {
    double mx = 0;
    for (guint q = 0; q < W; q++) {
      double s = s0 + (s1 - s0) * q / (W - 1);
      mx = MAX(mx, sample(ims[k], c[0] + s * t[0], c[1] + s * t[1]));
    }
    int prev = -1;
    for (guint q = 0; q < W; q++) {
      double s = s0 + (s1 - s0) * q / (W - 1);
      double v = sample(ims[k], c[0] + s * t[0], c[1] + s * t[1]) / (mx > 0 ? mx : 1);
      int row = (int)((H - 10) * (1 - v)) + 5;
      int a = prev < 0 ? row : prev, lo = MIN(a, row), hi = MAX(a, row);
      for (int r = lo; r <= hi; r++)
        for (int d = 0; d < 3; d++) pix[((gsize)r * W + q) * 3 + d] = rgb[k][d];
      prev = row;
    }
  }
  write_png(path, W, H, 3, pix);
}

/* ---- timings ---- */

typedef struct {
  double fwd, back; /* seconds per subset (mean over the subsets) */
} Timing;

static Timing time_op(TlContext *ctx, TlOperator *op) {
  GError *error = NULL;
  guint S = tl_operator_n_subsets(op);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, tl_operator_n_voxels(op), &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, tl_operator_n_data(op), &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  if (!x || !y || !st) die(error);
  g_autofree float *ones = g_new(float, MAX(tl_operator_n_voxels(op), tl_operator_n_data(op)));
  for (guint64 i = 0; i < MAX(tl_operator_n_voxels(op), tl_operator_n_data(op)); i++) ones[i] = 1;
  if (!tl_array_upload(x, ones, &error) || !tl_array_upload(y, ones, &error)) die(error);
  Timing t = {0, 0};
  /* one untimed pass first: lavapipe compiles each pipeline at its first dispatch */
  {
    g_autoptr(TlArray) v = tl_array_new_view(y, 0, tl_operator_subset_length(op, 0), &error);
    if (!v || !tl_operator_forward(op, st, 0, x, v, &error) ||
        !tl_operator_adjoint(op, st, 0, v, x, &error) || !tl_stream_finish(st, &error))
      die(error);
  }
  for (guint s = 0; s < S; s++) {
    g_autoptr(TlArray) v = tl_array_new_view(y, tl_operator_subset_first(op, s),
                                             tl_operator_subset_length(op, s), &error);
    double a = now();
    if (!tl_operator_forward(op, st, s, x, v, &error) || !tl_stream_finish(st, &error)) die(error);
    double b = now();
    if (!tl_operator_adjoint(op, st, s, v, x, &error) || !tl_stream_finish(st, &error)) die(error);
    t.fwd += b - a;
    t.back += now() - b;
  }
  t.fwd /= S;
  t.back /= S;
  return t;
}

/* The rows of subset `k` of the matrix operator expanded through the symmetries into an
 * explicit CSR matrix (the same arithmetic as the kernels; every element of a LOR lands on a
 * distinct voxel, columns sorted per row): the gather alternative, timed against the
 * symmetric store. */
typedef struct {
  guint32 v;
  float h;
} Nz;

static gint nz_cmp(gconstpointer a, gconstpointer b) {
  guint32 x = ((const Nz *)a)->v, y = ((const Nz *)b)->v;
  return x < y ? -1 : x > y;
}

static TlOperator *expand_subset(TlContext *ctx, const TlSrm *m, TlOperator *op, guint k,
                                 guint64 *nnz_out) {
  TlSrmTables t;
  tl_srm_tables(m, &t);
  guint64 f = tl_operator_subset_first(op, k), n = tl_operator_subset_length(op, k);
  GArray *col = g_array_new(FALSE, FALSE, sizeof(guint32)), *val = g_array_new(FALSE, FALSE, sizeof(float));
  GArray *rowv = g_array_new(FALSE, FALSE, sizeof(Nz));
  guint64 *row_ptr = g_new(guint64, n + 1);
  guint per = t.nu * t.nv;
  row_ptr[0] = 0;
  for (guint64 i = 0; i < n; i++) {
    guint a, b;
    tl_srm_operator_pair(op, f + i, &a, &b);
    gint ua = (gint)(a % per % t.nu), va = (gint)(a % per / t.nu);
    gint du = (gint)((b - per) % t.nu) - ua, dv = (gint)((b - per) / t.nu) - va;
    guint flags, c = tl_srm_class(m, du, dv, &flags);
    g_array_set_size(rowv, 0);
    for (guint32 e = t.class_ptr[c]; e < t.class_ptr[c + 1]; e++) {
      guint32 key = t.key[e];
      gint ix = (gint)(key & 1023u), ms = (gint)((key >> 10) & 2047u) - 1024, ns = (gint)(key >> 21) - 1024;
      gint my = (flags & 1u) ? ns : ms, mz = (flags & 1u) ? ms : ns;
      if (flags & 2u) my = -my;
      if (flags & 4u) mz = -mz;
      for (int mirror = 0; mirror < 2; mirror++) {
        gint x = ix, yy = my, zz = mz;
        if (mirror) {
          if (!t.xsym || ix == (gint)t.nx - 1 - ix) break;
          x = (gint)t.nx - 1 - ix;
          yy = 2 * du * (gint)t.D - my;
          zz = 2 * dv * (gint)t.D - mz;
        }
        gint iy = (yy + t.ey) / 2 + ua * (gint)t.D, iz = (zz + t.ez) / 2 + va * (gint)t.D;
        if (iy < 0 || iz < 0 || iy >= (gint)t.ny || iz >= (gint)t.nz) continue;
        Nz z = {(guint32)(x + t.nx * (iy + t.ny * iz)), t.val[e]};
        g_array_append_val(rowv, z);
      }
    }
    g_array_sort(rowv, nz_cmp);
    for (guint j = 0; j < rowv->len; j++) {
      Nz z = g_array_index(rowv, Nz, j);
      g_array_append_val(col, z.v);
      g_array_append_val(val, z.h);
    }
    row_ptr[i + 1] = col->len;
  }
  g_array_free(rowv, TRUE);
  GError *error = NULL;
  TlOperator *csr = tl_csr_operator_new(ctx, tl_operator_grid(op), n, row_ptr,
                                        (guint32 *)col->data, (float *)val->data, 1, NULL, &error);
  if (!csr) die(error);
  *nnz_out = col->len;
  g_array_free(col, TRUE);
  g_array_free(val, TRUE);
  g_free(row_ptr);
  return csr;
}

static TlImage *reconstruct(TlContext *ctx, TlOperator *op, guint iterations, double *secs) {
  GError *error = NULL;
  TlSolverOptions o;
  tl_solver_options_init(&o);
  o.iterations = iterations;
  o.objective = TL_OBJECTIVE_NEVER;
  TlProblem pb = {.op = op};
  double a = now();
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "osem", &pb, &o, &error);
  if (!sv || !tl_solver_run(sv, &error)) die(error);
  TlImage *im = tl_solver_image(sv, &error);
  if (!im) die(error);
  *secs = now() - a;
  return im;
}

int main(int argc, char **argv) {
  guint heads = 20, planes = 15, iterations = 6, subsets = 8, recon = 1;
  double events = 4e6;
  const char *out = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--heads")) heads = (guint)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--planes")) planes = (guint)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--events")) events = g_ascii_strtod(argv[i + 1], NULL);
    else if (!strcmp(argv[i], "--iterations")) iterations = (guint)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--subsets")) subsets = (guint)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!strcmp(argv[i], "--recon")) recon = (guint)atoi(argv[i + 1]);
    else {
      fprintf(stderr, "dual-head: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  GError *error = NULL;
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) die(error);
  /* Chou et al. 2012's heads cut to heads x heads crystals: pitch 2.4 mm, 20 mm deep, 60 mm apart
   * */
  TlScannerLayout l = {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {heads, heads},
                       .head_pitch_mm = {2.4, 2.4}, .head_distance_mm = 60.0};
  g_autoptr(TlScanner) s = tl_scanner_new_from_layout("dual-head-reduced", &l, NULL, &error);
  if (!s) die(error);
  /* D = 4 (0.6 mm in y and z, the seed's); `planes` planes across 56 mm of the 60 mm gap */
  TlImageGrid g = tl_image_grid_centred(planes, heads * 4, heads * 4, 56.0f / planes, 0.6f, 0.6f);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  po.axis = 0; /* rods across the gap, as in the seed */
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("derenzo", &po, &g, &error);
  TlImage *truth = NULL;
  if (!ph || !tl_phantom_rasterise(ph, &g, 4, &truth, NULL, &error)) die(error);
  Heads hd = {heads, heads, 2.4, 30.0, 20.0, TL_SRM_LYSO_MU};
  double a = now();
  g_autoptr(GArray) bins = simulate(&hd, truth, events, 1);
  printf("scanner: 2 heads of %u x %u crystals (2.4 mm, 20 mm LYSO, 60 mm apart); grid %u x %u"
         " x %u of %.2f x 0.6 x 0.6 mm\n", heads, heads, g.dims[0], g.dims[1], g.dims[2],
         g.voxel_mm[0]);
  printf("data: %.3g events (crystal penetration, no object attenuation or scatter), %u bins,"
         " simulated in %.1f s\n", events, bins->len, now() - a);

  TlSrmParams prm;
  tl_srm_params_init(&prm);
  gboolean cached;
  a = now();
  g_autoptr(TlSrm) m = tl_srm_cached(s, &g, &prm, &cached, &error);
  if (!m) die(error);
  double build = now() - a;
  TlSrmSizes sz;
  tl_srm_sizes(m, TRUE, &sz);
  printf("matrix: %s in %.1f s; %u classes, %" G_GUINT64_FORMAT " stored elements, %.2f MiB"
         " (key + value per element)\n", cached ? "loaded from the cache" : "built", build,
         sz.n_classes, sz.stored, sz.stored_bytes / 1048576.0);
  printf("full matrix: %" G_GUINT64_FORMAT " LORs x %" G_GUINT64_FORMAT " voxels, %"
         G_GUINT64_FORMAT " nonzeros (%.1f MiB as CSR with 32-bit columns): %.0fx the stored\n",
         sz.n_lors, sz.n_voxels, sz.full_nnz, sz.full_nnz * 8.0 / 1048576.0,
         (double)sz.full_nnz / (double)MAX(sz.stored, 1));

  g_autoptr(TlOperator) op_srm = tl_srm_operator_new(ctx, m, s, (TlBin *)bins->data, bins->len,
                                                     subsets, &error);
  if (!op_srm) die(error);
  TlPetOperatorOptions oo;
  tl_pet_operator_options_init(&oo);
  oo.subsets = subsets;
  oo.use_cache = FALSE;
  g_autoptr(TlOperator) op_ray = tl_pet_operator_new_binned(ctx, s, (TlBin *)bins->data,
                                                            bins->len, &g, &oo, &error);
  if (!op_ray) die(error);

  Timing ts = time_op(ctx, op_srm), tr = time_op(ctx, op_ray);
  printf("\n%-22s %12s %12s %12s %12s\n", "seconds", "fwd/subset", "fwd/iter", "back/subset",
         "back/iter");
  printf("%-22s %12.3f %12.3f %12.3f %12.3f\n", "matrix (pet-srm)", ts.fwd, ts.fwd * subsets,
         ts.back, ts.back * subsets);
  printf("%-22s %12.3f %12.3f %12.3f %12.3f\n", "ray (pet-binned siddon)", tr.fwd,
         tr.fwd * subsets, tr.back, tr.back * subsets);
  {
    /* the back projection's scatter: float atomics (above) against a compare-and-swap loop */
    g_setenv("TOMOLAB_SRM_SCATTER", "cas", TRUE);
    g_autoptr(TlOperator) op_cas = tl_srm_operator_new(ctx, m, s, (TlBin *)bins->data,
                                                       bins->len, subsets, &error);
    g_unsetenv("TOMOLAB_SRM_SCATTER");
    if (!op_cas) die(error);
    Timing tc = time_op(ctx, op_cas);
    printf("%-22s %12s %12s %12.3f %12.3f\n", "matrix, CAS scatter", "", "", tc.back,
           tc.back * subsets);
  }
  {
    /* gather alternative: subset 0 expanded into an explicit CSR / CSC (csr operator) */
    guint64 nnz = 0;
    double a0 = now();
    g_autoptr(TlOperator) op_csr = expand_subset(ctx, m, op_srm, 0, &nnz);
    double t_exp = now() - a0;
    Timing tx = time_op(ctx, op_csr);
    printf("%-22s %12.3f %12s %12.3f %12s\n", "subset 0 expanded, CSR", tx.fwd, "", tx.back, "");
    printf("(expanded subset 0: %" G_GUINT64_FORMAT " nonzeros, %.0f MiB on the device as CSR +"
           " CSC, expanded in %.1f s; gather forward and gather back projection)\n", nnz,
           (2.0 * nnz * 8 + 4.0 * (tl_operator_subset_length(op_srm, 0) + tl_operator_n_voxels(op_srm))) / 1048576.0, t_exp);
  }
  printf("(%u subsets; the matrix operator's data are all %" G_GUINT64_FORMAT " pairs, the "
         "ray tracer's the %u nonzero bins)\n", subsets, tl_operator_n_data(op_srm), bins->len);

  fflush(stdout);
  if (!recon) {
    tl_image_free(truth);
    return 0;
  }
  double ss, sr;
  g_autoptr(TlImage) x_srm = reconstruct(ctx, op_srm, iterations, &ss);
  g_autoptr(TlImage) x_ray = reconstruct(ctx, op_ray, iterations, &sr);
  printf("\nOSEM %u iterations x %u subsets: matrix %.1f s, ray %.1f s\n", iterations, subsets,
         ss, sr);
  printf("\n%-8s %8s %8s %8s\n", "rods mm", "truth", "matrix", "ray");
  FILE *csv = NULL;
  g_autofree char *csv_path = out ? g_build_filename(out, "profiles.csv", NULL) : NULL;
  if (out) {
    g_mkdir_with_parents(out, 0755);
    csv = fopen(csv_path, "w");
    if (csv) fprintf(csv, "image,group,position_mm,value\n");
  }
  for (int k = 0; k < 6; k++) {
    double pt = peak_valley(truth, k, csv, "truth"), pm = peak_valley(x_srm, k, csv, "matrix"),
           pr = peak_valley(x_ray, k, csv, "ray");
    if (pt > 0) printf("%-8.2f %8.2f %8.2f %8.2f\n", diam[k], pt, pm, pr);
    else printf("%-8.2f %8s %8.2f %8.2f\n", diam[k], "inf", pm, pr); /* cold valleys */
  }
  if (csv) fclose(csv);
  if (out) {
    const TlImage *ims[3] = {truth, x_srm, x_ray};
    static const guint8 rgb[3][3] = {{160, 160, 160}, {200, 30, 30}, {30, 60, 200}};
    const char *names[3] = {"truth.png", "matrix.png", "ray.png"};
    for (int k = 0; k < 3; k++) {
      g_autofree char *p = g_build_filename(out, names[k], NULL);
      image_png(p, ims[k], 4);
    }
    for (int k = 0; k < 6; k++) {
      g_autofree char *name = g_strdup_printf("profile-%d.png", k);
      g_autofree char *p = g_build_filename(out, name, NULL);
      profile_png(p, ims, rgb, 3, k);
    }
    printf("images and profiles in %s\n", out);
  }
  tl_image_free(truth);
  return 0;
}
