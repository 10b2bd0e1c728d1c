#version 460
// Adam, with decoupled weight decay (AdamW) when λ = weight_decay > 0, one
// invocation per entry i < n:
//   g  = G[i] · grad_scale
//   m  = β1·M1[i] + (1 − β1)·g            M1[i] = m
//   v  = β2·M2[i] + (1 − β2)·g·g          M2[i] = v
//   s  = lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps)
//   w  = W[i] · (1 − lr·λ)           when λ > 0 (not evaluated when λ = 0)
//   W[i] = w − s · max(|w|, floor)   when floor > 0 (a step relative to the value)
//   W[i] = w − s                     otherwise
// An entry whose mask is 0 is left untouched (W, M1, M2).
//   adam      mask optional (push flag `masked`), one floor for all (push)
//   adam_cat  a concatenation of parameters: MASK and FLOOR per entry
// STORE = 1 / 2 (the _f16 / _bf16 variants): COPY[i] = the new W[i] rounded
// to f16 / bf16, to nearest even (round16.glsl: half.hpp's bits), for every
// entry, frozen ones included, so the copy equals the rounded master after
// every step that ran; a skipped step writes nothing.
// The arithmetic is evaluated exactly as written, left to right, each
// operation rounded on its own (precise: no fused multiply-adds), so adam_cat
// reproduces adam bit for bit and a host can replay it in f32. lr and t come
// from the push constants or, for a Graph replayed with changing values,
// from the SCALARS slot (flag `live`; its third word, when nonzero, skips
// the update); β^t is computed here from t.
// @variant adam CONCAT=0 STORE=0
// @variant adam_cat CONCAT=1 STORE=0
// @variant adam_f16 CONCAT=0 STORE=1
// @variant adam_bf16 CONCAT=0 STORE=2
// @variant adam_cat_f16 CONCAT=1 STORE=1
// @variant adam_cat_bf16 CONCAT=1 STORE=2
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "adam.h"
#include "round16.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) buffer Weights { float weights[]; };
layout(set = 0, binding = 1) readonly buffer Grads { float grads[]; };
layout(set = 0, binding = 2) buffer Moment1 { float moment1[]; };
layout(set = 0, binding = 3) buffer Moment2 { float moment2[]; };
layout(set = 0, binding = 4) readonly buffer Mask { float mask[]; };
#if CONCAT == 1
layout(set = 0, binding = 5) readonly buffer Floors { float floors[]; };
#endif
layout(set = 0, binding = 6) readonly buffer Scalars { uint scalars[]; };
#if STORE != 0
layout(set = 0, binding = 7) restrict writeonly buffer Copy { uint16_t copy16[]; };
#endif

// The storage copy of entry i (nothing without STORE).
void store_copy(uint i, float w) {
#if STORE == 1
  copy16[i] = uint16_t(f16_bits_rne(w));
#elif STORE == 2
  copy16[i] = uint16_t(bf16_bits_rne(w));
#endif
}

void main() {
  const uint i = elt_index();
  if (i >= pc.n) return;
  float lr = pc.lr;
  uint step = pc.step;
  if (pc.live != 0) {
    if (scalars[pc.live_word + 2] != 0u) return;  // skipped step (non-finite gradients)
    lr = uintBitsToFloat(scalars[pc.live_word]);
    step = scalars[pc.live_word + 1];
  }
#if CONCAT == 1
  const bool frozen = mask[i] == 0.0;
#else
  const bool frozen = pc.masked != 0 && mask[i] == 0.0;
#endif
  if (frozen) {
#if STORE != 0
    store_copy(i, weights[i]);
#endif
    return;
  }
#if CONCAT == 1
  const float floor_ = floors[i];
#else
  const float floor_ = pc.rel_floor;
#endif
  const float t = float(step);
  precise const float g = grads[i] * pc.grad_scale;
  precise const float m = pc.beta1 * moment1[i] + (1.0 - pc.beta1) * g;
  precise const float v = pc.beta2 * moment2[i] + (1.0 - pc.beta2) * g * g;
  moment1[i] = m;
  moment2[i] = v;
  precise const float m_hat = m / (1.0 - pow(pc.beta1, t));
  precise const float v_hat = v / (1.0 - pow(pc.beta2, t));
  precise const float s = lr * m_hat / (sqrt(v_hat) + pc.eps);
  precise float w = weights[i];
  if (pc.weight_decay != 0.0) w = w * (1.0 - lr * pc.weight_decay);
  precise const float updated = floor_ > 0.0 ? w - s * max(abs(w), floor_) : w - s;
  weights[i] = updated;
  store_copy(i, updated);
}
