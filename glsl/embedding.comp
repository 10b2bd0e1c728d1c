#version 460
// Token embedding, IDS u32 [tokens], TABLE, DTABLE f32 [vocab][hidden],
// OUT, DY f32 [tokens][hidden]:
//   embedding_fwd  OUT[t][c] = TABLE[IDS[t]][c]; an id >= vocab gives a row
//                  of quiet NaNs (0x7fc00000): reported, never read out of
//                  bounds.
//   embedding_bwd  DTABLE[v][c] (+)= Σ_{k = OFFSETS[v]}^{OFFSETS[v+1]−1} DY[POSITIONS[k]][c]
//                  with OFFSETS u32 [vocab + 1], POSITIONS u32 [tokens] the
//                  index of embedding_index() (vkblr/ops/embedding.hpp): the
//                  token positions sorted by id, ascending within an id. The
//                  sum runs from +0 in that order, each addition rounded
//                  (precise), then DTABLE + sum when accumulating: a fixed
//                  order, no atomics, the same bits every run. Every element
//                  of DTABLE is written (rows no token uses: 0, or
//                  DTABLE + 0). Entries past `tokens` are ignored, so a
//                  malformed index cannot read out of bounds.
// Four elements per invocation, a quarter of the output apart (add.comp's
// pattern: coalesced passes, four loads in flight). embedding_bwd4 (hidden
// a multiple of 4) takes its elements as vec4 (pc.hidden, n and quarter
// count vec4): four times the bytes per invocation, each component summed
// as embedding_bwd sums it (the same bits).
// @variant embedding_fwd BACKWARD=0 VEC=1
// @variant embedding_bwd BACKWARD=1 VEC=1
// @variant embedding_bwd4 BACKWARD=1 VEC=4
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "embedding.h"

layout(local_size_x = VKBLR_ELT_WG) in;
#if BACKWARD == 0
layout(set = 0, binding = 0) restrict readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 1) restrict readonly buffer Table { float table[]; };
layout(set = 0, binding = 2) restrict writeonly buffer Out { float out_[]; };
#else
#if VEC == 4
#define ELT vec4
#else
#define ELT float
#endif
layout(set = 0, binding = 3) restrict readonly buffer DY { ELT dy[]; };
layout(set = 0, binding = 4) restrict readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 5) restrict readonly buffer Positions { uint positions[]; };
layout(set = 0, binding = 6) restrict buffer DTable { ELT dtable[]; };
#endif

void main() {
  const uint first = elt_index();
  if (first >= pc.quarter) return;
  uint e[4], row[4];
  bool live[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    e[j] = first + j * pc.quarter;
    live[j] = e[j] < pc.n;
    row[j] = e[j] / pc.hidden;
  }
#if BACKWARD == 0
  // Every slot's index load is issued before any slot's table load, and
  // every load before the first store (stores to the output could alias
  // later loads for all the compiler knows).
  uint id[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) id[j] = live[j] ? ids[row[j]] : pc.vocab;
  float v[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint c = e[j] - row[j] * pc.hidden;
    v[j] = id[j] < pc.vocab ? table[id[j] * pc.hidden + c] : uintBitsToFloat(0x7fc00000u);
  }
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    if (live[j]) out_[e[j]] = v[j];
  }
#else
  // One element at a time, its segment's positions in order.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    if (!live[j]) continue;
    const uint c = e[j] - row[j] * pc.hidden;
    const uint begin = offsets[row[j]], end = min(offsets[row[j] + 1], pc.tokens);
    precise ELT s = ELT(0.0);
    for (uint k = begin; k < end; ++k) {
      const uint pos = positions[k];
      if (pos < pc.tokens) s = s + dy[pos * pc.hidden + c];
    }
    if (pc.accumulate != 0) {
      precise const ELT a = dtable[e[j]] + s;
      dtable[e[j]] = a;
    } else {
      dtable[e[j]] = s;
    }
  }
#endif
}
