#version 460
// OUT[i] = f32(SRC[i]) for i < k: f16 [k] widened to f32 [k] (exact).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "scale.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Src { float16_t src[]; };
layout(set = 0, binding = 4) writeonly buffer Out { float out_[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.k) return;
  out_[i] = float(src[i]);
}
