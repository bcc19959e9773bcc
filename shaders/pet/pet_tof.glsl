// SPDX-License-Identifier: GPL-3.0-or-later
// Time of flight along a LOR (van Gendt et al. 2021 sec. 2.3: d_j = c dt_j / 2, eq. 8, "the
// probabilities
// p(A_j|r_n) in Equation (4) must be re-weighted according to the Gaussian distribution that
// gives a higher weight to voxels that lie closer to the estimated point of annihilation").
// The definition (compute/pet/tl-projector.h, TlTof): the Gaussian N(x; c_b, sigma) along
// the LOR, truncated at n sigma and renormalised, integrated over the event's bin
//   h_b(x) = [erf(clamp(c_b + w/2 - x) k) - erf(clamp(c_b - w/2 - x) k)] / (2 erf(n / sqrt 2)),
// k = 1 / (sigma sqrt 2), clamp to [-n sigma, n sigma]; x = signed distance (mm) of the sample
// from the LOR midpoint towards p1. Adjacent bins share their limits, so the sum over bins
// telescopes to 1 wherever the bins cover x +- n sigma.

// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): GLSL has no erf. The formula is
// erfc(z) = p(t) exp(-z^2) for z >= 0: a product, so small for large z without the
// cancellation of 1 - erf(z) (the TOR's taps use it so).
float pet_erfc_pos(float z) {
  float t = 1.0 / (1.0 + 0.3275911 * z);
  float p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t +
             0.254829592) * t;
  return p * exp(-z * z);
}

float pet_erf(float x) { return sign(x) * (1.0 - pet_erfc_pos(abs(x))); }

// h_b(x); 1 without TOF.
float pet_tof_weight(PetLor l, float x) {
  if (PET_TOF == 0u) return 1.0;
  float ns = PET_TOF_NSIGMA * PET_TOF_SIGMA, k = 0.70710678 / PET_TOF_SIGMA;
  float hi = clamp(l.tof_c + 0.5 * PET_TOF_BIN - x, -ns, ns);
  float lo = clamp(l.tof_c - 0.5 * PET_TOF_BIN - x, -ns, ns);
  return 0.5 * (pet_erf(hi * k) - pet_erf(lo * k)) / pet_erf(PET_TOF_NSIGMA * 0.70710678);
}

// Narrows [t0, t1] (t: 0 at p0, 1 at p1) to where h_b can be non-zero: x = (t - 1/2) len in
// c_b +- (w/2 + n sigma). Outside it every weight is 0, so the tracers skip it: that is why
// TOF list mode is faster than non-TOF.
void pet_tof_window(PetLor l, float len_mm, inout float t0, inout float t1) {
  if (PET_TOF == 0u) return;
  float h = 0.5 * PET_TOF_BIN + PET_TOF_NSIGMA * PET_TOF_SIGMA;
  t0 = max(t0, 0.5 + (l.tof_c - h) / len_mm);
  t1 = min(t1, 0.5 + (l.tof_c + h) / len_mm);
}
