// rope.h — push constants of the rotary position embedding (rope.comp).
#ifndef VKBLR_ROPE_H
#define VKBLR_ROPE_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(RopePush) {
  uint tokens;         // rows of Q (and K)
  uint heads;          // heads per row of Q
  uint half_dim;       // head_dim / 2: the pairs (i, i + half_dim) of a head
  uint max_positions;  // rows of the cos/sin table
  uint n;              // pairs of Q: tokens · heads · half_dim
  uint quarter;        // ceil(n / 4): invocation j of Q handles pairs j, j + quarter, j + 2·quarter, j + 3·quarter
  uint inverse;        // 1: rotate by −θ (the backward)
  uint q_groups;       // rope_qk: workgroups on Q; those after them rotate K
  uint k_heads;        // rope_qk: heads per row of K
  uint k_n;            // rope_qk: pairs of K
  uint k_quarter;      // rope_qk: ceil(k_n / 4)
  uint reserved;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
