#version 460
// The flip budget's threshold search: of the candidates (SCORES[i] > 0, the
// bits of a positive f32 score, which order as the values) the K highest
// flip, ties broken by lower index. A radix select over the 32 key bits,
// 8 per pass from the top, on the SELECT buffer that sign_begin reset
// (PREFIX 0, NEED = K, ALL 0, histograms 0):
//   sign_hist  pass p: HIST[p][digit p of key] += 1 for each candidate
//              whose digits above p equal PREFIX's; a workgroup histogram
//              in shared memory, then one integer atomic per non-empty bin
//              (integer sums: the result does not depend on the order)
//   sign_pick  pass p, one workgroup: from the top bin down, the bin where
//              the running count reaches NEED goes into PREFIX and NEED
//              drops by the count above it. Pass 0: when there are at most
//              K candidates, ALL = 1 and the later passes do nothing.
// After pass 3, T = PREFIX is the K-th highest key: every key > T flips,
// and of the keys = T the first NEED by index (1 <= NEED <= their count):
//   sign_ties  TIES[wg] = keys equal to T in workgroup wg of the element grid
//   sign_scan  one workgroup: TIES = its exclusive prefix sums, in order
// sign_apply then flips. Every step is integer and order-free or in a fixed
// order: the chosen set does not depend on scheduling.
// @variant sign_hist MODE=0
// @variant sign_pick MODE=1
// @variant sign_ties MODE=2
// @variant sign_scan MODE=3
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"
#include "sign_common.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
#if MODE == 0 || MODE == 2
layout(set = 0, binding = 10) readonly buffer Scores { uint scores[]; };
#endif
#if MODE == 0 || MODE == 1
layout(set = 0, binding = 12) buffer Select { uint sel[]; };
#else
layout(set = 0, binding = 12) readonly buffer Select { uint sel[]; };
#endif
#if MODE == 2
layout(set = 0, binding = 14) writeonly buffer Ties { uint ties[]; };
#elif MODE == 3
layout(set = 0, binding = 14) buffer Ties { uint ties[]; };
#endif

shared uint bins[VKBLR_ELT_WG];

uint pass_shift() { return 24 - 8 * pc.pass; }

void main() {
  const uint x = gl_LocalInvocationIndex;
#if MODE == 0
  bins[x] = 0;
  barrier();
  const uint i = elt_index();
  if (i < pc.n && sel[VKBLR_SIGN_SEL_ALL] == 0) {
    const uint key = scores[i];
    const uint shift = pass_shift();
    const bool match = pc.pass == 0 || (key >> (shift + 8)) == (sel[VKBLR_SIGN_SEL_PREFIX] >> (shift + 8));
    if (key != 0 && match) atomicAdd(bins[(key >> shift) & 255u], 1u);
  }
  barrier();
  if (bins[x] != 0) atomicAdd(sel[VKBLR_SIGN_SEL_HEAD + pc.pass * VKBLR_SIGN_RADIX_BINS + x], bins[x]);
#elif MODE == 1
  if (sel[VKBLR_SIGN_SEL_ALL] != 0) return;  // the same word for the whole workgroup
  const uint need = sel[VKBLR_SIGN_SEL_NEED];
  const uint count = sel[VKBLR_SIGN_SEL_HEAD + pc.pass * VKBLR_SIGN_RADIX_BINS + x];
  // bins[b] = Σ of the counts of bins >= b (Hillis-Steele suffix sums)
  bins[x] = count;
  barrier();
  for (uint off = 1; off < VKBLR_SIGN_RADIX_BINS; off <<= 1) {
    const uint add = x + off < VKBLR_SIGN_RADIX_BINS ? bins[x + off] : 0u;
    barrier();
    bins[x] += add;
    barrier();
  }
  const uint above = bins[x] - count;
  if (pc.pass == 0 && bins[0] <= need) {
    if (x == 0) sel[VKBLR_SIGN_SEL_ALL] = 1;
  } else if (above < need && need <= bins[x]) {
    sel[VKBLR_SIGN_SEL_PREFIX] |= x << pass_shift();
    sel[VKBLR_SIGN_SEL_NEED] = need - above;
  }
#elif MODE == 2
  if (x == 0) bins[0] = 0;
  barrier();
  const uint i = elt_index();
  if (i < pc.n && sel[VKBLR_SIGN_SEL_ALL] == 0) {
    const uint key = scores[i];
    if (key != 0 && key == sel[VKBLR_SIGN_SEL_PREFIX]) atomicAdd(bins[0], 1u);
  }
  barrier();
  if (x == 0 && sign_workgroup() < pc.blocks) ties[sign_workgroup()] = bins[0];
#else
  uint carry = 0;
  for (uint base = 0; base < pc.blocks; base += VKBLR_ELT_WG) {
    const uint k = base + x;
    const uint own = k < pc.blocks ? ties[k] : 0u;
    bins[x] = own;
    barrier();
    for (uint off = 1; off < VKBLR_ELT_WG; off <<= 1) {
      const uint add = x >= off ? bins[x - off] : 0u;
      barrier();
      bins[x] += add;
      barrier();
    }
    if (k < pc.blocks) ties[k] = carry + bins[x] - own;
    carry += bins[VKBLR_ELT_WG - 1];
    barrier();
  }
#endif
}
