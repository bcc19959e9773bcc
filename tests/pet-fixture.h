/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Small PET geometries built by hand for the projector and reconstruction tests. */
#pragma once
#include "tl-test-common.h"
#include "pet/scanner/tl-scanner.h"
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/simulate/tl-simulate.h"

/* A grid of dims voxels of size vox centred on the origin (corners on exact binary values
 * when n * vox is). */
TlImageGrid fx_grid(guint nx, guint ny, guint nz, float vx, float vy, float vz);
guint64 fx_voxels(const TlImageGrid *g);

/* Rings of a regular polygon: `sides` sides of `per_side` crystals `pitch` mm apart, inner
 * faces at `radius` mm (apothem); rings `ring_pitch` mm apart centred on z = 0. Groups are
 * sides, ids ring * crystals_per_ring + i. Free with fx_scanner_free. */
TlScanner *fx_ring_scanner(guint rings, guint sides, guint per_side, float pitch, float radius,
                           float ring_pitch, guint max_ring_difference);
void fx_scanner_free(TlScanner *s);
gboolean fx_pair_allowed(const TlScanner *s, guint a, guint b);
/* The crystal table on the device (32 bytes per crystal). */
TlArray *fx_upload_crystals(TlContext *ctx, const TlScanner *s);
/* A device array holding `bytes` from src. */
TlArray *fx_upload(TlContext *ctx, const void *src, guint64 n, gsize elem);
float *fx_download(const TlArray *a);


/* A 1x1x1 grid of 1 um: a point source at p. */
TlImage *fx_point_source(double x, double y, double z);
/* A cylinder along z centred on the origin, activity 1 (and, with mu > 0, that attenuation)
 * rasterised on g with `sub` sub-samples per axis (tl_phantom_rasterise), asserting success;
 * mu_out may be NULL. */
void fx_cylinder(const TlImageGrid *g, double radius, double half_length, double mu, guint sub,
                 TlImage **act, TlImage **mu_out);
/* tl_simulate with no progress or cancel, asserting success. */
TlListmode *fx_simulate(const TlScanner *s, const TlImage *act, const TlImage *mu,
                        const TlSimulateParams *p, TlSimulateStats *st);

/* A direction uniform on the unit sphere. */
void fx_random_unit(GRand *r, double u[3]);
/* n floats uniform in [lo, hi) from a GRand seeded with seed (g_free them). */
float *fx_random_floats(guint64 n, guint32 seed, double lo, double hi);
/* sum a_i b_i in double; max |a_i|. */
double fx_dot(const float *a, const float *b, guint64 n);
double fx_max_abs(const double *a, guint64 n);
/* Mean of the image over the voxels of the middle slices (all but the first and last) whose
 * centre lies [r0, r1) mm from the z axis; asserts more than 20 such voxels. */
double fx_ring_mean(const TlImage *im, double r0, double r1);

/* The MAP tests' list-mode case (test-recon-map, test-recon-petric-pet): a NEMA-like
 * cylinder along z (radius 25 mm, half length `half_length`, activity 1) with a cold
 * cylindrical insert of radius `cold_radius` on the axis and hot spheres of activity 4,
 * rasterised on g; `events` events (exact count, `seed`) simulated on the ring of 8 rings of 16
 * sides x 4 crystals (radius 50 mm, fx_ring_scanner). *truth (may be NULL) gets the phantom. */
typedef struct {
  float x, y, radius;
} FxSphere;
TlListmode *fx_nema_like(const TlImageGrid *g, float half_length, float cold_radius,
                         const FxSphere *hot, guint n_hot, guint64 events, guint32 seed,
                         TlImage **truth);
