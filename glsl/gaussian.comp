#version 460
// Gaussian fill (vkblr/ops/random.hpp): OUT[offset + i] = scale · draw
// first + i of the stream with key pc.key, i < count, one invocation per draw:
//   w_j = lowbias32(lowbias32(2i + j) ^ key), u_j = ((w_j >> 9) + 0.5) · 2^-23
//   draw = √(−2 ln u0) · cos(2π u1)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "lowbias32.h"
#include "gaussian.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict writeonly buffer Out { float out_[]; };

// Random word `counter` of the stream (the counter hashed before the key enters).
uint stream_word(uint counter) { return lowbias32(lowbias32(counter) ^ pc.key); }

// ((w >> 9) + 0.5) · 2^-23: 2^23 values, each exact in f32, inside (0, 1).
float open_uniform(uint w) { return (float(w >> 9) + 0.5) * (1.0 / 8388608.0); }

// −ln u for u in (0, 1). Vulkan bounds log's error near 1 only absolutely
// (2^-21), which would leave the small draws with few correct bits: where
// u > 15/16 the series v + v²/2 + … + v⁷/7 of v = 1 − u (exact) instead,
// relative error below 2^-23 plus roundings.
float minus_log(float u) {
  if (u > 0.9375) {
    const float v = 1.0 - u;
    const float tail = 1.0 / 4.0 + v * (1.0 / 5.0 + v * (1.0 / 6.0 + v / 7.0));
    return v * (1.0 + v * (1.0 / 2.0 + v * (1.0 / 3.0 + v * tail)));
  }
  return -log(u);
}

void main() {
  const uint i = elt_index();
  if (i >= pc.count) return;
  const uint draw = pc.first + i;
  const float u0 = open_uniform(stream_word(2u * draw));
  const float u1 = open_uniform(stream_word(2u * draw + 1u));
  const float radius = sqrt(2.0 * minus_log(u0));
  const float c = -cos(6.2831853071795865 * (u1 - 0.5));  // cos(2π u1), the argument kept in (−π, π)
  out_[pc.offset + i] = pc.scale * (radius * c);
}
