#version 460
// SwiGLU, h = silu(g)·u with silu(g) = g·σ(g), per element of [tokens][inter]:
//   swiglu_fwd        H = silu(G)·U                          G, U, H f32 [tokens][inter]
//   swiglu_bwd        DG = DH·U·σ'(G)·..., DU = DH·silu(G)   (below)
//   swiglu_fwd_fused  the same, G and U read from GU f32 [tokens][2·inter]
//   swiglu_bwd_fused  (row t: gate in columns 0..inter−1, up in inter..2·inter−1;
//                     DGU is written in the same layout)
// With s = σ(g) = 1/(1 + e^−g) and its complement s̄ = 1 − s = σ(−g),
// evaluated without overflow and without cancellation as
//   e = exp(−|g|),  s = (g >= 0 ? 1 : e) / (1 + e),  s̄ = (g >= 0 ? e : 1) / (1 + e),
// every value is rounded in this order (precise: no contraction, so the
// fused and unfused layouts give the same bits):
//   silu = g·s;                       h  = silu·u
//   ds   = s·(1 + g·s̄)                (d silu / dg)
//   du   = dh·silu;                   dg = (dh·u)·ds
// @variant swiglu_fwd FUSED=0 BACKWARD=0
// @variant swiglu_bwd FUSED=0 BACKWARD=1
// @variant swiglu_fwd_fused FUSED=1 BACKWARD=0
// @variant swiglu_bwd_fused FUSED=1 BACKWARD=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "swiglu.h"

layout(local_size_x = VKBLR_ELT_WG) in;
#if FUSED == 0
layout(set = 0, binding = 0) restrict readonly buffer G { float gate[]; };
layout(set = 0, binding = 1) restrict readonly buffer U { float up[]; };
#else
layout(set = 0, binding = 0) restrict readonly buffer GU { float gu[]; };
#endif
#if BACKWARD == 0
layout(set = 0, binding = 2) restrict writeonly buffer H { float h[]; };
#else
layout(set = 0, binding = 3) restrict readonly buffer DH { float dh[]; };
#if FUSED == 0
layout(set = 0, binding = 4) restrict writeonly buffer DG { float dgate[]; };
layout(set = 0, binding = 5) restrict writeonly buffer DU { float dup[]; };
#else
layout(set = 0, binding = 4) restrict writeonly buffer DGU { float dgu[]; };
#endif
#endif

// σ(g) and σ(−g) = 1 − σ(g), neither through an overflowing exponential.
void sigmoids(float g, out float s, out float s_bar) {
  precise const float e = exp(-abs(g));
  precise const float d = 1.0 + e;
  precise const float up_ = (g >= 0.0 ? 1.0 : e) / d;
  precise const float down_ = (g >= 0.0 ? e : 1.0) / d;
  s = up_;
  s_bar = down_;
}

// Four elements per invocation, a quarter of h apart (each pass coalesced).
void main() {
  const uint first = elt_index();
  if (first >= pc.quarter) return;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    if (i >= pc.n) continue;
#if FUSED == 0
    const uint at_g = i, at_u = i;
    const float g = gate[i];
    const float u = up[i];
#else
    const uint at_g = i + (i / pc.inter) * pc.inter;  // row·2·inter + column
    const uint at_u = at_g + pc.inter;
    const float g = gu[at_g];
    const float u = gu[at_u];
#endif
    float s, s_bar;
    sigmoids(g, s, s_bar);
    precise const float silu = g * s;
#if BACKWARD == 0
    precise const float out_h = silu * u;
    h[i] = out_h;
#else
    const float d = dh[i];
    precise const float ds = s * (1.0 + g * s_bar);
    precise const float du = d * silu;
    precise const float dg = d * u * ds;
#if FUSED == 0
    dgate[at_g] = dg;
    dup[at_u] = du;
#else
    dgu[at_g] = dg;
    dgu[at_u] = du;
#endif
#endif
  }
}
