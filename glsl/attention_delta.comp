#version 460
// The backward's row statistic of causal attention (attention.h):
//   delta[t][h] = (Σ_d do[t][h·D + d] · o[t][h·D + d]) · gscale
// = rowsum(do ⊙ o), scaled as the cooperative-matrix path stages do
// (pc.gscale; 1 on the plain path). One invocation per (token,
// head), the head's D values summed four at a time in d order: a fixed
// order, the same bits run after run. D4 = head_dim / 4 is a specialization
// constant, so the row's loads are all issued before the first dot product.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(constant_id = 0) const uint D4 = 16;  // head_dim / 4
layout(set = 0, binding = 3) restrict readonly buffer O { vec4 o4[]; };
layout(set = 0, binding = 5) restrict readonly buffer DO { vec4 do4[]; };
layout(set = 0, binding = 6) restrict writeonly buffer Delta { float delta[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.tokens * pc.heads) return;
  const uint row = i / pc.heads;
  const uint h = i % pc.heads;
  const uint first = (row * pc.q_stride + h * pc.head_dim) / 4;
  vec4 a[D4], b[D4];
  [[unroll]] for (uint j = 0; j < D4; ++j) {
    a[j] = do4[first + j];
    b[j] = o4[first + j];
  }
  float s = 0.0;
  [[unroll]] for (uint j = 0; j < D4; ++j) s += dot(a[j], b[j]);
  delta[i] = s * pc.gscale;
}
