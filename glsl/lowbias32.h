// lowbias32.h — Wellons' "lowbias32", a bijective 32-bit integer hash with
// good avalanche: the mixing step of vkblr's counter-based random numbers
// (sign_common.glsl's stochastic rounding, gaussian.comp) and of the key of
// a (seed, stream) pair. One definition for GLSL and C++ (interface.h), so
// the host's keys and references hash as the kernels do.
#ifndef VKBLR_LOWBIAS32_H
#define VKBLR_LOWBIAS32_H
#include "interface.h"
#ifdef __cplusplus
#define VKBLR_HASH_FUNCTION constexpr
#else
#define VKBLR_HASH_FUNCTION
#endif
VKBLR_SHADER_BEGIN

VKBLR_HASH_FUNCTION uint lowbias32(uint h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

#ifdef __cplusplus
// The key of one stream of random words (host only): the sign optimizer's
// per-matrix stochastic rounding, gaussian()'s draws.
constexpr uint stream_key(std::uint64_t seed, uint stream) {
  return lowbias32(lowbias32(lowbias32(static_cast<uint>(seed)) ^ static_cast<uint>(seed >> 32)) ^ stream);
}
#endif

VKBLR_SHADER_END
#endif
