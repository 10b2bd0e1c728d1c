#version 460
// Pass 1 of the losses over a vocabulary in slices: one slice's logits
// folded into every token's running logsumexp (logit_loss.h).
//   ce_stats       Z f32 [tokens][ldz]: the student's logits of vocabulary
//                  rows v0..v0+cols-1. STATE (m, s) updated with them, and
//                  X = the target's logit where the target lies in the slice
//   kl_stats       also ZT, the teacher's logits of the same rows: with
//                  a = ZT·inv_tau, b = Z·inv_tau, the student's (m, s) of b,
//                  the teacher's (M_T, S_T) of a and X = Σ exp(a − M_T)·(a − b)
//   kl_stats_mask  kl_stats with IDS [tokens] as a mask: tokens whose id is
//                  ignore_id carry no loss (without it every token counts)
// One workgroup of 256 per token. Invocation i folds columns i, i + 256, ...
// in order into its own state; the workgroup merges the 256 in a fixed tree,
// then invocation 0 merges the token's running state with it (the first
// slice starts it instead: COUNT from the id, X = 0). On the last slice it
// also writes the logsumexps and the token's loss to TOKEN_LOSS:
//   cross-entropy  lse − X (counted), 0 (ignored), NaN (an id >= vocab)
//   KL             tau2 · (X / S_T − (lse_t − lse)) (counted), 0 (ignored)
// Ids are compared, never used to address anything but the slice's own row
// (an id >= vocab is never read through). Fixed orders: the same bits run
// after run.
// @variant ce_stats KIND=0 MASK=0
// @variant kl_stats KIND=1 MASK=0
// @variant kl_stats_mask KIND=1 MASK=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "logit_loss.h"
#include "logit_loss_online.glsl"
#include "nan_preserve.glsl"

#define USE_IDS (KIND == 0 || MASK == 1)

layout(local_size_x = VKBLR_LL_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer Z { float z[]; };
#if KIND == 1
layout(set = 0, binding = 1) restrict readonly buffer ZT { float zt[]; };
#endif
#if USE_IDS
layout(set = 0, binding = 2) restrict readonly buffer Ids { uint ids[]; };
#endif
layout(set = 0, binding = 3) restrict buffer State { float state[]; };
layout(set = 0, binding = 4) restrict writeonly buffer TokenLoss { float token_loss[]; };

shared float sh_m[VKBLR_LL_WG], sh_s[VKBLR_LL_WG];
#if KIND == 1
shared float sh_mt[VKBLR_LL_WG], sh_st[VKBLR_LL_WG], sh_d[VKBLR_LL_WG];
#endif

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= pc.tokens) return;  // whole workgroups only
  const uint lid = gl_LocalInvocationIndex;
  const uint base = row * pc.ldz;
  const float neg_inf = uintBitsToFloat(0xff800000u);

  float m = neg_inf, s = 0.0, unused = 0.0;
#if KIND == 1
  float mt = neg_inf, st = 0.0, d = 0.0;
#endif
  for (uint c = lid; c < pc.cols; c += VKBLR_LL_WG) {
#if KIND == 0
    ll_add(m, s, unused, z[base + c], 0.0);
#else
    precise const float b = z[base + c] * pc.inv_tau;
    precise const float a = zt[base + c] * pc.inv_tau;
    precise const float diff = a - b;
    ll_add(m, s, unused, b, 0.0);
    ll_add(mt, st, d, a, diff);
#endif
  }
  sh_m[lid] = m;
  sh_s[lid] = s;
#if KIND == 1
  sh_mt[lid] = mt;
  sh_st[lid] = st;
  sh_d[lid] = d;
#endif
  barrier();
  for (uint half_ = VKBLR_LL_WG / 2; half_ > 0; half_ >>= 1) {
    if (lid < half_) {
      float m1 = sh_m[lid], s1 = sh_s[lid], u1 = 0.0;
      ll_merge(m1, s1, u1, sh_m[lid + half_], sh_s[lid + half_], 0.0);
      sh_m[lid] = m1;
      sh_s[lid] = s1;
#if KIND == 1
      float mt1 = sh_mt[lid], st1 = sh_st[lid], d1 = sh_d[lid];
      ll_merge(mt1, st1, d1, sh_mt[lid + half_], sh_st[lid + half_], sh_d[lid + half_]);
      sh_mt[lid] = mt1;
      sh_st[lid] = st1;
      sh_d[lid] = d1;
#endif
    }
    barrier();
  }
  if (lid != 0) return;

  const uint at = row * VKBLR_LL_STATE;
  m = sh_m[0];
  s = sh_s[0];
#if KIND == 1
  mt = sh_mt[0];
  st = sh_st[0];
  d = sh_d[0];
#endif
#if USE_IDS
  const uint id = ids[row];
#endif
  float count, x;
  if ((pc.flags & VKBLR_LL_FIRST) != 0) {
#if KIND == 0
    count = id == pc.ignore_id ? 0.0 : (id < pc.vocab ? 1.0 : -1.0);
#elif MASK == 1
    count = id == pc.ignore_id ? 0.0 : 1.0;
#else
    count = 1.0;
#endif
    x = 0.0;
  } else {
    // ll_merge is commutative, bit for bit (a max and one rounded sum each)
    count = state[at + VKBLR_LL_COUNT];
    ll_merge(m, s, unused, state[at + VKBLR_LL_M], state[at + VKBLR_LL_S], 0.0);
#if KIND == 0
    x = state[at + VKBLR_LL_X];
#else
    ll_merge(mt, st, d, state[at + VKBLR_LL_MT], state[at + VKBLR_LL_ST], state[at + VKBLR_LL_X]);
#endif
  }
#if KIND == 0
  if (count > 0.5 && id >= pc.v0 && id - pc.v0 < pc.cols) x = z[base + (id - pc.v0)];
#else
  x = d;
#endif
  state[at + VKBLR_LL_M] = m;
  state[at + VKBLR_LL_S] = s;
  state[at + VKBLR_LL_X] = x;
  state[at + VKBLR_LL_COUNT] = count;
#if KIND == 1
  state[at + VKBLR_LL_MT] = mt;
  state[at + VKBLR_LL_ST] = st;
#endif
  if ((pc.flags & VKBLR_LL_LAST) != 0) {
    precise const float lse = m + log(s);
    state[at + VKBLR_LL_LSE] = lse;
#if KIND == 0
    precise const float loss = lse - x;
    token_loss[row] = count > 0.5 ? loss : (count < -0.5 ? uintBitsToFloat(0x7fc00000u) : 0.0);
#else
    precise const float lse_t = mt + log(st);
    state[at + VKBLR_LL_LSE_T] = lse_t;
    precise const float kl = d / st - (lse_t - lse);
    precise const float loss = pc.tau2 * kl;
    token_loss[row] = count > 0.5 ? loss : 0.0;
#endif
  }
}
