#version 460
// Sign bitmap -> scaled f32 plane (vkblr/ops/expand_f32.hpp), one invocation
// per plane element (consecutive invocations along a plane row):
//   PLANE[offset + i·ldp + k] = (row_scale[i] · s_ik) · col_scale[k]
// s_ik = ±1 from bit k % 32 of word k / 32 of BITS row i (1 = +1); an
// absent scale is 1. The sign only flips row_scale's sign bit, so each value
// is row_scale[i]·col_scale[k] rounded once, with s_ik's sign.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "expand_f32.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 1) restrict readonly buffer RowScale { float row_scale[]; };
layout(set = 0, binding = 2) restrict readonly buffer ColScale { float col_scale[]; };
layout(set = 0, binding = 3) restrict writeonly buffer Plane { float plane[]; };

void main() {
  const uint e = elt_index();
  if (e >= pc.rows * pc.r) return;
  const uint i = e / pc.r;
  const uint k = e % pc.r;
  const bool plus = ((bits[i * (pc.r / 32) + k / 32] >> (k % 32)) & 1u) != 0;
  const float h = pc.row_scaled != 0 ? row_scale[i] : 1.0;
  const float signed_h = plus ? h : -h;
  plane[pc.offset + i * pc.ldp + k] = pc.col_scaled != 0 ? signed_h * col_scale[k] : signed_h;
}
