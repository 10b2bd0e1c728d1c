#version 460
// Column-scaled outputs, A*, OUT f32 [m][k], COL* f32 [k]:
//   scale_acc   OUT (+)= A0·COL0[c]                (accumulate flag)
//   scale_acc2  OUT = A0·COL0[c] + A1·COL1[c]      (two blr paths in one pass)
// scale_acc2 rounds exactly as scale_acc overwriting with path 0 and then
// accumulating path 1: fl(fl(a0·c0) + fl(a1·c1)); unfused.glsl keeps the
// compiler from fusing either product into the sum.
// @variant scale_acc PATHS=1
// @variant scale_acc2 PATHS=2
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "unfused.glsl"
#include "scale.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer A0 { float a0[]; };
layout(set = 0, binding = 1) restrict readonly buffer Col0 { float col0[]; };
#if PATHS == 2
layout(set = 0, binding = 2) restrict readonly buffer A1 { float a1[]; };
layout(set = 0, binding = 3) restrict readonly buffer Col1 { float col1[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Out { float out_[]; };
#else
layout(set = 0, binding = 4) restrict buffer Out { float out_[]; };
#endif

// Four elements per invocation, a quarter of the output apart (each pass
// coalesced; four of each load in flight per invocation instead of one).
void main() {
  const uint total = pc.m * pc.k;
  const uint first = elt_index();
  if (first >= pc.quarter) return;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    if (i < total) {
      const uint c = i % pc.k;
#if PATHS == 2
      out_[i] = sum_of_products(a0[i], col0[c], a1[i], col1[c]);
#else
      out_[i] = pc.accumulate != 0 ? add_product(out_[i], a0[i], col0[c]) : a0[i] * col0[c];
#endif
    }
  }
}
