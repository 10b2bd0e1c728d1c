#version 460
// Per-head q/gate rows. QG is [m][heads][2·hd]: each head's row holds its
// q (hd values) then its gate (hd values); Q and GATE are [m][heads·hd].
//   split_qg  Q, GATE <- QG
//   merge_qg  QG <- Q, GATE   (the reverse, for the gradients)
// One invocation per element of Q; both directions move values unchanged.
// @variant split_qg MERGE=0
// @variant merge_qg MERGE=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "split_qg.h"

#if MERGE == 0
#define QG_ACCESS readonly
#define PARTS_ACCESS writeonly
#else
#define QG_ACCESS writeonly
#define PARTS_ACCESS readonly
#endif

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) QG_ACCESS buffer QG { float qg[]; };
layout(set = 0, binding = 1) PARTS_ACCESS buffer Q { float q[]; };
layout(set = 0, binding = 2) PARTS_ACCESS buffer Gate { float gate[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.m * pc.width) return;
  const uint row = i / pc.width;
  const uint c = i % pc.width;
  const uint head = c / pc.head_dim;
  const uint d = c % pc.head_dim;
  const uint at = (row * pc.width + head * pc.head_dim) * 2 + d;  // q of (row, head, d) in QG
#if MERGE == 0
  q[i] = qg[at];
  gate[i] = qg[at + pc.head_dim];
#else
  qg[at] = q[i];
  qg[at + pc.head_dim] = gate[i];
#endif
}
