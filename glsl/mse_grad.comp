#version 460
// The gradient of a squared-error loss and its partial sums:
//   mse_grad      DY[i] = (Y[i] − T[i]) · scale for i < n, and per
//                 workgroup w of the 64·groups_per_partial in the grid
//                 BLOCK[w] = Σ (Y[i] − T[i])² over its elements: element
//                 i belongs to invocation i mod (grid invocations), which
//                 adds its elements in index order; the workgroup adds its
//                 256 sums in a fixed tree
//   mse_partials  PARTIALS[x] = Σ_g BLOCK[g·64 + x], g = 0, 1, ... in order
//                 (64 invocations; the host adds the 64 in f64)
// Fixed orders, no atomics: the same bits run after run. Enough workgroups
// to keep a large GPU's memory busy (one pass of 64 workgroups was bound by
// latency). Non-finite values propagate.
// @variant mse_grad PASS=0
// @variant mse_partials PASS=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "nan_preserve.glsl"
#include "train.h"

layout(local_size_x = VKBLR_ELT_WG) in;
#if PASS == 0
layout(set = 0, binding = 0) restrict readonly buffer Y { float y[]; };
layout(set = 0, binding = 1) restrict readonly buffer Target { float target[]; };
layout(set = 0, binding = 2) restrict writeonly buffer Dy { float dy[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Blocks { float blocks[]; };
shared float sums[VKBLR_ELT_WG];
#else
layout(set = 0, binding = 3) restrict writeonly buffer Partials { float partials[]; };
layout(set = 0, binding = 4) restrict readonly buffer Blocks { float blocks[]; };
#endif

void main() {
  const uint t = gl_LocalInvocationIndex;
#if PASS == 0
  const uint w = gl_WorkGroupID.x;
  const uint stride = gl_NumWorkGroups.x * VKBLR_ELT_WG;
  precise float acc = 0.0;
  for (uint i = w * VKBLR_ELT_WG + t; i < pc.n; i += stride) {
    precise const float d = y[i] - target[i];
    precise const float g = d * pc.scale;
    dy[i] = g;
    acc = acc + d * d;
  }
  sums[t] = acc;
  barrier();
  for (uint s = VKBLR_ELT_WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      precise const float sum = sums[t] + sums[t + s];
      sums[t] = sum;
    }
    barrier();
  }
  if (t == 0) blocks[w] = sums[0];
#else
  if (t >= 64) return;
  precise float acc = 0.0;
  for (uint g = 0; g < pc.groups_per_partial; ++g) acc = acc + blocks[g * 64 + t];
  partials[t] = acc;
#endif
}
