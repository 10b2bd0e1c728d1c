#version 460
// Pass 2 of the losses over a vocabulary in slices: one slice's gradient
// with respect to its logits, staged in f16 for the two gradient GEMMs
// (logit_loss.h; STATE as the last stats kernel left it).
//   ce_grad  g = exp(Z − lse) − [v0 + c = target]         (softmax − onehot)
//   kl_grad  g = exp(Z·inv_tau − lse) − exp(ZT·inv_tau − lse_t)   (p_s − p_t)
// for counted tokens and columns c < cols; g = 0 for ignored tokens (and
// ids >= vocab), for columns cols..ldz-1 and tokens tokens..ldt-1. Written
// twice, as f16(g · gscale):
//   DZ  f16 [tokens][ldz]  (the act of the dh GEMM: dh += DZ · W_slice)
//   DZT f16 [ldz][ldt]     (its transpose, the dW GEMM's act over tokens)
// A 32×32 tile goes through shared memory (rows padded to 33) so that the
// reads and both writes are coalesced; the grid is ldz/32 × ldt/32 tiles.
// The loss's own factors (1/count, τ for the KL) are the GEMMs' output scale.
// @variant ce_grad KIND=0
// @variant kl_grad KIND=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "logit_loss.h"

layout(local_size_x = 32, local_size_y = 8) in;
layout(set = 0, binding = 0) restrict readonly buffer Z { float z[]; };
#if KIND == 1
layout(set = 0, binding = 1) restrict readonly buffer ZT { float zt[]; };
#else
layout(set = 0, binding = 2) restrict readonly buffer Ids { uint ids[]; };
#endif
layout(set = 0, binding = 3) restrict readonly buffer State { float state[]; };
layout(set = 0, binding = 5) restrict writeonly buffer DZ { float16_t dz[]; };
layout(set = 0, binding = 6) restrict writeonly buffer DZT { float16_t dzt[]; };

shared float tile[32 * 33];

void main() {
  const uint c0 = gl_WorkGroupID.x * 32;
  const uint t0 = gl_WorkGroupID.y * 32;
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  for (uint j = 0; j < 32; j += 8) {
    const uint t = t0 + ly + j;
    const uint c = c0 + lx;
    float g = 0.0;
    if (t < pc.tokens && c < pc.cols && state[t * VKBLR_LL_STATE + VKBLR_LL_COUNT] > 0.5) {
      const uint at = t * VKBLR_LL_STATE;
#if KIND == 0
      precise float p = exp(z[t * pc.ldz + c] - state[at + VKBLR_LL_LSE]);
      if (ids[t] - pc.v0 == c) p = p - 1.0;  // ids >= v0 + cols never match
#else
      precise const float b = z[t * pc.ldz + c] * pc.inv_tau;
      precise const float a = zt[t * pc.ldz + c] * pc.inv_tau;
      precise const float p = exp(b - state[at + VKBLR_LL_LSE]) - exp(a - state[at + VKBLR_LL_LSE_T]);
#endif
      g = p;
    }
    precise const float staged = g * pc.gscale;
    tile[(ly + j) * 33 + lx] = staged;
    if (t < pc.tokens) dz[t * pc.ldz + c] = float16_t(staged);
  }
  barrier();
  for (uint j = 0; j < 32; j += 8) {
    const uint c = c0 + ly + j;
    const uint t = t0 + lx;
    dzt[c * pc.ldt + t] = float16_t(tile[lx * 33 + ly + j]);
  }
}
