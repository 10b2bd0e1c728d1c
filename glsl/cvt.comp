#version 460
// f32 -> f16 staging of a GEMM operand, zero rows past m:
//   cvt       DST[rows][k] = f16(SRC[row][k] · scale)
//   cvt_col   DST[rows][k] = f16(SRC[row][k] · COL[k] · scale)
//   cvt_cols  DST[rows][k] = f16(SRC[row][col0 + k] · scale), SRC rows of `stride`
// The products are evaluated left to right, (x · col) · scale, through
// staged() (unfused.glsl) in every kernel that stages the same value
// (cvt_multi, cvt_t, colsum_fused*), so they agree bit for bit.
// @variant cvt MODE=0
// @variant cvt_col MODE=1
// @variant cvt_cols MODE=2
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "cvt.h"
#include "unfused.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer Src { float src[]; };
#if MODE == 1
layout(set = 0, binding = 1) restrict readonly buffer Col { float col[]; };
#endif
layout(set = 0, binding = 2) restrict writeonly buffer Dst { float16_t dst[]; };

// Four elements per invocation, a quarter of the output apart (each pass
// coalesced; four loads in flight per invocation instead of one).
void main() {
  const uint total = pc.rows * pc.k;
  const uint first = elt_index();
  if (first >= pc.quarter) return;
  float v[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    const uint row = i / pc.k;
    const uint c = i % pc.k;
    v[j] = 0.0;
    if (i < total && row < pc.m) {
#if MODE == 0
      v[j] = src[i] * pc.scale;
#elif MODE == 1
      v[j] = staged(src[i], col[c], pc.scale);
#else
      v[j] = src[row * pc.stride + pc.col0 + c] * pc.scale;
#endif
    }
  }
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    if (i < total) dst[i] = float16_t(v[j]);
  }
}
