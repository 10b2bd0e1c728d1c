#version 460
// COUNTERS[HAMMING] += the number of signs where BITS and BITS0 differ, one
// invocation per bitmap word (n / 32 words); one integer atomic per
// workgroup. The counter is zeroed before (a fill in the same batch).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 7) readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 9) buffer Counters { uint counters[]; };
layout(set = 0, binding = 13) readonly buffer Bits0 { uint bits0[]; };

shared uint wg_count;

void main() {
  const uint word = elt_index();
  if (gl_LocalInvocationIndex == 0) wg_count = 0;
  barrier();
  if (word < pc.n / 32) {
    const uint d = uint(bitCount(bits[word] ^ bits0[word]));
    if (d != 0) atomicAdd(wg_count, d);
  }
  barrier();
  if (gl_LocalInvocationIndex == 0 && wg_count != 0) atomicAdd(counters[VKBLR_SIGN_HAMMING], wg_count);
}
