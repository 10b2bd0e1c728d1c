#version 460
// Small dense f32 linears, one invocation per output element:
//   dense_fwd  OUT[m][r] (+)= A[m][k] · W[r][k]ᵀ   (accumulate flag)
//   dense_bwd  OUT[m][k]  += A[m][r] · W[r][k]     (the input gradient: A = dy)
// Every output sums its terms in index order (j = 0..k-1, o = 0..r-1) with
// one fma() per term into a precise accumulator (GLSL: such an fma is
// computed with the same precision wherever it appears), so the tiled
// kernels (dense_fwd_t.comp, dense_bwd_t.comp), which sum the same terms in
// the same order the same way, agree with these bit for bit.
// @variant dense_fwd BACKWARD=0
// @variant dense_bwd BACKWARD=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dense.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer In { float a[]; };
layout(set = 0, binding = 1) readonly buffer Weight { float w[]; };
layout(set = 0, binding = 2) buffer Out { float dst[]; };

void main() {
  const uint i = elt_index();
#if BACKWARD == 0
  if (i >= pc.m * pc.r) return;
  const uint row = i / pc.r;
  const uint o = i % pc.r;
  precise float acc = 0.0;
  for (uint j = 0; j < pc.k; ++j) acc = fma(a[row * pc.k + j], w[o * pc.k + j], acc);
  dst[i] = pc.accumulate != 0 ? dst[i] + acc : acc;
#else
  if (i >= pc.m * pc.k) return;
  const uint row = i / pc.k;
  const uint j = i % pc.k;
  precise float acc = 0.0;
  for (uint o = 0; o < pc.r; ++o) acc = fma(a[row * pc.r + o], w[o * pc.k + j], acc);
  dst[i] += acc;
#endif
}
