#version 460
// One optimizer step of a sign matrix (rows × r, n = rows·r signs), one
// invocation per sign i (row i / r, column j = i % r) with its sign s from
// BITS (bit i % 32 of word i / 32, 1 = +1):
//   g = G[i]·grad_scale
//   m = β1·M[i] + (1 − β1)·g                                  M[i] = m
//   adam, fact:
//     adam  v = β2·V[i] + (1 − β2)·g·g                        V[i] = v
//           v̂ = v / (1 − β2^t)
//     fact  v̂ = ((R[row]·C[j]) / ΣR) / (1 − β2^t), 0 when ΣR = 0
//           (R, C and ΣR = SUMS[blocks·r] updated by sign_fact before)
//     w = min(max(W[i] − (lr·(m / (1 − β1^t))) / (sqrt(v̂) + eps), −clamp), clamp)
//                                                             W[i] = w
//     candidate: s = −1 and w > +hyst, or s = +1 and w < −hyst; score |w|
//     latents with |w| <= hyst are counted (in band)
//   bop: candidate: s·m > tau; score s·m
// With bf16 state (BF16 = 1) every stored value is rounded stochastically
// (sign_common.glsl; t is the stream's step) and the decisions read the
// value as stored. Arithmetic precise, in the order written: a host
// replays the moments bit for bit (pow, sqrt and the divisions are not
// exact in Vulkan; the latent is, up to those).
// No budget (pc.budget = 0): candidates flip here (sign_commit.glsl).
// Budget: SCORES[i] = the score's f32 bits for a candidate, 0 otherwise
// (scores are > 0, so the bits order as the values); sign_select and
// sign_apply choose the flips. lr and t come from the push constants or,
// live, from SCALARS.
// @variant sign_update_adam OPT=0 BF16=0
// @variant sign_update_adam_bf16 OPT=0 BF16=1
// @variant sign_update_fact OPT=1 BF16=0
// @variant sign_update_fact_bf16 OPT=1 BF16=1
// @variant sign_update_bop OPT=2 BF16=0
// @variant sign_update_bop_bf16 OPT=2 BF16=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"
#include "sign_common.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Grad { float grad[]; };
#if OPT != 2
layout(set = 0, binding = 1) buffer Latent { STATE_T latent[]; };
#endif
layout(set = 0, binding = 2) buffer Moment1 { STATE_T moment1[]; };
#if OPT == 0
layout(set = 0, binding = 3) buffer Moment2 { STATE_T moment2[]; };
#endif
#if OPT == 1
layout(set = 0, binding = 4) readonly buffer RowV { float row_v[]; };
layout(set = 0, binding = 5) readonly buffer ColV { float col_v[]; };
layout(set = 0, binding = 6) readonly buffer Sums { float sums[]; };
#endif
layout(set = 0, binding = 7) buffer Bits { uint bits[]; };
layout(set = 0, binding = 8) buffer Flipped { uint flipped[]; };
layout(set = 0, binding = 9) buffer Counters { uint counters[]; };
layout(set = 0, binding = 10) writeonly buffer Scores { uint scores[]; };
layout(set = 0, binding = 11) readonly buffer Scalars { uint scalars[]; };

#include "sign_commit.glsl"

#include "live_skip.glsl"

void main() {
  if (step_skipped()) return;  // uniform: every invocation reads the same word
  const uint i = elt_index();
  sign_commit_begin();
  if (i < pc.n) {
    float lr = pc.lr;
    uint t = pc.step;
    if (pc.live != 0) {
      lr = uintBitsToFloat(scalars[pc.live_word]);
      t = scalars[pc.live_word + 1];
    }
    const bool s = ((bits[i / 32] >> (i % 32)) & 1u) != 0;
    precise const float g = grad[i] * pc.grad_scale;
    precise const float m_new = pc.beta1 * state_value(moment1[i]) + (1.0 - pc.beta1) * g;
    const float m = state_round(m_new, i, SIGN_FIELD_M, t);
    moment1[i] = state_word(m);
#if OPT == 2
    const float score = s ? m : -m;
    const bool candidate = score > pc.tau;
#else
    const float tf = float(t);
#if OPT == 0
    precise const float v_new = pc.beta2 * state_value(moment2[i]) + (1.0 - pc.beta2) * g * g;
    const float v = state_round(v_new, i, SIGN_FIELD_V, t);
    moment2[i] = state_word(v);
    precise const float v_hat = v / (1.0 - pow(pc.beta2, tf));
#else
    const float total = sums[pc.blocks * pc.r];
    precise const float v_fact = row_v[i / pc.r] * col_v[i % pc.r] / total / (1.0 - pow(pc.beta2, tf));
    const float v_hat = total > 0.0 ? v_fact : 0.0;
#endif
    precise const float m_hat = m / (1.0 - pow(pc.beta1, tf));
    precise const float moved = state_value(latent[i]) - lr * m_hat / (sqrt(v_hat) + pc.eps);
    const float w = state_round(min(max(moved, -pc.clamp), pc.clamp), i, SIGN_FIELD_W, t);
    latent[i] = state_word(w);
    if (abs(w) <= pc.hyst) atomicAdd(wg_in_band, 1u);
    const bool candidate = s ? w < -pc.hyst : w > pc.hyst;
    // the budget ranks candidates by their gradient evidence |m|, not by |w|:
    // Adam moves every latent at about lr per step whatever the gradient's
    // size, so |w| says little about which flip helps most
    const float score = max(abs(m), 1.17549435e-38);
#endif
    if (pc.budget != 0) {
      scores[i] = candidate ? floatBitsToUint(score) : 0u;
    } else if (candidate) {
      sign_mark_flip();
    }
  }
  sign_commit_end();
}
