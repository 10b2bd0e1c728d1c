#version 460
// Adam without weight decay, one invocation per entry i < n:
//   g  = G[i] · grad_scale
//   m  = β1·M1[i] + (1 − β1)·g            M1[i] = m
//   v  = β2·M2[i] + (1 − β2)·g·g          M2[i] = v
//   s  = lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps)
//   W[i] −= s · max(|W[i]|, floor)   when floor > 0 (a step relative to the value)
//   W[i] −= s                        otherwise
// An entry whose mask is 0 is left untouched (W, M1, M2).
//   adam      mask optional (push flag `masked`), one floor for all (push)
//   adam_cat  a concatenation of parameters: MASK and FLOOR per entry
// The arithmetic is evaluated exactly as written, left to right, each
// operation rounded on its own (precise: no fused multiply-adds), so adam_cat
// reproduces adam bit for bit and a host can replay it in f32. lr and t come
// from the push constants or, for a Graph replayed with changing values,
// from the SCALARS slot (flag `live`; its third word, when nonzero, skips
// the update); β^t is computed here from t.
// @variant adam CONCAT=0
// @variant adam_cat CONCAT=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "adam.h"

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

void main() {
  const uint i = elt_index();
  if (i >= pc.n) return;
#if CONCAT == 1
  if (mask[i] == 0.0) return;
  const float floor_ = floors[i];
#else
  if (pc.masked != 0 && mask[i] == 0.0) return;
  const float floor_ = pc.rel_floor;
#endif
  float lr = pc.lr;
  uint step = pc.step;
  if (pc.live != 0) {
    if (scalars[pc.live_word + 2] != 0u) return;  // skipped step (non-finite gradients)
    lr = uintBitsToFloat(scalars[pc.live_word]);
    step = scalars[pc.live_word + 1];
  }
  const float t = float(step);
  precise const float g = grads[i] * pc.grad_scale;
  precise const float m = pc.beta1 * moment1[i] + (1.0 - pc.beta1) * g;
  precise const float v = pc.beta2 * moment2[i] + (1.0 - pc.beta2) * g * g;
  moment1[i] = m;
  moment2[i] = v;
  precise const float m_hat = m / (1.0 - pow(pc.beta1, t));
  precise const float v_hat = v / (1.0 - pow(pc.beta2, t));
  precise const float s = lr * m_hat / (sqrt(v_hat) + pc.eps);
  const float w = weights[i];
  precise const float updated = floor_ > 0.0 ? w - s * max(abs(w), floor_) : w - s;
  weights[i] = updated;
}
