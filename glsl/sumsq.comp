#version 460
// Partial sums of squares for gradient norms, 64 workgroups per vector:
//   sumsq      OUT[x] = Σ A[i]² over i < n with (i / 256) mod 64 = x
//   sumsq_cat  the same for every parameter y of a concatenation A:
//              TABLE[2y], TABLE[2y + 1] = its offset and length (elements);
//              OUT[64y + x] = its partial x (grid 64 × parameters)
// Invocation t of workgroup x sums its elements in index order (precise:
// square and sum rounded separately), then the workgroup adds the 256 sums
// in a fixed tree; the same vector gives the same bits in both kernels.
// Non-finite values propagate on purpose: the host checks the norm. Vulkan
// lets a shader assume no NaN or Inf unless it declares the
// SignedZeroInfNanPreserve execution mode for f32, so this one does.
// @variant sumsq CONCAT=0
// @variant sumsq_cat CONCAT=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "sumsq.h"

#define SPV_CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE 4466
#define SPV_EXECUTION_MODE_SIGNED_ZERO_INF_NAN_PRESERVE 4461
spirv_execution_mode(capabilities = [SPV_CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE],
                     SPV_EXECUTION_MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32);

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer In { float a[]; };
#if CONCAT == 1
layout(set = 0, binding = 1) readonly buffer Table { uint table[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Partials { float partials[]; };

shared float sums[VKBLR_ELT_WG];

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint x = gl_WorkGroupID.x;
#if CONCAT == 1
  const uint param = gl_WorkGroupID.y;
  const uint offset = table[2 * param];
  const uint count = min(table[2 * param + 1], offset < pc.n ? pc.n - offset : 0);
  const uint out_at = param * VKBLR_SUMSQ_PARTIALS + x;
#else
  const uint offset = 0;
  const uint count = pc.n;
  const uint out_at = x;
#endif
  precise float acc = 0.0;
  for (uint i = x * VKBLR_ELT_WG + t; i < count; i += VKBLR_ELT_WG * VKBLR_SUMSQ_PARTIALS) {
    const float v = a[offset + i];
    acc = acc + v * v;
  }
  sums[t] = acc;
  barrier();
  for (uint s = VKBLR_ELT_WG / 2; s > 0; s >>= 1) {
    if (t < s) sums[t] += sums[t + s];
    barrier();
  }
  if (t == 0) partials[out_at] = sums[0];
}
