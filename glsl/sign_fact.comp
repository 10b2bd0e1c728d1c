#version 460
// fact's factored second moment, before sign_update_fact reads it. With
// g = G[i]·grad_scale over G f32 [rows][r], R f32 [rows], C f32 [r] and
// SUMS f32 [blocks·r + 1] (scratch: column partials, then ΣR):
//   sign_fact_rows  R[row] = β2·R[row] + (1 − β2)·Σ_j g²   (j in order)
//                   one invocation per row; the workgroup stages its rows
//                   through shared memory 16 columns at a time, so the
//                   global reads are coalesced
//   sign_fact_cols  SUMS[b·r + j] = Σ g² over the rows of block b
//                   (VKBLR_SIGN_FACT_ROWS rows, in order); grid
//                   (ceil(r / 256), blocks)
//   sign_fact_sum   C[j] = β2·C[j] + (1 − β2)·Σ_b SUMS[b·r + j] (b in
//                   order), one invocation per column; the grid's last
//                   workgroup adds ΣR = SUMS[blocks·r]: invocation x sums
//                   R[x], R[x + 256], ... in order, then a fixed tree
// Fixed orders and no atomics: deterministic, and every value (precise,
// each operation rounded on its own) reproducible on a host bit for bit.
// @variant sign_fact_rows PASS=0
// @variant sign_fact_cols PASS=1
// @variant sign_fact_sum PASS=2
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "unfused.glsl"
#include "sign.h"

layout(local_size_x = VKBLR_ELT_WG) in;
#if PASS != 2
layout(set = 0, binding = 0) readonly buffer Grad { float grad[]; };
#endif
#if PASS == 0
layout(set = 0, binding = 4) buffer RowV { float row_v[]; };
#define FACT_CHUNK 16
shared float chunk_tile[VKBLR_ELT_WG * (FACT_CHUNK + 1)];  // [row][column], padded against bank conflicts
#elif PASS == 1
layout(set = 0, binding = 6) writeonly buffer Sums { float sums[]; };
#else
layout(set = 0, binding = 4) readonly buffer RowV { float row_v[]; };
layout(set = 0, binding = 5) buffer ColV { float col_v[]; };
layout(set = 0, binding = 6) buffer Sums { float sums[]; };
shared float tree[VKBLR_ELT_WG];
#endif
#if PASS != 1
layout(set = 0, binding = 11) readonly buffer Scalars { uint scalars[]; };
#include "live_skip.glsl"
#endif

void main() {
#if PASS != 1
  if (step_skipped()) return;  // R and C keep their values on a skipped step
#endif
#if PASS == 0
  const uint t = gl_LocalInvocationIndex;
  const uint row0 = elt_index() - t;  // this workgroup's first row
  float acc = 0.0;
  for (uint j0 = 0; j0 < pc.r; j0 += FACT_CHUNK) {
    for (uint k = 0; k < FACT_CHUNK; ++k) {
      const uint e = t + k * VKBLR_ELT_WG;
      const uint rl = e / FACT_CHUNK, c = e % FACT_CHUNK;
      const uint gr = row0 + rl;
      chunk_tile[rl * (FACT_CHUNK + 1) + c] = (gr < pc.rows && j0 + c < pc.r) ? grad[gr * pc.r + j0 + c] : 0.0;
    }
    barrier();
    for (uint c = 0; c < FACT_CHUNK && j0 + c < pc.r; ++c) {
      precise const float g = chunk_tile[t * (FACT_CHUNK + 1) + c] * pc.grad_scale;
      acc = add_product(acc, g, g);
    }
    barrier();
  }
  const uint row = row0 + t;
  if (row >= pc.rows) return;
  precise const float updated = pc.beta2 * row_v[row] + (1.0 - pc.beta2) * acc;
  row_v[row] = updated;
#elif PASS == 1
  const uint j = gl_GlobalInvocationID.x;
  if (j >= pc.r) return;
  const uint block = gl_WorkGroupID.y;
  const uint first = block * VKBLR_SIGN_FACT_ROWS;
  const uint end = min(first + VKBLR_SIGN_FACT_ROWS, pc.rows);
  float acc = 0.0;
  for (uint row = first; row < end; ++row) {
    precise const float g = grad[row * pc.r + j] * pc.grad_scale;
    acc = add_product(acc, g, g);
  }
  sums[block * pc.r + j] = acc;
#else
  if (gl_WorkGroupID.x + 1 < gl_NumWorkGroups.x) {
    const uint j = gl_GlobalInvocationID.x;
    if (j >= pc.r) return;
    precise float acc = 0.0;
    for (uint b = 0; b < pc.blocks; ++b) acc = acc + sums[b * pc.r + j];
    precise const float updated = pc.beta2 * col_v[j] + (1.0 - pc.beta2) * acc;
    col_v[j] = updated;
  } else {
    const uint x = gl_LocalInvocationIndex;
    precise float acc = 0.0;
    for (uint row = x; row < pc.rows; row += VKBLR_ELT_WG) acc = acc + row_v[row];
    tree[x] = acc;
    barrier();
    for (uint s = VKBLR_ELT_WG / 2; s > 0; s >>= 1) {
      if (x < s) {
        precise const float sum = tree[x] + tree[x + s];
        tree[x] = sum;
      }
      barrier();
    }
    if (x == 0) sums[pc.blocks * pc.r] = tree[0];
  }
#endif
}
