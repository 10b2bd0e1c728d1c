#version 460
// The non-finite guard of a training step: FLAG[flag_word] = 1 when any of
// VALUES[0 .. count) is NaN or ±Inf (e.g. the sumsq partials of a step's
// gradients), else 0. The optimizer kernels of the step read that word as
// the skip flag of their live scalars, so a bad step changes nothing.
// One workgroup; the flags combine with an integer OR (deterministic).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "nan_preserve.glsl"
#include "guard.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Values { float values[]; };
layout(set = 0, binding = 1) writeonly buffer Flag { uint flag[]; };

shared uint bad;

void main() {
  const uint t = gl_LocalInvocationIndex;
  if (t == 0) bad = 0;
  barrier();
  uint mine = 0;
  for (uint i = t; i < pc.count; i += VKBLR_ELT_WG) {
    const float v = values[i];
    if (isnan(v) || isinf(v)) mine = 1;
  }
  if (mine != 0) atomicOr(bad, 1u);
  barrier();
  if (t == 0) flag[pc.flag_word] = bad;
}
