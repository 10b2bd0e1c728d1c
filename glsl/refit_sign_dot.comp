#version 460
// OUT[i] = Σ_k s_ik·A[i][k]·COL[k] for the signs s of BITS [rows][words]
// (vkblr/ops/refit.hpp; the right-hand side of the GPU refit's g step). One
// workgroup per row: invocation t sums k = t, t + WG, ... in order (each
// term (s·a)·col rounded, then added), then a fixed tree; the same bits
// every run.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_REFIT_ROW_WG) in;
layout(set = 0, binding = 0) readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer Col { float col[]; };
layout(set = 0, binding = 3) writeonly buffer Out { float out_values[]; };

shared float sums[VKBLR_REFIT_ROW_WG];

void main() {
  const uint i = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (i >= pc.rows) return;  // the whole workgroup
  const uint t = gl_LocalInvocationIndex;
  precise float acc = 0.0;
  for (uint k = t; k < pc.r; k += VKBLR_REFIT_ROW_WG) {
    const bool plus = ((bits[i * pc.words + k / 32] >> (k % 32)) & 1u) != 0;
    const float term = (plus ? a[i * pc.r + k] : -a[i * pc.r + k]) * col[k];
    acc = acc + term;
  }
  sums[t] = acc;
  barrier();
  for (uint half_width = VKBLR_REFIT_ROW_WG / 2; half_width > 0; half_width >>= 1) {
    if (t < half_width) sums[t] += sums[t + half_width];
    barrier();
  }
  if (t == 0) out_values[i] = sums[0];
}
