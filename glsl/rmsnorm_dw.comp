#version 460
// RMSNorm backward, pass 2: DW f32 [hidden] (+)= the sum of PART f32
// [blocks][hidden] (rmsnorm_bwd.comp's partials) over its blocks, in a
// fixed order: the blocks cut into SLICES slices of ceil(blocks / SLICES)
// consecutive blocks, each slice's sum from +0 in block order, then the
// slices' sums in slice order (each addition rounded: precise), then DW +
// sum when accumulating (accumulate_dw). A workgroup takes COLS_PER_GROUP
// columns, an invocation one slice of one column. No atomics: the same
// bits every run.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rmsnorm.h"

layout(constant_id = 0) const uint COLS_PER_GROUP = VKBLR_RMSNORM_DW_COLS;
layout(constant_id = 1) const uint SLICES = VKBLR_RMSNORM_DW_SLICES;
layout(local_size_x_id = 2) in;  // COLS_PER_GROUP · SLICES
layout(set = 0, binding = 7) restrict readonly buffer Partials { float part[]; };
layout(set = 0, binding = 3) restrict buffer DW { float dw[]; };

// Partials are read CHUNK at a time, every load issued before the first add.
#define CHUNK 16

shared float slice_s[SLICES][COLS_PER_GROUP];

void main() {
  const uint col = gl_LocalInvocationIndex % COLS_PER_GROUP;
  const uint slice = gl_LocalInvocationIndex / COLS_PER_GROUP;
  const uint c = gl_WorkGroupID.x * COLS_PER_GROUP + col;
  const uint per = (pc.blocks + SLICES - 1) / SLICES;
  const uint b_begin = min(slice * per, pc.blocks), b_end = min(b_begin + per, pc.blocks);
  precise float acc = 0.0;
  if (c < pc.hidden) {
    for (uint b0 = b_begin; b0 < b_end; b0 += CHUNK) {
      float v[CHUNK];
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) v[j] = b0 + j < b_end ? part[(b0 + j) * pc.hidden + c] : 0.0;
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
        if (b0 + j < b_end) acc = acc + v[j];
      }
    }
  }
  slice_s[slice][col] = acc;
  barrier();
  if (slice == 0 && c < pc.hidden) {
    precise float total = slice_s[0][col];
    [[unroll]] for (uint s = 1; s < SLICES; ++s) total = total + slice_s[s][col];
    if (pc.accumulate_dw != 0) {
      precise const float a = dw[c] + total;
      dw[c] = a;
    } else {
      dw[c] = total;
    }
  }
}
