// SPDX-License-Identifier: GPL-3.0-or-later
// One LOR through the image with the projector chosen by PET_TRACER (compute/pet/tl-siddon.c,
// tl-joseph.c name the values). A new ray projector adds its include and one case here.
#include "pet_common.glsl"
#include "pet_tof.glsl"
#include "pet_siddon.glsl"
#include "pet_planes.glsl"
#include "pet_joseph.glsl"
#include "pet_tor.glsl"

const uint PET_TRACER_SIDDON = TL_PET_TRACER_SIDDON;
const uint PET_TRACER_JOSEPH = TL_PET_TRACER_JOSEPH;
const uint PET_TRACER_TOR = TL_PET_TRACER_TOR;

// mode PET_FORWARD: returns sum_n a_jn img_n. mode PET_BACK: img_n += w a_jn, returns 0.
// With PET_TOF, a_jn includes the event's TOF weight (pet_tof.glsl).
float pet_trace(PetLor l, uint mode, float w, TlFloats img) {
  if (PET_TRACER == PET_TRACER_JOSEPH) return pet_joseph(l, mode, w, img);
  if (PET_TRACER == PET_TRACER_TOR) return pet_tor(l, mode, w, img);
  return pet_siddon(l, mode, w, img);
}

// The attenuation factor a_j of LOR item i (pet_lor's argument) when PET_ATTEN = 1, else 1.
// van Gendt et al. 2021 eq. 6: the probability that both photons of an annihilation on LOR j
// escape is
//   a_j = exp(-integral over the whole LOR of mu(x) dx),
// independent of where on the line the annihilation happened. Records read the a_j computed
// once per dataset (compute/pet/tl-recon.c); every crystal pair (the sensitivity image,
// van Gendt et al. 2021 eq. 7) integrates the mu-map in pc.image with this projector's own weights
// first.
float pet_atten(uint i, PetLor l) {
  if (PET_ATTEN == 0u) return 1.0;
  if (PET_LORS == PET_LORS_ALL_PAIRS) return exp(-pet_trace(l, PET_FORWARD, 0.0, pc.image));
  return pc.atten.v[pc.first + i];
}
