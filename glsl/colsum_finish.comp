#version 460
// Column reduction, pass 2: SUM[c] (+)= Σ_blk PART[blk][c], the blocks in
// order (accumulate: add to SUM, else overwrite it). PART is f32
// [blocks][k], SUM f32 [k]; one invocation per column.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "colsum.h"

layout(local_size_x = VKBLR_COLSUM_WG) in;
layout(set = 0, binding = 3) readonly buffer Partials { float part[]; };
layout(set = 0, binding = 4) buffer Sum { float sum[]; };

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= pc.k) return;
  float acc = 0.0;
  for (uint blk = 0; blk < pc.blocks; ++blk) acc += part[blk * pc.k + c];
  sum[c] = pc.accumulate != 0 ? sum[c] + acc : acc;
}
