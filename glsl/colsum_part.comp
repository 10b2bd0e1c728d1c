#version 460
// Column reduction, pass 1: per column c and block of rows,
//   PART[blk][c] = Σ over rows blk·rows_per_block .. (capped at m), in order, of
//     colsum_part_prod      A[row][c]·B[row][c]
//     colsum_part_prod_row  A[row][c]·B[row][c]·F[row]
//     colsum_part_plain     A[row][c]
// A, B f32 [m][k], F f32 [m]. Grid (ceil(k / 256), blocks): one invocation
// per column and block. Each term is added as unfused.glsl rounds it, the
// same as colsum_fused's partials, bit for bit.
// @variant colsum_part_prod TERM=0
// @variant colsum_part_prod_row TERM=1
// @variant colsum_part_plain TERM=2
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "unfused.glsl"
#include "colsum.h"

layout(local_size_x = VKBLR_COLSUM_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer A { float a[]; };
#if TERM != 2
layout(set = 0, binding = 1) restrict readonly buffer B { float b[]; };
#endif
#if TERM == 1
layout(set = 0, binding = 2) restrict readonly buffer RowFactor { float row_factor[]; };
#endif
layout(set = 0, binding = 3) restrict writeonly buffer Partials { float part[]; };

// Rows are read CHUNK at a time, every load of a chunk issued before its
// first use (memory-level parallelism for the small-k reductions, which
// have few workgroups); the sum keeps row order.
#define CHUNK 16

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= pc.k) return;
  const uint blk = gl_WorkGroupID.y;
  const uint first = blk * pc.rows_per_block;
  const uint end = min(first + pc.rows_per_block, pc.m);
  float acc = 0.0;
  for (uint r0 = first; r0 < end; r0 += CHUNK) {
    float av[CHUNK];
#if TERM != 2
    float bv[CHUNK];
#endif
#if TERM == 1
    float fv[CHUNK];
#endif
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      const bool live = r0 + j < end;
      const uint i = (r0 + j) * pc.k + c;
      av[j] = live ? a[i] : 0.0;
#if TERM != 2
      bv[j] = live ? b[i] : 0.0;
#endif
#if TERM == 1
      fv[j] = live ? row_factor[r0 + j] : 0.0;
#endif
    }
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      if (r0 + j < end) {
#if TERM == 0
        acc = add_product(acc, av[j], bv[j]);
#elif TERM == 1
        acc = add_product3(acc, av[j], bv[j], fv[j]);
#else
        acc += av[j];
#endif
      }
    }
  }
  part[blk * pc.k + c] = acc;
}
