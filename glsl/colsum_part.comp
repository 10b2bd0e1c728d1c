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
#include "common.glsl"
#include "unfused.glsl"
#include "colsum.h"

layout(local_size_x = VKBLR_COLSUM_WG) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
#if TERM != 2
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
#endif
#if TERM == 1
layout(set = 0, binding = 2) readonly buffer RowFactor { float row_factor[]; };
#endif
layout(set = 0, binding = 3) writeonly buffer Partials { float part[]; };

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= pc.k) return;
  const uint blk = gl_WorkGroupID.y;
  const uint first = blk * pc.rows_per_block;
  const uint end = min(first + pc.rows_per_block, pc.m);
  float acc = 0.0;
  for (uint row = first; row < end; ++row) {
    const uint i = row * pc.k + c;
#if TERM == 0
    acc = add_product(acc, a[i], b[i]);
#elif TERM == 1
    acc = add_product3(acc, a[i], b[i], row_factor[row]);
#else
    acc += a[i];
#endif
  }
  part[blk * pc.k + c] = acc;
}
