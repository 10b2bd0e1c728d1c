#version 460
// A[i] = A[i]·B[i] for i < rows (f32, one rounding; vkblr/ops/refit.hpp: the
// GPU refit's g Gram (FᵀF) ⊙ C). One invocation per element.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.rows) return;
  a[i] = a[i] * b[i];
}
