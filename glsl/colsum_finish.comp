#version 460
// Column reduction, pass 2: SUM[c] (+)= Σ_blk PART[blk][c], the blocks in
// order (accumulate: add to SUM, else overwrite it). PART is f32
// [blocks][k], SUM f32 [k]; one invocation per column.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "colsum.h"

layout(local_size_x = VKBLR_COLSUM_WG) in;
layout(set = 0, binding = 3) restrict readonly buffer Partials { float part[]; };
layout(set = 0, binding = 4) restrict buffer Sum { float sum[]; };

// Partials are read CHUNK at a time, every load issued before the first
// add (one load in flight per invocation was bound by latency); the sum
// keeps block order.
#define CHUNK 16

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= pc.k) return;
  float acc = 0.0;
  for (uint b0 = 0; b0 < pc.blocks; b0 += CHUNK) {
    float v[CHUNK];
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) v[j] = b0 + j < pc.blocks ? part[(b0 + j) * pc.k + c] : 0.0;
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      if (b0 + j < pc.blocks) acc += v[j];
    }
  }
  sum[c] = pc.accumulate != 0 ? sum[c] + acc : acc;
}
