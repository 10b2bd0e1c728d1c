// lowbias32.glsl — Wellons' "lowbias32": a bijective 32-bit integer hash
// with good avalanche, the mixing step of vkblr's counter-based random
// numbers (sign_common.glsl's stochastic rounding, gaussian.comp). The host
// copy is engine/src/lowbias32.hpp; both must stay equal.
#ifndef VKBLR_LOWBIAS32_GLSL
#define VKBLR_LOWBIAS32_GLSL

uint lowbias32(uint h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

#endif
