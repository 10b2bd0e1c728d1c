#version 460
// Flips chosen by the flip budget (sign_select.comp), one invocation per
// sign i < n: i flips when ALL (at most K candidates: every candidate), or
// SCORES[i] > T = PREFIX, or SCORES[i] = T and fewer than NEED keys equal
// to T come before i (TIES[wg], the ties of earlier workgroups, plus those
// of lower index in this workgroup, a shared prefix sum). Candidates that
// do not flip keep their sign; their latents are left as sign_update wrote
// them. Flips are written and counted as sign_update does
// (sign_commit.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"
#include "sign_common.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 7) buffer Bits { uint bits[]; };
layout(set = 0, binding = 8) buffer Flipped { uint flipped[]; };
layout(set = 0, binding = 9) buffer Counters { uint counters[]; };
layout(set = 0, binding = 10) readonly buffer Scores { uint scores[]; };
layout(set = 0, binding = 12) readonly buffer Select { uint sel[]; };
layout(set = 0, binding = 14) readonly buffer Ties { uint ties[]; };
layout(set = 0, binding = 11) readonly buffer Scalars { uint scalars[]; };

#include "sign_commit.glsl"

shared uint before[VKBLR_ELT_WG];

#include "live_skip.glsl"

void main() {
  if (step_skipped()) return;  // uniform: every invocation reads the same word
  const uint x = gl_LocalInvocationIndex;
  const uint i = elt_index();
  sign_commit_begin();
  const uint key = i < pc.n ? scores[i] : 0u;
  const bool all = sel[VKBLR_SIGN_SEL_ALL] != 0;
  const uint threshold = sel[VKBLR_SIGN_SEL_PREFIX];
  const bool tie = !all && key != 0 && key == threshold;
  const uint own = tie ? 1u : 0u;
  // before[x] = ties at local indices <= x (Hillis-Steele prefix sums)
  before[x] = own;
  barrier();
  for (uint off = 1; off < VKBLR_ELT_WG; off <<= 1) {
    const uint add = x >= off ? before[x - off] : 0u;
    barrier();
    before[x] += add;
    barrier();
  }
  const uint wg = sign_workgroup();
  const uint rank = (wg < pc.blocks ? ties[wg] : 0u) + before[x] - own;
  if (key != 0 && (all || key > threshold || (tie && rank < sel[VKBLR_SIGN_SEL_NEED]))) sign_mark_flip();
  sign_commit_end();
}
