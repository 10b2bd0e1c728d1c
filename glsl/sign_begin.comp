#version 460
// The first dispatch of a step, one workgroup: the last step's flips join
// the 64-bit total (COUNTERS[TOTAL_HI:TOTAL_LO]), the step counters (flips,
// oscillations, in band) are zeroed and, with a flip budget (pc.budget = K
// > 0), the threshold search starts: SELECT = prefix 0, K flips to place,
// not all, every histogram bin 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 9) buffer Counters { uint counters[]; };
layout(set = 0, binding = 12) writeonly buffer Select { uint sel[]; };
layout(set = 0, binding = 11) readonly buffer Scalars { uint scalars[]; };

#include "live_skip.glsl"

void main() {
  if (step_skipped()) return;  // uniform: every invocation reads the same word
  const uint x = gl_LocalInvocationIndex;
  if (x == 0) {
    const uint lo = counters[VKBLR_SIGN_TOTAL_LO];
    const uint sum = lo + counters[VKBLR_SIGN_FLIPS];
    counters[VKBLR_SIGN_TOTAL_LO] = sum;
    counters[VKBLR_SIGN_TOTAL_HI] += sum < lo ? 1u : 0u;
    counters[VKBLR_SIGN_FLIPS] = 0;
    counters[VKBLR_SIGN_OSC] = 0;
    counters[VKBLR_SIGN_IN_BAND] = 0;
  }
  if (pc.budget != 0) {
    for (uint k = x; k < VKBLR_SIGN_SELECT_WORDS; k += VKBLR_ELT_WG) {
      sel[k] = k == VKBLR_SIGN_SEL_NEED ? pc.budget : 0u;
    }
  }
}
