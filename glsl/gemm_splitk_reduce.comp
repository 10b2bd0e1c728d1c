#version 460
// Split-K, second pass: out[m][ldo] (columns ocol..ocol+n) (+)=
// (Σ_z WS[z][m][n]) · oscale, the layers summed in z order from layer 0
// (((w₀ + w₁) + w₂) + …), then scaled and added as the GEMM's own epilogue
// does: one fixed order, no atomics, the same bits on every run.
// WS f32 [splits][m][n] holds the layers' products (gemm.h, split-K).
// One invocation per 4 consecutive columns of a row (n is a multiple of 16).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gemm.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer Layers { vec4 ws[]; };
layout(set = 0, binding = 3) restrict buffer Out { float outv[]; };

void main() {
  const uint e = elt_index();
  const uint quads = pc.n / 4;
  if (e >= pc.m * quads) return;
  const uint row = e / quads;
  const uint col = (e % quads) * 4;
  const uint layer_quads = pc.m * quads;
  precise vec4 sum = ws[e];
  for (uint z = 1; z < pc.splits; ++z) sum = sum + ws[z * layer_quads + e];
  const uint first = row * pc.ldo + pc.ocol + col;
  [[unroll]] for (uint q = 0; q < 4; ++q) {
    precise float r = sum[q] * pc.oscale;
    if (pc.accumulate != 0u) r = outv[first + q] + r;
    outv[first + q] = r;
  }
}
