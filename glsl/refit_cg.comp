#version 460
// Jacobi-preconditioned conjugate gradients for G·x = b, G f32 [n][n]
// symmetric positive semi-definite (vkblr/ops/refit.hpp: the GPU refit's g
// step). One workgroup does the vector work of an iteration; the matrix
// product q = G·p (or G·x) is a GEMM recorded before each dispatch.
//   refit_cg_begin  Q = G·x: res = b − q, dinv_i = 1/G_ii (0 where G_ii <= 0:
//                   that coordinate never moves), p = dinv ⊙ res,
//                   rz = res·(dinv ⊙ res)
//   refit_cg_step   Q = G·p: α = rz / (p·q); x += α·p, res −= α·q,
//                   rz' = res·(dinv ⊙ res), p = dinv ⊙ res + (rz'/rz)·p,
//                   rz = rz'. When p·q <= 0, rz <= 0 or α is not finite
//                   (converged, or broken by rounding) the step changes
//                   nothing, so x stays where CG had brought it.
// STATE f32 [2n + 4]: res [n], dinv [n], rz. Every dot product is
// fixed-order (strided partial sums in index order, then a fixed tree).
// @variant refit_cg_begin MODE=0
// @variant refit_cg_step MODE=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "nan_preserve.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_REFIT_CG_WG) in;
layout(set = 0, binding = 0) readonly buffer GIn { float gram[]; };
layout(set = 0, binding = 1) readonly buffer BIn { float rhs[]; };
layout(set = 0, binding = 2) buffer X { float x[]; };
layout(set = 0, binding = 3) buffer P { float p[]; };
layout(set = 0, binding = 4) readonly buffer QIn { float q[]; };
layout(set = 0, binding = 5) buffer State { float state[]; };

shared float sums[VKBLR_REFIT_CG_WG];

// The workgroup's fixed-order sum of every invocation's `value`.
float workgroup_sum(float value) {
  const uint t = gl_LocalInvocationIndex;
  barrier();  // earlier reads of sums[] are done
  sums[t] = value;
  barrier();
  for (uint half_width = VKBLR_REFIT_CG_WG / 2; half_width > 0; half_width >>= 1) {
    if (t < half_width) sums[t] += sums[t + half_width];
    barrier();
  }
  return sums[0];
}

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint n = pc.rows;
  const uint res_at = 0, dinv_at = n, rz_at = 2 * n;
#if MODE == 0
  precise float rz = 0.0;
  for (uint i = t; i < n; i += VKBLR_REFIT_CG_WG) {
    const float d = gram[i * n + i];
    const float dinv = d > 0.0 ? 1.0 / d : 0.0;
    const float res = rhs[i] - q[i];
    const float z = dinv * res;
    state[res_at + i] = res;
    state[dinv_at + i] = dinv;
    p[i] = z;
    rz = rz + res * z;
  }
  const float total = workgroup_sum(rz);
  if (t == 0) state[rz_at] = total;
#else
  precise float pq_part = 0.0;
  for (uint i = t; i < n; i += VKBLR_REFIT_CG_WG) pq_part = pq_part + p[i] * q[i];
  const float pq = workgroup_sum(pq_part);
  const float rz = state[rz_at];
  const float alpha = rz / pq;
  if (!(pq > 0.0) || !(rz > 0.0) || isnan(alpha) || isinf(alpha)) return;  // uniform
  precise float rz_part = 0.0;
  for (uint i = t; i < n; i += VKBLR_REFIT_CG_WG) {
    x[i] = x[i] + alpha * p[i];
    const float res = state[res_at + i] - alpha * q[i];
    state[res_at + i] = res;
    rz_part = rz_part + res * (state[dinv_at + i] * res);
  }
  const float rz_new = workgroup_sum(rz_part);
  const float beta = rz_new / rz;
  for (uint i = t; i < n; i += VKBLR_REFIT_CG_WG) p[i] = state[dinv_at + i] * state[res_at + i] + beta * p[i];
  memoryBarrierBuffer();
  barrier();  // every invocation has read state[rz_at]
  if (t == 0) state[rz_at] = rz_new;
#endif
}
