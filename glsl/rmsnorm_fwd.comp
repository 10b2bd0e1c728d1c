#version 460
// RMSNorm forward, one row (token) per workgroup, X, Y, STREAM f32
// [rows][hidden], W f32 [hidden], INV f32 [rows]:
//   rmsnorm_fwd           v = X[row]
//   rmsnorm_fwd_residual  v = STREAM[row] + X[row], written back to STREAM
//                         (the residual add fused: the bits of add_into)
// then, each operation rounded in this order (precise: no contraction):
//   ss   = Σ_c v[c]·v[c]        invocation t adds its columns t, t + WG, ...
//                               in order, then row_sum() adds the invocations
//   inv  = inversesqrt(ss / hidden + eps)      INV[row] = inv
//   Y[row][c] = (v[c]·inv)·W[c]
// Grid: one workgroup per row, folded into y past 65535 rows.
// @variant rmsnorm_fwd RESIDUAL=0
// @variant rmsnorm_fwd_residual RESIDUAL=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rmsnorm.h"

layout(constant_id = 0) const uint ROW_WG = 256;
const uint ROW_SLOTS = 1;
layout(constant_id = 1) const uint COLS = VKBLR_RMSNORM_COLS;  // columns per invocation, ceil(hidden / ROW_WG)
layout(local_size_x_id = 0) in;
#include "row_sum.glsl"

layout(set = 0, binding = 0) restrict readonly buffer X { float x[]; };
#if RESIDUAL == 1
layout(set = 0, binding = 1) restrict buffer Stream { float stream[]; };
#endif
layout(set = 0, binding = 2) restrict readonly buffer W { float w[]; };
layout(set = 0, binding = 3) restrict writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Inv { float inv_rms[]; };

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= pc.rows) return;  // the whole workgroup: no barrier is skipped by part of it
  const uint t = gl_LocalInvocationIndex;
  const uint base = row * pc.hidden;
  float v[VKBLR_RMSNORM_COLS], wv[VKBLR_RMSNORM_COLS];  // w loaded with the row: one wait on memory, not two
  [[unroll]] for (uint j = 0; j < COLS; ++j) {
    const uint c = t + j * ROW_WG;
    v[j] = 0.0;
    wv[j] = c < pc.hidden ? w[c] : 0.0;
    if (c < pc.hidden) {
#if RESIDUAL == 1
      precise const float r = stream[base + c] + x[base + c];
      stream[base + c] = r;
      v[j] = r;
#else
      v[j] = x[base + c];
#endif
    }
  }
  precise float ss = 0.0;
  [[unroll]] for (uint j = 0; j < COLS; ++j) {
    if (t + j * ROW_WG < pc.hidden) ss = ss + v[j] * v[j];
  }
  ss = row_sum(ss);
  precise const float mean = ss / float(pc.hidden) + pc.eps;
  const float inv = inversesqrt(mean);
  if (t == 0) inv_rms[row] = inv;
  [[unroll]] for (uint j = 0; j < COLS; ++j) {
    const uint c = t + j * ROW_WG;
    if (c < pc.hidden) {
      precise const float out_y = v[j] * inv * wv[j];
      y[base + c] = out_y;
    }
  }
}
