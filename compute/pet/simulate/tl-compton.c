/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Compton scattering: Klein-Nishina cross-sections and Kahn's sampler (see tl-compton.h). */
#include "tl-compton.h"
#include <math.h>

double tl_compton_energy(double e_kev, double cos_theta) {
  return e_kev / (1.0 + e_kev / TL_ELECTRON_KEV * (1.0 - cos_theta));
}

double tl_klein_nishina_diff(double e_kev, double cos_theta) {
  double P = tl_compton_energy(e_kev, cos_theta) / e_kev;
  double re2 = TL_ELECTRON_RADIUS_CM * TL_ELECTRON_RADIUS_CM;
  return 0.5 * re2 * P * P * (P + 1.0 / P - (1.0 - cos_theta * cos_theta));
}

double tl_klein_nishina_total(double e_kev) {
  double a = e_kev / TL_ELECTRON_KEV, b = 1.0 + 2.0 * a, l = log(b);
  double re2 = TL_ELECTRON_RADIUS_CM * TL_ELECTRON_RADIUS_CM;
  if (a < 1e-4) /* Thomson limit, with the first correction (the sum cancels badly there) */
    return 8.0 * G_PI / 3.0 * re2 * (1.0 - 2.0 * a);
  return 2.0 * G_PI * re2 *
         ((1.0 + a) / (a * a) * (2.0 * (1.0 + a) / b - l / a) + l / (2.0 * a) -
          (1.0 + 3.0 * a) / (b * b));
}

double tl_klein_nishina_sample(TlRng *rng, double e_kev) {
  double a = e_kev / TL_ELECTRON_KEV, b = 1.0 + 2.0 * a;
  for (;;) {
    double r1 = tl_rng_uniform(rng), r2 = tl_rng_uniform(rng), r3 = tl_rng_uniform(rng);
    if (r1 <= b / (9.0 + 2.0 * a)) {
      double x = 1.0 + 2.0 * a * r2;
      if (r3 <= 4.0 * (1.0 / x - 1.0 / (x * x))) return 1.0 - (x - 1.0) / a;
    } else {
      double x = b / (1.0 + 2.0 * a * r2), mu = 1.0 - (x - 1.0) / a;
      if (r3 <= 0.5 * (mu * mu + 1.0 / x)) return mu;
    }
  }
}

double tl_energy_sigma_kev(double resolution, double e_kev) {
  return resolution * sqrt(TL_ELECTRON_KEV * MAX(e_kev, 0.0)) / (2.0 * sqrt(2.0 * G_LN2));
}
