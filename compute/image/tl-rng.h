/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Seeded pseudo-random numbers for the simulator: xoshiro256** (Blackman & Vigna), one
 * independent stream per (seed, stream id) through splitmix64, so each block of work gets
 * the same numbers whichever thread runs it. */
#pragma once
#include <glib.h>
#include <math.h>

typedef struct {
  guint64 s[4];
} TlRng;

static inline guint64 tl_splitmix64(guint64 *x) {
  guint64 z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void tl_rng_init(TlRng *r, guint64 seed, guint64 stream) {
  guint64 x = seed ^ (stream * 0xd1b54a32d192ed03ull + 0x8bb84b93962eacc9ull);
  for (int i = 0; i < 4; i++) r->s[i] = tl_splitmix64(&x);
}

static inline guint64 tl_rng_next(TlRng *r) {
  guint64 *s = r->s;
  guint64 x = s[1] * 5;
  guint64 out = ((x << 7) | (x >> 57)) * 9;
  guint64 t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double tl_rng_uniform(TlRng *r) { return (double)(tl_rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [0, n). The bias of the multiply-shift is below 2^-32 for n < 2^32. */
static inline guint32 tl_rng_below(TlRng *r, guint32 n) {
  return (guint32)(((tl_rng_next(r) >> 32) * (guint64)n) >> 32);
}

/* Standard normal (Box-Muller; one of the pair is used, which keeps streams simple). */
static inline double tl_rng_normal(TlRng *r) {
  double u = 1.0 - tl_rng_uniform(r); /* (0, 1] */
  return sqrt(-2.0 * log(u)) * cos(2.0 * G_PI * tl_rng_uniform(r));
}

/* Poisson(mean): multiplication method for small means, else Hormann's transformed
 * rejection PTRS (1993), exact for any mean >= 10. */
static inline guint64 tl_rng_poisson(TlRng *r, double mean) {
  if (mean <= 0) return 0;
  if (mean < 10) {
    double l = exp(-mean), p = 1.0;
    guint64 k = 0;
    while ((p *= tl_rng_uniform(r)) > l) k++;
    return k;
  }
  double slam = sqrt(mean), loglam = log(mean);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double u = tl_rng_uniform(r) - 0.5, v = tl_rng_uniform(r);
    double us = 0.5 - fabs(u);
    double k = floor((2 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return (guint64)k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -mean + k * loglam - lgamma(k + 1))
      return (guint64)k;
  }
}
