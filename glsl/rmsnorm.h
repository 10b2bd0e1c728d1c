// rmsnorm.h — push constants and geometry of RMSNorm (rmsnorm_fwd.comp,
// rmsnorm_bwd.comp) and of the workgroup row sum they share (row_sum.glsl).
//
// One row (token) is spread over a workgroup of WG invocations (a
// specialization constant, a multiple of 32 up to 1024): invocation t holds
// the row's columns t, t + WG, t + 2·WG, ... in registers, at most
// VKBLR_RMSNORM_COLS of them, so a row is at most 1024 · 16 = 16384 wide.
#ifndef VKBLR_RMSNORM_H
#define VKBLR_RMSNORM_H
#include "interface.h"

#define VKBLR_RMSNORM_COLS 16
#define VKBLR_RMSNORM_MAX_WG 1024
// The row sum's first level: this many partial sums, each over the
// invocations t ≡ lane (mod VKBLR_ROW_SUM_LANES) in order.
#define VKBLR_ROW_SUM_LANES 32

VKBLR_SHADER_BEGIN

VKBLR_PUSH(RmsnormPush) {
  uint rows;            // tokens
  uint hidden;          // columns of a row
  float eps;            // added to the mean square
  uint accumulate;      // rmsnorm_bwd: DX += dx (1) or DX = dx (0)
  uint rows_per_block;  // rmsnorm_bwd: rows one workgroup handles (its dw partial sums)
  uint blocks;          // rmsnorm_bwd: workgroups, ceil(rows / rows_per_block)
  uint reserved0;
  uint reserved1;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
