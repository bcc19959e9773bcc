/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Compton scattering of annihilation photons: the simulator's physics, reusable by a scatter
 * estimate. Energies in keV, cross-sections per electron in cm^2.
 *
 * At 511 keV in water Compton scattering is practically the only interaction: per gram
 * 0.0966 cm^2 incoherent against ~2e-4 cm^2 coherent and ~2e-5 cm^2 photoelectric (NIST
 * XCOM at 500 keV), so the linear attenuation coefficient of water is its electron density
 * times the Klein-Nishina total cross-section, mu(E) = n_e sigma_KN(E) (0.0096 mm^-1 at 511
 * keV: TL_MU_WATER), and mu at another energy follows from the ratio sigma_KN(E') / sigma_KN(E).
 *
 * Klein & Nishina (1929), with alpha = E / (m_e c^2) and P = E' / E:
 *
 *   E' = E / (1 + alpha (1 - cos theta))                                   (Compton)
 *   d sigma / d Omega = (r_e^2 / 2) P^2 (P + 1/P - sin^2 theta)
 *   sigma_KN = 2 pi r_e^2 { (1 + alpha) / alpha^2 [ 2 (1 + alpha) / (1 + 2 alpha)
 *                            - ln(1 + 2 alpha) / alpha ] + ln(1 + 2 alpha) / (2 alpha)
 *                          - (1 + 3 alpha) / (1 + 2 alpha)^2 }
 *
 * (e.g. Evans, The Atomic Nucleus, 1955, ch. 23.) */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "image/tl-rng.h"

G_BEGIN_DECLS

#define TL_ELECTRON_KEV 510.99895          /* m_e c^2, CODATA 2018 */
#define TL_ELECTRON_RADIUS_CM 2.8179403262e-13

/* The energy after scattering by theta: E / (1 + (E / m_e c^2) (1 - cos theta)). */
TL_API double tl_compton_energy(double e_kev, double cos_theta);
/* Klein-Nishina d sigma / d Omega (cm^2 per steradian per electron) at energy E and angle theta. */
TL_API double tl_klein_nishina_diff(double e_kev, double cos_theta);
/* Klein-Nishina total cross-section per electron (cm^2); 2.866e-25 at 511 keV. */
TL_API double tl_klein_nishina_total(double e_kev);
/* cos theta drawn from the Klein-Nishina distribution at energy E by Kahn's rejection method
 * (Kahn 1954, RAND AECU-3259; as in the MCNP manual): x = E / E' in [1, 1 + 2 alpha] from
 * one of two branches with probabilities (1 + 2 alpha) : 8, accepted with 4 (1/x - 1/x^2)
 * or (cos^2 theta + 1/x) / 2. Mean 2.6 draws per call at 511 keV. */
TL_API double tl_klein_nishina_sample(TlRng *rng, double e_kev);
/* Standard deviation (keV) of the measured energy of a photon of energy E for a resolution
 * r (FWHM / E at 511 keV): the FWHM scales with sqrt(E) (photon statistics of the
 * scintillation light), FWHM(E) = r sqrt(511 keV E), sigma = FWHM / (2 sqrt(2 ln 2)). */
TL_API double tl_energy_sigma_kev(double resolution, double e_kev);

G_END_DECLS
