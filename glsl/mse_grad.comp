#version 460
// The gradient of a squared-error loss and its partial sums, in one pass:
//   DY[i] = (Y[i] − T[i]) · scale               i < n
//   PARTIALS[x] = Σ (Y[i] − T[i])² over i with (i / 256) mod 64 = x
// (64 workgroups; each invocation sums its elements in index order, the
// workgroup adds the 256 sums in a fixed tree: the pattern of sumsq, so the
// host adds 64 partials in f64 for ‖y − t‖²). Non-finite values propagate.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "nan_preserve.glsl"
#include "train.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Y { float y[]; };
layout(set = 0, binding = 1) readonly buffer Target { float target[]; };
layout(set = 0, binding = 2) writeonly buffer Dy { float dy[]; };
layout(set = 0, binding = 3) writeonly buffer Partials { float partials[]; };

const uint PARTIALS = 64;
shared float sums[VKBLR_ELT_WG];

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint x = gl_WorkGroupID.x;
  precise float acc = 0.0;
  for (uint i = x * VKBLR_ELT_WG + t; i < pc.n; i += VKBLR_ELT_WG * PARTIALS) {
    precise const float d = y[i] - target[i];
    precise const float g = d * pc.scale;
    dy[i] = g;
    acc = acc + d * d;
  }
  sums[t] = acc;
  barrier();
  for (uint s = VKBLR_ELT_WG / 2; s > 0; s >>= 1) {
    if (t < s) sums[t] += sums[t + s];
    barrier();
  }
  if (t == 0) partials[x] = sums[0];
}
