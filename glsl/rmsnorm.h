// rmsnorm.h — push constants and geometry of RMSNorm (rmsnorm_fwd.comp,
// rmsnorm_bwd.comp, rmsnorm_dw.comp) and of the workgroup row sum they share
// (row_sum.glsl).
//
// One row (token) is spread over WG invocations (a specialization constant,
// a multiple of 32 up to 1024): invocation t holds the row's columns t, t +
// WG, t + 2·WG, ... in registers, COLS = ceil(hidden / WG) of them, at most
// VKBLR_RMSNORM_COLS, so a row is at most 1024 · 16 = 16384 wide. The
// forward's workgroup is one row; the backward's holds ROW_SLOTS rows side
// by side.
#ifndef VKBLR_RMSNORM_H
#define VKBLR_RMSNORM_H
#include "interface.h"

#define VKBLR_RMSNORM_COLS 16
#define VKBLR_RMSNORM_MAX_WG 1024
// The row sum's first level: this many partial sums, each over the
// invocations t ≡ lane (mod VKBLR_ROW_SUM_LANES) in order.
#define VKBLR_ROW_SUM_LANES 32
// rmsnorm_dw: columns per workgroup, and the slices of a column's partials
// summed side by side (its specialization constants' defaults; the host
// passes them).
#define VKBLR_RMSNORM_DW_COLS 8
#define VKBLR_RMSNORM_DW_SLICES 32

VKBLR_SHADER_BEGIN

VKBLR_PUSH(RmsnormPush) {
  uint rows;            // tokens
  uint hidden;          // columns of a row
  float eps;            // added to the mean square
  uint accumulate;      // rmsnorm_bwd: DX += dx (1) or DX = dx (0)
  uint rows_per_block;  // rmsnorm_bwd: rows one workgroup handles (its dw partial sums): ROW_SLOTS · rows_per_slot
  uint blocks;          // rmsnorm_bwd: workgroups, ceil(rows / rows_per_block); rmsnorm_dw: partials per column
  uint rows_per_slot;   // rmsnorm_bwd: consecutive rows of each of a workgroup's slots
  uint accumulate_dw;   // rmsnorm_dw: DW += the sum (1) or DW = it (0)
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
