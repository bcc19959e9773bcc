/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The projector registry and the checks every implementation relies on. */
#include "tl-projector.h"
#include "tl-sensitivity.h"
#include "core/tl_constants.glsl" /* the kernels' record sizes */
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const TlProjectorClass tl_siddon_class;
extern const TlProjectorClass tl_joseph_class;
extern const TlProjectorClass tl_tor_class;

static const TlProjectorClass *const classes[] = {&tl_siddon_class, &tl_joseph_class,
                                                  &tl_tor_class};

const TlProjectorClass *const *tl_projector_classes(void) {
  static const TlProjectorClass *list[G_N_ELEMENTS(classes) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS(classes); i++) list[i] = classes[i];
  return list;
}

const char *const *tl_projector_names(void) {
  static const char *names[G_N_ELEMENTS(classes) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS(classes); i++) names[i] = classes[i]->name;
  return names;
}

TlProjector *tl_projector_new(TlContext *ctx, const char *name, const TlImageGrid *grid,
                              GError **error) {
  return tl_projector_new_with(ctx, name, grid, NULL, error);
}

TlProjector *tl_projector_new_with(TlContext *ctx, const char *name, const TlImageGrid *grid,
                                   const TlProjectorParams *params, GError **error) {
  const TlProjectorClass *klass = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(classes); i++)
    if (name && strcmp(name, classes[i]->name) == 0) klass = classes[i];
  if (!klass) {
    g_autofree char *known = g_strjoinv(", ", (char **)tl_projector_names());
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown projector '%s' (known: %s)",
                name ? name : "(null)", known);
    return NULL;
  }
  for (int k = 0; k < 3; k++) {
    if (grid->dims[k] == 0 || !(grid->voxel_mm[k] > 0.0f) || !isfinite(grid->origin_mm[k])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "image grid %u x %u x %u, voxel %g x %g x %g mm: every dimension must be "
                  "at least 1 voxel and every voxel size positive",
                  grid->dims[0], grid->dims[1], grid->dims[2], grid->voxel_mm[0],
                  grid->voxel_mm[1], grid->voxel_mm[2]);
      return NULL;
    }
  }
  guint64 nvox = (guint64)grid->dims[0] * grid->dims[1] * grid->dims[2];
  if (nvox > G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "image grid of %" G_GUINT64_FORMAT " voxels: kernels index at most 2^32", nvox);
    return NULL;
  }
  TlProjector *p = g_new0(TlProjector, 1);
  p->klass = klass;
  p->ctx = ctx;
  p->grid = *grid;
  p->scatter = TL_SCATTER_AUTO;
  p->params = params ? *params : (TlProjectorParams){.tor_fwhm_mm = TL_TOR_FWHM_DEFAULT};
  if (klass->init && !klass->init(p, error)) {
    tl_projector_free(p);
    return NULL;
  }
  return p;
}

void tl_projector_free(TlProjector *p) {
  if (!p) return;
  if (p->klass->finalize) p->klass->finalize(p);
  g_free(p);
}

const char *tl_projector_name(const TlProjector *p) { return p->klass->name; }

char *tl_projector_key(const TlProjector *p) {
  return p->klass->key ? p->klass->key(p) : g_strdup(p->klass->name);
}
const TlImageGrid *tl_projector_grid(const TlProjector *p) { return &p->grid; }
void tl_projector_set_scatter(TlProjector *p, TlScatter scatter) { p->scatter = scatter; }
void tl_projector_set_em_method(TlProjector *p, TlEmMethod method) { p->em_method = method; }

static gboolean check_image(const TlProjector *p, const TlArray *image, const char *what,
                            GError **error) {
  guint64 n = (guint64)p->grid.dims[0] * p->grid.dims[1] * p->grid.dims[2];
  if (!image || tl_array_elem_size(image) != sizeof(float) || tl_array_length(image) != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: expected a float array of %" G_GUINT64_FORMAT " voxels (%u x %u x %u), "
                "got %" G_GUINT64_FORMAT " elements of %zu bytes",
                what, n, p->grid.dims[0], p->grid.dims[1], p->grid.dims[2],
                image ? tl_array_length(image) : 0, image ? tl_array_elem_size(image) : (gsize)0);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_tof_init(TlTof *tof, const TlScanner *s, double n_sigma, GError **error) {
  if (n_sigma <= 0) n_sigma = TL_TOF_N_SIGMA;
  if (!s || s->tof_bins == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF: scanner '%s' has no TOF bins (tof_bins = 0)", s ? s->name : "(none)");
    return FALSE;
  }
  if (!isfinite(n_sigma) || n_sigma > 10) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF: truncation at %g sigmas, expected a value in (0, 10]", n_sigma);
    return FALSE;
  }
  *tof = (TlTof){.sigma_mm = tl_scanner_tof_sigma_mm(s), .bin_mm = s->tof_bin_mm,
                 .n_sigma = (float)n_sigma};
  return TRUE;
}

static gboolean check_tof(const TlLors *l, GError **error) {
  const TlTof *t = l->tof;
  if (!t) return TRUE;
  if (l->kind != TL_LORS_EVENTS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF needs list-mode events: %s carry no TOF bins",
                l->kind == TL_LORS_BINS ? "binned counts" : "explicit end points");
    return FALSE;
  }
  if (!(t->sigma_mm > 0) || !isfinite(t->sigma_mm) || !(t->bin_mm > 0) ||
      !isfinite(t->bin_mm) || !(t->n_sigma > 0) || t->n_sigma > 10) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF kernel: sigma %g mm, bin %g mm, truncation %g sigmas; expected positive "
                "finite widths and a truncation in (0, 10]",
                t->sigma_mm, t->bin_mm, t->n_sigma);
    return FALSE;
  }
  return TRUE;
}

static gboolean check_lors(const TlLors *l, GError **error) {
  if (!check_tof(l, error)) return FALSE;
  gsize want = 4 * (l->kind == TL_LORS_END_POINTS ? TL_PET_END_POINT_WORDS : TL_PET_RECORD_WORDS);
  if (!l->records || tl_array_elem_size(l->records) != want) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "LOR records: expected elements of %zu bytes, got %zu", want,
                l->records ? tl_array_elem_size(l->records) : (gsize)0);
    return FALSE;
  }
  guint64 n = tl_array_length(l->records);
  if (l->first > n || l->count > n - l->first) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "LOR range [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ") is outside the %"
                G_GUINT64_FORMAT " records", l->first, l->first + l->count, n);
    return FALSE;
  }
  /* kernels index the record words with 32-bit integers */
  guint64 words = want / 4;
  if (l->first + l->count > G_MAXUINT32 / words) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "LOR range ends at record %" G_GUINT64_FORMAT ", beyond the %" G_GUINT64_FORMAT
                " a kernel indexes", l->first + l->count, (guint64)G_MAXUINT32 / words);
    return FALSE;
  }
  if (l->kind != TL_LORS_END_POINTS &&
      (!l->crystals || tl_array_elem_size(l->crystals) != 32)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "crystal-pair LORs need the scanner's crystal table (32-byte TlCrystal elements)");
    return FALSE;
  }
  if (l->atten && (tl_array_elem_size(l->atten) != sizeof(float) ||
                   tl_array_length(l->atten) < l->first + l->count)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "attenuation factors: expected at least %" G_GUINT64_FORMAT
                " floats (one per record), got %" G_GUINT64_FORMAT,
                l->first + l->count, tl_array_length(l->atten));
    return FALSE;
  }
  return TRUE;
}

static gboolean check_floats(const TlArray *a, guint64 n, const char *what, GError **error) {
  if (!a || tl_array_elem_size(a) != sizeof(float) || tl_array_length(a) < n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: expected at least %" G_GUINT64_FORMAT " floats, got %" G_GUINT64_FORMAT, what,
                n, a ? tl_array_length(a) : 0);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_projector_forward(TlProjector *p, TlStream *s, const TlLors *lors,
                              const TlArray *image, TlArray *out, GError **error) {
  if (!check_lors(lors, error) || !check_image(p, image, "forward projection image", error) ||
      !check_floats(out, lors->count, "forward projection output", error))
    return FALSE;
  return p->klass->forward(p, s, lors, image, out, error);
}

gboolean tl_projector_back(TlProjector *p, TlStream *s, const TlLors *lors,
                           const TlArray *weights, TlArray *image, GError **error) {
  if (!check_lors(lors, error) || !check_image(p, image, "back projection image", error) ||
      (weights && !check_floats(weights, lors->count, "back projection weights", error)))
    return FALSE;
  return p->klass->back(p, s, lors, weights, image, error);
}

const char *const *tl_projector_kernels(const TlProjector *p, TlProjectorPass pass,
                                        const TlLors *lors) {
  return p->klass->kernels ? p->klass->kernels(p, pass, lors) : NULL;
}

gboolean tl_projector_kernel_used(const TlProjector *p, TlProjectorPass pass, const TlLors *lors,
                                  const char *name) {
  const char *const *k = tl_projector_kernels(p, pass, lors);
  if (!k) return TRUE;
  if (g_strv_contains(k, name)) return TRUE;
  /* the plane path runs only while the one-kernel pass is the built-in one (and was not asked
   * for by name): an edited pet_em / pet_em_cas takes its place */
  return pass == TL_PROJECTOR_EM && p->em_method == TL_EM_AUTO &&
         g_strv_contains(k, "pet_back_slabs") &&
         (g_str_equal(name, "pet_em") || g_str_equal(name, "pet_em_cas"));
}

gboolean tl_projector_em(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                         TlArray *corr, GError **error) {
  if (!check_lors(lors, error) || !check_image(p, image, "EM image", error) ||
      !check_image(p, corr, "EM correction image", error))
    return FALSE;
  return p->klass->em(p, s, lors, image, corr, NULL, error);
}

guint64 tl_projector_loglik_partials(const TlProjector *p, const TlLors *lors) {
  /* every PET kernel runs with the context's default workgroup size (tl-projector-ray.c) */
  guint64 local = tl_context_default_local_size(p->ctx);
  return (lors->count + local - 1) / local;
}

gboolean tl_projector_em_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                                const TlArray *image, TlArray *corr, TlArray *partials,
                                GError **error) {
  if (!check_lors(lors, error) || !check_image(p, image, "EM image", error) ||
      !check_image(p, corr, "EM correction image", error) ||
      !check_floats(partials, tl_projector_loglik_partials(p, lors),
                    "EM log-likelihood partial sums", error))
    return FALSE;
  return p->klass->em(p, s, lors, image, corr, partials, error);
}

gboolean tl_projector_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                             const TlArray *image, double *sum, GError **error) {
  if (!check_lors(lors, error) || !check_image(p, image, "log-likelihood image", error))
    return FALSE;
  return p->klass->loglik(p, s, lors, image, sum, error);
}

gboolean tl_projector_sensitivity(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                  const TlArray *crystals, guint stride, guint offset,
                                  TlArray *image, GError **error) {
  return tl_projector_sensitivity_atten(p, s, scanner, crystals, stride, offset, NULL, image,
                                        error);
}

gboolean tl_projector_sensitivity_atten(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                        const TlArray *crystals, guint stride, guint offset,
                                        const TlArray *mu, TlArray *image, GError **error) {
  return tl_projector_sensitivity_norm(p, s, scanner, crystals, stride, offset, mu, NULL, image,
                                       error);
}

gboolean tl_projector_sensitivity_norm(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                       const TlArray *crystals, guint stride, guint offset,
                                       const TlArray *mu, const TlSensNorm *norm,
                                       TlArray *image, GError **error) {
  if (norm && (!norm->norm || !norm->table)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sensitivity: a normalisation needs its model and its device tables");
    return FALSE;
  }
  if (norm && scanner && !tl_norm_check_scanner(norm->norm, scanner, "sensitivity", error))
    return FALSE;
  if (!check_image(p, image, "sensitivity image", error) ||
      (mu && !check_image(p, mu, "attenuation map", error)))
    return FALSE;
  if (!scanner || scanner->n_crystals < 2 || !crystals ||
      tl_array_length(crystals) != scanner->n_crystals || tl_array_elem_size(crystals) != 32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sensitivity: the crystal table must hold the scanner's %u crystals (32 bytes each)",
                scanner ? scanner->n_crystals : 0);
    return FALSE;
  }
  if (stride == 0 || offset >= stride) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sensitivity: subset %u of %u does not exist", offset, stride);
    return FALSE;
  }
  if (tl_pair_count(scanner->n_crystals) > G_MAXUINT32 - stride) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sensitivity: %u crystals make %" G_GUINT64_FORMAT
                " pairs, more than the 2^32 the kernel numbers",
                scanner->n_crystals, tl_pair_count(scanner->n_crystals));
    return FALSE;
  }
  if (p->sens_method == TL_SENS_SYMMETRIC &&
      tl_projector_sensitivity_plan_norm(p, scanner, stride, mu != NULL,
                                         norm ? norm->norm : NULL, NULL) != TL_SENS_SYMMETRIC) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "sensitivity: the symmetric method was asked for, but it needs every pair "
                "(subset %u of %u), no attenuation (%s) and a scanner and grid with a common "
                "symmetry%s", offset, stride, mu ? "a mu-map is given" : "none given",
                norm ? " that the normalisation keeps" : "");
    return FALSE;
  }
  return p->klass->sensitivity(p, s, scanner, crystals, stride, offset, mu, norm, image, error);
}

void tl_projector_set_sensitivity_method(TlProjector *p, TlSensMethod method) {
  p->sens_method = method;
}

void tl_projector_set_sensitivity_precision(TlProjector *p, TlSensPrecision precision) {
  p->sens_precision = precision;
}

gboolean tl_projector_sensitivity_in_double(const TlProjector *p) {
  return p->klass->sensitivity_double && p->klass->sensitivity_double(p);
}

TlSensMethod tl_projector_sensitivity_plan(const TlProjector *p, const TlScanner *scanner,
                                           guint stride, gboolean attenuation, guint *order) {
  return tl_projector_sensitivity_plan_norm(p, scanner, stride, attenuation, NULL, order);
}

TlSensMethod tl_projector_sensitivity_plan_norm(const TlProjector *p, const TlScanner *scanner,
                                                guint stride, gboolean attenuation,
                                                const TlNorm *norm, guint *order) {
  if (order) *order = 1;
  if (p->sens_method == TL_SENS_FULL || stride != 1 || attenuation || !scanner)
    return TL_SENS_FULL;
  TlSensSymmetry sym;
  tl_sensitivity_symmetry_norm(scanner, &p->grid, tl_sensitivity_swaps(p), norm, &sym);
  guint n = sym.order;
  tl_sensitivity_symmetry_clear(&sym);
  if (n < 2) return TL_SENS_FULL;
  if (order) *order = n;
  return TL_SENS_SYMMETRIC;
}

/* The axis along which the line a -> b crosses the most voxels of g (x on ties). */
static guint dominant_axis(const float *a, const float *b, const TlImageGrid *g) {
  float d[3];
  for (int k = 0; k < 3; k++) d[k] = fabsf(b[k] - a[k]) / g->voxel_mm[k];
  return (d[0] >= d[1] && d[0] >= d[2]) ? 0 : (d[1] >= d[2] ? 1 : 2);
}

void tl_events_group_by_axis(TlEvent *ev, guint64 n, const TlScanner *s, const TlImageGrid *g) {
  guint8 *axis = g_new(guint8, n);
  guint64 count[3] = {0, 0, 0};
  for (guint64 i = 0; i < n; i++) {
    axis[i] = (guint8)dominant_axis(s->crystals[ev[i].a].centre, s->crystals[ev[i].b].centre, g);
    count[axis[i]]++;
  }
  guint64 at[3] = {0, count[0], count[0] + count[1]};
  TlEvent *out = g_new(TlEvent, n);
  for (guint64 i = 0; i < n; i++) out[at[axis[i]]++] = ev[i];
  memcpy(ev, out, n * sizeof(TlEvent));
  g_free(out);
  g_free(axis);
}

typedef struct {
  guint64 key;
  guint64 at; /* position before: ties keep their order */
  TlEvent e;
} KeyedEvent;

static int keyed_cmp(const void *x, const void *y) {
  const KeyedEvent *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->at < b->at ? -1 : a->at > b->at;
}

void tl_events_order_by_line(TlEvent *ev, guint64 n, const TlScanner *s, const TlImageGrid *g) {
  if (n == 0) return;
  /* the scanner's extent scales the offset and axial bins */
  double r = 1.0, z0 = G_MAXDOUBLE, z1 = -G_MAXDOUBLE;
  for (guint c = 0; c < s->n_crystals; c++) {
    const float *p = s->crystals[c].centre;
    r = MAX(r, hypot(p[0], p[1]));
    z0 = MIN(z0, p[2]);
    z1 = MAX(z1, p[2]);
  }
  double zspan = MAX(z1 - z0, 1.0);
  KeyedEvent *k = g_new(KeyedEvent, n);
  for (guint64 i = 0; i < n; i++) {
    const float *a = s->crystals[ev[i].a].centre, *b = s->crystals[ev[i].b].centre;
    guint64 axis = dominant_axis(a, b, g); /* the groups of tl_events_group_by_axis */
    double d[2] = {(double)b[0] - a[0], (double)b[1] - a[1]};
    /* the line's direction in [0, pi) and signed offset s = a x d / |d| for that direction */
    if (d[1] < 0 || (d[1] == 0 && d[0] < 0)) d[0] = -d[0], d[1] = -d[1];
    double phi = atan2(d[1], d[0]), rxy = MAX(hypot(d[0], d[1]), 1e-9);
    double off = (a[0] * d[1] - a[1] * d[0]) / rxy;
    double zc = 0.5 * ((double)a[2] + b[2]);
    /* 512 directions (0.35 degrees), the offset in 2^-16 of the diameter, then 4096 axial
     * steps: bench/pet measured (direction, offset, axial) a little ahead of (direction,
     * axial, offset) */
    guint64 kp = (guint64)CLAMP(phi / G_PI * 512.0, 0.0, 511.0);
    guint64 ks = (guint64)CLAMP((off + r) / (2.0 * r) * 65535.0, 0.0, 65535.0);
    guint64 kz = (guint64)CLAMP((zc - z0) / zspan * 4095.0, 0.0, 4095.0);
    k[i] = (KeyedEvent){axis << 40 | kp << 28 | ks << 12 | kz, i, ev[i]};
  }
  qsort(k, n, sizeof *k, keyed_cmp);
  for (guint64 i = 0; i < n; i++) ev[i] = k[i].e;
  g_free(k);
}
