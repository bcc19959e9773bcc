// One LOR through the image with the projector chosen by PET_TRACER (compute/pet/tl-siddon.c,
// tl-joseph.c name the values). A new ray projector adds its include and one case here.
#include "pet_common.glsl"
#include "pet_siddon.glsl"
#include "pet_joseph.glsl"

const uint PET_TRACER_SIDDON = 0u;
const uint PET_TRACER_JOSEPH = 1u;

// mode PET_FORWARD: returns sum_n a_jn img_n. mode PET_BACK: img_n += w a_jn, returns 0.
float pet_trace(PetLor l, uint mode, float w, TlFloats img) {
  if (PET_TRACER == PET_TRACER_JOSEPH) return pet_joseph(l.p0, l.p1, mode, w, img);
  return pet_siddon(l.p0, l.p1, mode, w, img);
}
