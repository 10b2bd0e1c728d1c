#version 460
// RMSNorm backward, pass 1: dx, and dw's partial sums over blocks of rows.
// X, DY, DX f32 [rows][hidden], W f32 [hidden], INV f32 [rows] (the
// forward's inverse RMS), PART f32 [blocks][hidden]. X is the forward's
// normalized input (for rmsnorm_fwd_residual: STREAM after the add).
//
// A workgroup holds ROW_SLOTS rows side by side, ROW_WG invocations each.
// Block b is rows b·rows_per_block .. (capped at rows); slot s of it takes
// the block's rows s·rows_per_slot .. in order (rows_per_block = ROW_SLOTS ·
// rows_per_slot), the next row's loads issued after this row's stores.
// For each row, with inv = INV[row], each operation rounded in this order
// (precise):
//   xh[c] = X[c]·inv;   gy[c] = DY[c]·W[c]
//   s     = Σ_c gy[c]·xh[c]       (the forward's order: per invocation, then row_sum())
//   mean  = s / hidden
//   dx[c] = (gy[c] − xh[c]·mean)·inv           DX = dx, or DX = DX + dx (accumulate)
//   acc[c] = acc[c] + DY[c]·xh[c]             (from 0, the slot's rows in order)
// then PART[b][c] = ((acc_0[c] + acc_1[c]) + acc_2[c]) + ...  (slots in order).
// rmsnorm_dw.comp adds the blocks' partials. No atomics: the same bits
// every run.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rmsnorm.h"

layout(constant_id = 0) const uint ROW_WG = 256;
layout(constant_id = 1) const uint COLS = VKBLR_RMSNORM_COLS;  // columns per invocation, ceil(hidden / ROW_WG)
layout(constant_id = 2) const uint ROW_SLOTS = 1;
layout(local_size_x_id = 3) in;  // ROW_SLOTS · ROW_WG
#include "row_sum.glsl"

layout(set = 0, binding = 0) restrict readonly buffer X { float x[]; };
layout(set = 0, binding = 2) restrict readonly buffer W { float w[]; };
layout(set = 0, binding = 4) restrict readonly buffer Inv { float inv_rms[]; };
layout(set = 0, binding = 5) restrict readonly buffer DY { float dy[]; };
layout(set = 0, binding = 6) restrict buffer DX { float dx[]; };
layout(set = 0, binding = 7) restrict writeonly buffer Partials { float part[]; };

// The sums of slots 1 .. ROW_SLOTS − 1, slot s at (s − 1)·hidden.
shared float slot_acc_s[(ROW_SLOTS - 1) * ROW_WG * COLS + 1];

// Row `row`'s columns of this invocation (t, t + ROW_WG, ...) of X and DY,
// and its INV; zeros where `live` is false or past hidden.
void load_row(uint row, bool live, uint t, out float xr[VKBLR_RMSNORM_COLS], out float dyr[VKBLR_RMSNORM_COLS],
              out float inv) {
  [[unroll]] for (uint j = 0; j < COLS; ++j) {
    const uint c = t + j * ROW_WG;
    const bool ok = live && c < pc.hidden;
    xr[j] = ok ? x[row * pc.hidden + c] : 0.0;
    dyr[j] = ok ? dy[row * pc.hidden + c] : 0.0;
  }
  inv = live ? inv_rms[row] : 0.0;
}

void main() {
  const uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (block >= pc.blocks) return;  // the whole workgroup
  const uint slot = gl_LocalInvocationIndex / ROW_WG, t = gl_LocalInvocationIndex % ROW_WG;
  float wv[VKBLR_RMSNORM_COLS];
  float acc[VKBLR_RMSNORM_COLS];
  [[unroll]] for (uint j = 0; j < COLS; ++j) {
    const uint c = t + j * ROW_WG;
    wv[j] = c < pc.hidden ? w[c] : 0.0;
    acc[j] = 0.0;
  }
  const uint first = block * pc.rows_per_block + slot * pc.rows_per_slot;
  const uint end = min(first + pc.rows_per_slot, pc.rows);  // may be <= first: the slot only joins the barriers
  float xv[VKBLR_RMSNORM_COLS], dyv[VKBLR_RMSNORM_COLS];
  float inv;
  load_row(first, first < end, t, xv, dyv, inv);
  for (uint i = 0; i < pc.rows_per_slot; ++i) {  // the same count in every slot: uniform barriers
    const uint row = first + i;
    const bool live = row < end;
    const uint base = row * pc.hidden;
    precise float s = 0.0;
    [[unroll]] for (uint j = 0; j < COLS; ++j) {
      const uint c = t + j * ROW_WG;
      precise const float xh = xv[j] * inv;
      precise const float gy = dyv[j] * wv[j];
      if (c < pc.hidden) s = s + gy * xh;
    }
    s = row_sum_of_slot(s, slot, t);
    precise const float mean = s / float(pc.hidden);
    [[unroll]] for (uint j = 0; j < COLS; ++j) {
      const uint c = t + j * ROW_WG;
      if (live && c < pc.hidden) {
        precise const float xh = xv[j] * inv;  // the same bits as above
        precise const float gy = dyv[j] * wv[j];
        precise const float d = (gy - xh * mean) * inv;
        precise const float out_dx = pc.accumulate != 0 ? dx[base + c] + d : d;
        dx[base + c] = out_dx;
        precise const float a = acc[j] + dyv[j] * xh;
        acc[j] = a;
      }
    }
    load_row(row + 1, row + 1 < end, t, xv, dyv, inv);
  }
  // the slots' sums added in slot order by slot 0
  if (ROW_SLOTS > 1) {
    if (slot > 0) {
      [[unroll]] for (uint j = 0; j < COLS; ++j) {
        const uint c = t + j * ROW_WG;
        if (c < pc.hidden) slot_acc_s[(slot - 1) * pc.hidden + c] = acc[j];
      }
    }
    barrier();
    if (slot == 0) {
      [[unroll]] for (uint j = 0; j < COLS; ++j) {
        const uint c = t + j * ROW_WG;
        if (c < pc.hidden) {
          precise float a = acc[j];
          for (uint s2 = 1; s2 < ROW_SLOTS; ++s2) a = a + slot_acc_s[(s2 - 1) * pc.hidden + c];
          acc[j] = a;
        }
      }
    }
  }
  if (slot == 0) {
    [[unroll]] for (uint j = 0; j < COLS; ++j) {
      const uint c = t + j * ROW_WG;
      if (c < pc.hidden) part[block * pc.hidden + c] = acc[j];
    }
  }
}
