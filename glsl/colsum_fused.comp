#version 460
// Column reduction pass 1 of A·B fused with the elementwise op on one of its
// operands, so that operand is read once. PART gets colsum_part_prod's
// partials, bit for bit; the element op writes what the separate op would:
//   FUSE 0 (cvt_a)    DST f16 [m][k] = f16((A·COL[c])·scale)   (cvt_col of A)
//   FUSE 1 (cvt_b)    DST f16 [m][k] = f16((B·COL[c])·scale)   (cvt_col of B)
//   FUSE 2 (scale_b)  OUT f32 [m][k] (+)= B·COL[c]             (scale_acc of B)
// A, B f32 [m][k], COL f32 [k], PART f32 [blocks][k].
//
// TRANSPOSED (colsum_fused_t_*) also writes DSTT f16 [k][m], the transpose of
// the staged value: DST's value for cvt_a / cvt_b, f16((A·COL[c])·scale) for
// scale_b — element for element what cvt_t stages. Row blocks are exactly
// VKBLR_COLSUM_T_ROWS (64) rows and m is a multiple of 32. A workgroup's
// 128 columns × 64 rows go through shared memory and leave as one
// contiguous 128-byte run per DSTT row (coalesced stores) instead of one
// half per element at a stride of m.
// @variant colsum_fused_cvt_a FUSE=0 TRANSPOSED=0
// @variant colsum_fused_cvt_b FUSE=1 TRANSPOSED=0
// @variant colsum_fused_scale_b FUSE=2 TRANSPOSED=0
// @variant colsum_fused_t_cvt_a FUSE=0 TRANSPOSED=1
// @variant colsum_fused_t_cvt_b FUSE=1 TRANSPOSED=1
// @variant colsum_fused_t_scale_b FUSE=2 TRANSPOSED=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "unfused.glsl"
#include "colsum.h"

#if TRANSPOSED
#define COLUMNS_PER_GROUP VKBLR_COLSUM_T_WG
#else
#define COLUMNS_PER_GROUP VKBLR_COLSUM_WG
#endif
layout(local_size_x = COLUMNS_PER_GROUP) in;

layout(set = 0, binding = 0) restrict readonly buffer A { float a[]; };
layout(set = 0, binding = 1) restrict readonly buffer B { float b[]; };
layout(set = 0, binding = 2) readonly buffer Col { float col[]; };
layout(set = 0, binding = 3) restrict writeonly buffer Partials { float part[]; };
#if FUSE == 2
layout(set = 0, binding = 6) restrict buffer Out { float out_[]; };
#else
layout(set = 0, binding = 5) restrict writeonly buffer Dst { float16_t dst[]; };
#endif
#if TRANSPOSED
layout(set = 0, binding = 7) restrict writeonly buffer DstT { f16vec4 dstt[]; };
// [column][row] of the staged values; rows padded from 64 to 66 halves so
// that both the column-wise writes and the row-wise reads avoid bank
// conflicts.
#define TILE_STRIDE (VKBLR_COLSUM_T_ROWS + 2)
shared float16_t tile[COLUMNS_PER_GROUP * TILE_STRIDE];
#endif

// Rows are read CHUNK at a time: every load of a chunk is issued before the
// first of its elements is used, so a thread keeps CHUNK rows of each
// operand in flight instead of one (the small-k reductions, few workgroups,
// were bound by memory latency). Sums and stores keep row order.
#define CHUNK 16

// The CHUNK rows from r0 (those before `end`) of column c: acc += A·B in
// row order, the fused op's stores; the transposed variant also stages the
// values DSTT gets into its tile column (row - first).
void chunk(uint r0, uint end, uint c, float cf, inout float acc, uint tile_col, uint first) {
  float av[CHUNK], bv[CHUNK];
#if FUSE == 2
  float ov[CHUNK];
#endif
  [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
    av[j] = 0.0;
    bv[j] = 0.0;
#if FUSE == 2
    ov[j] = 0.0;
#endif
    if (r0 + j < end) {
      const uint i = (r0 + j) * pc.k + c;
      av[j] = a[i];
      bv[j] = b[i];
#if FUSE == 2
      if (pc.accumulate != 0) ov[j] = out_[i];
#endif
    }
  }
  [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
    if (r0 + j < end) {
      const uint i = (r0 + j) * pc.k + c;
      acc = add_product(acc, av[j], bv[j]);
#if FUSE == 0
      const float16_t staged_value = float16_t(staged(av[j], cf, pc.scale));
      dst[i] = staged_value;
#elif FUSE == 1
      const float16_t staged_value = float16_t(staged(bv[j], cf, pc.scale));
      dst[i] = staged_value;
#else
      out_[i] = pc.accumulate != 0 ? add_product(ov[j], bv[j], cf) : bv[j] * cf;
#endif
#if TRANSPOSED
#if FUSE == 2
      const float16_t staged_value = float16_t(staged(av[j], cf, pc.scale));
#endif
      tile[tile_col * TILE_STRIDE + (r0 + j - first)] = staged_value;
#endif
    }
  }
}

#if !TRANSPOSED
void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= pc.k) return;
  const uint blk = gl_WorkGroupID.y;
  const uint first = blk * pc.rows_per_block;
  const uint end = min(first + pc.rows_per_block, pc.m);
  const float cf = col[c];
  float acc = 0.0;
  for (uint r0 = first; r0 < end; r0 += CHUNK) chunk(r0, end, c, cf, acc, 0, first);
  part[blk * pc.k + c] = acc;
}
#else
void main() {
  const uint lc = gl_LocalInvocationID.x;
  const uint c0 = gl_WorkGroupID.x * COLUMNS_PER_GROUP;
  const uint c = c0 + lc;
  const bool live = c < pc.k;  // no early return: every invocation reaches the barrier
  const uint blk = gl_WorkGroupID.y;
  const uint first = blk * VKBLR_COLSUM_T_ROWS;
  const uint end = min(first + VKBLR_COLSUM_T_ROWS, pc.m);
  if (live) {
    const float cf = col[c];
    float acc = 0.0;
    for (uint r0 = first; r0 < end; r0 += CHUNK) chunk(r0, end, c, cf, acc, lc, first);
    part[blk * pc.k + c] = acc;
  }
  barrier();
  // Row c of DSTT holds m halves; this block's rows first..end-1 are
  // (end - first) / 4 f16vec4 from (c·m + first) / 4 on (m, first multiples
  // of 32). 16 consecutive invocations store one column's quads.
  const uint quads = (end - first) / 4;
  for (uint e = lc; e < COLUMNS_PER_GROUP * (VKBLR_COLSUM_T_ROWS / 4); e += COLUMNS_PER_GROUP) {
    const uint cl = e / (VKBLR_COLSUM_T_ROWS / 4);
    const uint q = e % (VKBLR_COLSUM_T_ROWS / 4);
    if (c0 + cl < pc.k && q < quads) {
      const uint t = cl * TILE_STRIDE + q * 4;
      dstt[((c0 + cl) * pc.m + first) / 4 + q] = f16vec4(tile[t], tile[t + 1], tile[t + 2], tile[t + 3]);
    }
  }
}
#endif
