#version 460
// Token embedding, IDS u32 [tokens], TABLE, DTABLE f32 [vocab][hidden],
// OUT, DY f32 [tokens][hidden]:
//   embedding_fwd  OUT[t][c] = TABLE[IDS[t]][c]; an id >= vocab gives a row
//                  of quiet NaNs (0x7fc00000): reported, never read out of
//                  bounds.
//   embedding_bwd  DTABLE[v][c] (+)= the sum of DY[POSITIONS[k]][c] over
//                  k in [OFFSETS[v], OFFSETS[v+1]), with OFFSETS u32
//                  [vocab + 1], POSITIONS u32 [tokens] the index of
//                  embedding_index() (vkblr/ops/embedding.hpp): the token
//                  positions sorted by id, ascending within an id. A
//                  segment of at most C = VKBLR_EMBEDDING_CHUNK positions
//                  is summed from +0 in that order. A longer one is cut
//                  into pieces of C from its start (the last shorter):
//                  embedding_bwd_chunks sums each piece from +0 in order
//                  into PIECES, then embedding_bwd adds the pieces from +0
//                  in order. Each addition is rounded (precise), then
//                  DTABLE + sum when accumulating: a fixed order, no
//                  atomics, the same bits every run, and a row's bits do
//                  not depend on the other ids of the batch. Every element
//                  of DTABLE is written (rows no token uses: 0, or
//                  DTABLE + 0).
//   embedding_bwd_chunks  PIECES[slot][c] = the piece's sum, for each entry
//                  (begin, end, slot) of CHUNKS u32 [slots][3] with
//                  begin < end (unused entries are zero). The piece j of
//                  the segment starting at k = b is at slot 2·⌊b/C⌋ + j:
//                  embedding_bwd finds its pieces from OFFSETS alone, and
//                  no two segments share a slot (each spans more than C).
// Indices past `tokens` or `slots` are ignored, so a malformed index cannot
// read out of bounds (its sums are then wrong, not undefined).
// Four elements per invocation, a quarter of the output apart (add.comp's
// pattern: coalesced passes, four loads in flight); the chunks pass one.
// The *4 variants (hidden a multiple of 4) take their elements as vec4
// (pc.hidden, n and quarter count vec4): each component summed as the
// float variant sums it (the same bits).
// @variant embedding_fwd BACKWARD=0 VEC=1
// @variant embedding_bwd BACKWARD=1 VEC=1
// @variant embedding_bwd4 BACKWARD=1 VEC=4
// @variant embedding_bwd_chunks BACKWARD=2 VEC=1
// @variant embedding_bwd_chunks4 BACKWARD=2 VEC=4
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
layout(set = 0, binding = 5) restrict readonly buffer Positions { uint positions[]; };
#if BACKWARD == 1
layout(set = 0, binding = 4) restrict readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 6) restrict buffer DTable { ELT dtable[]; };
layout(set = 0, binding = 8) restrict readonly buffer Pieces { ELT pieces[]; };
#else
layout(set = 0, binding = 7) restrict readonly buffer Chunks { uint chunks[]; };
layout(set = 0, binding = 8) restrict writeonly buffer Pieces { ELT pieces[]; };
#endif

// Σ DY[POSITIONS[k]][c] over k in [begin, end), from +0 in order.
ELT segment_sum(uint begin, uint end, uint c) {
  precise ELT s = ELT(0.0);
  for (uint k = begin; k < end; ++k) {
    const uint pos = positions[k];
    if (pos < pc.tokens) s = s + dy[pos * pc.hidden + c];
  }
  return s;
}
#endif

void main() {
#if BACKWARD == 2
  const uint e = elt_index();
  if (e >= pc.n) return;
  const uint q = e / pc.hidden, c = e - q * pc.hidden;
  const uint begin = chunks[3 * q], end = min(chunks[3 * q + 1], pc.tokens), slot = chunks[3 * q + 2];
  if (begin < end && slot < pc.slots) pieces[slot * pc.hidden + c] = segment_sum(begin, end, c);
#else
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
  // One element at a time: a short segment's positions in order, or a long
  // one's pieces in order.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    if (!live[j]) continue;
    const uint c = e[j] - row[j] * pc.hidden;
    const uint begin = offsets[row[j]], end = min(offsets[row[j] + 1], pc.tokens);
    const uint len = end > begin ? end - begin : 0u;
    precise ELT s = ELT(0.0);
    if (len <= VKBLR_EMBEDDING_CHUNK) {
      s = segment_sum(begin, end, c);
    } else {
      const uint first_slot = 2 * (begin / VKBLR_EMBEDDING_CHUNK);
      const uint count = (len + VKBLR_EMBEDDING_CHUNK - 1) / VKBLR_EMBEDDING_CHUNK;
      for (uint slot = first_slot; slot < min(first_slot + count, pc.slots); ++slot) {
        s = s + pieces[slot * pc.hidden + c];
      }
    }
    if (pc.accumulate != 0) {
      precise const ELT a = dtable[e[j]] + s;
      dtable[e[j]] = a;
    } else {
      dtable[e[j]] = s;
    }
  }
#endif
#endif
}
