#version 460
// OUT[i] = Σ_j A[i][j]·X[j] for A f32 [n][n] (vkblr/ops/refit.hpp: the
// products of the GPU refit's conjugate gradients). One workgroup per row
// (folded into y past 65535): invocation t sums j = t, t + WG, ... in order
// (each product rounded, then added), then a fixed tree; the same bits
// every run.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_REFIT_CG_WG) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float out_values[]; };

shared float sums[VKBLR_REFIT_CG_WG];

void main() {
  const uint i = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (i >= pc.rows) return;  // the whole workgroup
  const uint t = gl_LocalInvocationIndex;
  const uint n = pc.rows;
  precise float acc = 0.0;
  for (uint j = t; j < n; j += VKBLR_REFIT_CG_WG) {
    const float term = a[i * n + j] * x[j];
    acc = acc + term;
  }
  sums[t] = acc;
  barrier();
  for (uint half_width = VKBLR_REFIT_CG_WG / 2; half_width > 0; half_width >>= 1) {
    if (t < half_width) sums[t] += sums[t + half_width];
    barrier();
  }
  if (t == 0) out_values[i] = sums[0];
}
