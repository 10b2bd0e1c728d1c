#version 460
// RMSNorm backward over blocks of rows, X, DY, DX f32 [rows][hidden], W f32
// [hidden], INV f32 [rows] (the forward's inverse RMS), PART f32
// [blocks][hidden]. X is the forward's normalized input (for
// rmsnorm_fwd_residual: STREAM after the add). Workgroup b handles rows
// b·rows_per_block .. (capped at rows) in order; for each row, with inv =
// INV[row], each operation rounded in this order (precise):
//   xh[c] = X[c]·inv;   gy[c] = DY[c]·W[c]
//   s     = Σ_c gy[c]·xh[c]       (the forward's order: per invocation, then row_sum())
//   mean  = s / hidden
//   dx[c] = (gy[c] − xh[c]·mean)·inv           DX = dx, or DX = DX + dx (accumulate)
//   part[c] = part[c] + DY[c]·xh[c]           (from 0, rows in order)
// and PART[b][c] = part[c]. colsum_finish then adds the blocks' partials in
// block order: dw[c] (+)= Σ_b PART[b][c]. No atomics: the same bits every run.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rmsnorm.h"

layout(constant_id = 0) const uint ROW_WG = 256;
layout(local_size_x_id = 0) in;
#include "row_sum.glsl"

layout(set = 0, binding = 0) restrict readonly buffer X { float x[]; };
layout(set = 0, binding = 2) restrict readonly buffer W { float w[]; };
layout(set = 0, binding = 4) restrict readonly buffer Inv { float inv_rms[]; };
layout(set = 0, binding = 5) restrict readonly buffer DY { float dy[]; };
layout(set = 0, binding = 6) restrict buffer DX { float dx[]; };
layout(set = 0, binding = 7) restrict writeonly buffer Partials { float part[]; };

void main() {
  const uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (block >= pc.blocks) return;  // the whole workgroup
  const uint t = gl_LocalInvocationIndex;
  float wv[VKBLR_RMSNORM_COLS];
  float acc[VKBLR_RMSNORM_COLS];
  [[unroll]] for (uint j = 0; j < VKBLR_RMSNORM_COLS; ++j) {
    const uint c = t + j * ROW_WG;
    wv[j] = c < pc.hidden ? w[c] : 0.0;
    acc[j] = 0.0;
  }
  const uint first = block * pc.rows_per_block;
  const uint end = min(first + pc.rows_per_block, pc.rows);
  for (uint row = first; row < end; ++row) {
    const uint base = row * pc.hidden;
    const float inv = inv_rms[row];
    float xh[VKBLR_RMSNORM_COLS], gy[VKBLR_RMSNORM_COLS], dyv[VKBLR_RMSNORM_COLS];
    precise float s = 0.0;
    [[unroll]] for (uint j = 0; j < VKBLR_RMSNORM_COLS; ++j) {
      const uint c = t + j * ROW_WG;
      xh[j] = 0.0;
      gy[j] = 0.0;
      dyv[j] = 0.0;
      if (c < pc.hidden) {
        precise const float xn = x[base + c] * inv;
        const float d = dy[base + c];
        precise const float g = d * wv[j];
        xh[j] = xn;
        gy[j] = g;
        dyv[j] = d;
        s = s + g * xn;
      }
    }
    s = row_sum(s);
    precise const float mean = s / float(pc.hidden);
    [[unroll]] for (uint j = 0; j < VKBLR_RMSNORM_COLS; ++j) {
      const uint c = t + j * ROW_WG;
      if (c < pc.hidden) {
        precise const float d = (gy[j] - xh[j] * mean) * inv;
        precise const float out_dx = pc.accumulate != 0 ? dx[base + c] + d : d;
        dx[base + c] = out_dx;
        precise const float a = acc[j] + dyv[j] * xh[j];
        acc[j] = a;
      }
    }
  }
  [[unroll]] for (uint j = 0; j < VKBLR_RMSNORM_COLS; ++j) {
    const uint c = t + j * ROW_WG;
    if (c < pc.hidden) part[block * pc.hidden + c] = acc[j];
  }
}
