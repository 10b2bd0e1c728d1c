#version 460
// Rotary position embedding (Hugging Face Llama's rotate_half convention),
// in place on X f32 [tokens][heads][2·half] (a row of q or of k), with
// POSITIONS u32 [tokens] and TABLE f32 [max_positions][half][2] = (cos θ,
// sin θ), θ = pos · base^(−2i/head_dim), correctly rounded from f64 on the
// host (vkblr::ops::rope_table). For each token, head and i < half, with
// a = X[i], b = X[i + half], c, s = TABLE[pos][i], each product rounded,
// then the sum (precise: no fused multiply-add):
//   rope_fwd (inverse = 0)  X[i] = a·c − b·s,  X[i + half] = b·c + a·s
//   rope_bwd (inverse = 1)  X[i] = a·c + b·s,  X[i + half] = b·c − a·s
// (the transpose, i.e. the inverse rotation: the gradient of the forward).
// A position >= max_positions writes quiet NaNs (0x7fc00000) to both:
// reported, never read out of bounds.
// rope rotates X alone; rope_qk rotates Q (binding 0) and K (binding 3,
// [tokens][k_heads][2·half]) in one dispatch, the first q_groups
// workgroups on Q and the rest on K, each pair as rope would.
// Four pairs per invocation, a quarter of the pairs apart (add.comp's
// pattern), all loaded before any is written.
// @variant rope TWO=0
// @variant rope_qk TWO=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rope.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict buffer X { float x[]; };
layout(set = 0, binding = 1) restrict readonly buffer Positions { uint positions[]; };
layout(set = 0, binding = 2) restrict readonly buffer Table { vec2 table[]; };
#if TWO
layout(set = 0, binding = 3) restrict buffer K { float k_[]; };
#endif

// The element i of X, or of K where on_k (uniform in a workgroup).
float load(bool on_k, uint i) {
#if TWO
  if (on_k) return k_[i];
#endif
  return x[i];
}

void store(bool on_k, uint i, float v) {
#if TWO
  if (on_k) {
    k_[i] = v;
    return;
  }
#endif
  x[i] = v;
}

void main() {
  const uint index = elt_index();
#if TWO
  const bool on_k = index / VKBLR_ELT_WG >= pc.q_groups;
#else
  const bool on_k = false;
#endif
  const uint first = on_k ? index - pc.q_groups * VKBLR_ELT_WG : index;
  const uint heads = on_k ? pc.k_heads : pc.heads, n = on_k ? pc.k_n : pc.n,
             quarter = on_k ? pc.k_quarter : pc.quarter;
  if (first >= quarter) return;
  // Every load of the four pairs is issued before the first store (the
  // stores to X could alias later loads for all the compiler knows, so a
  // pair-by-pair loop would wait on memory four times).
  uint lo[4], pos[4];
  bool live[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint p = first + j * quarter;
    live[j] = p < n;
    const uint i = p % pc.half_dim, head_row = p / pc.half_dim;  // head_row = token · heads + head
    lo[j] = head_row * 2 * pc.half_dim + i;
    pos[j] = live[j] ? positions[head_row / heads] : 0u;
  }
  float a[4], b[4];
  vec2 cs[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    a[j] = live[j] ? load(on_k, lo[j]) : 0.0;
    b[j] = live[j] ? load(on_k, lo[j] + pc.half_dim) : 0.0;
    const uint i = lo[j] % (2 * pc.half_dim);
    cs[j] = live[j] && pos[j] < pc.max_positions ? table[pos[j] * pc.half_dim + i] : vec2(0.0);
  }
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    if (!live[j]) continue;
    const uint hi = lo[j] + pc.half_dim;
    if (pos[j] >= pc.max_positions) {
      store(on_k, lo[j], uintBitsToFloat(0x7fc00000u));
      store(on_k, hi, uintBitsToFloat(0x7fc00000u));
      continue;
    }
    precise float out_lo, out_hi;
    if (pc.inverse == 0) {
      out_lo = a[j] * cs[j].x - b[j] * cs[j].y;
      out_hi = b[j] * cs[j].x + a[j] * cs[j].y;
    } else {
      out_lo = a[j] * cs[j].x + b[j] * cs[j].y;
      out_hi = b[j] * cs[j].x - a[j] * cs[j].y;
    }
    store(on_k, lo[j], out_lo);
    store(on_k, hi, out_hi);
  }
}
