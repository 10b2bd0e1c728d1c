#version 460
// The loss value of the losses over a vocabulary in slices (logit_loss.h),
// after the last stats kernel: one workgroup of 256. Invocation i adds the
// TOKEN_LOSS of tokens i, i + 256, ... whose STATE count is not 0 (counted
// tokens, and ids >= vocab, whose NaN loss makes the sum NaN) in order, and
// counts them; the workgroup adds the 256 partial sums and counts in a fixed
// tree. OUT u32 [4]: mean = sum / count (sum itself, 0 or NaN, when no token
// counts) and sum as f32 bits, the counted tokens, the ids >= vocab.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "logit_loss.h"
#include "nan_preserve.glsl"

layout(local_size_x = VKBLR_LL_WG) in;
layout(set = 0, binding = 3) restrict readonly buffer State { float state[]; };
layout(set = 0, binding = 4) restrict readonly buffer TokenLoss { float token_loss[]; };
layout(set = 0, binding = 7) restrict writeonly buffer Out { uint out_words[]; };

shared float sh_sum[VKBLR_LL_WG];
shared uint sh_count[VKBLR_LL_WG], sh_bad[VKBLR_LL_WG];

void main() {
  const uint lid = gl_LocalInvocationIndex;
  precise float sum = 0.0;
  uint count = 0, bad = 0;
  for (uint t = lid; t < pc.tokens; t += VKBLR_LL_WG) {
    const float c = state[t * VKBLR_LL_STATE + VKBLR_LL_COUNT];
    if (c > 0.5) {
      sum = sum + token_loss[t];
      ++count;
    } else if (c < -0.5) {
      sum = sum + token_loss[t];
      ++bad;
    }
  }
  sh_sum[lid] = sum;
  sh_count[lid] = count;
  sh_bad[lid] = bad;
  barrier();
  for (uint half_ = VKBLR_LL_WG / 2; half_ > 0; half_ >>= 1) {
    if (lid < half_) {
      precise const float s = sh_sum[lid] + sh_sum[lid + half_];
      sh_sum[lid] = s;
      sh_count[lid] += sh_count[lid + half_];
      sh_bad[lid] += sh_bad[lid + half_];
    }
    barrier();
  }
  if (lid == 0) {
    const float total = sh_sum[0];
    const uint n = sh_count[0];
    precise const float mean = n > 0 ? total / float(n) : total;
    out_words[VKBLR_LL_OUT_MEAN] = floatBitsToUint(mean);
    out_words[VKBLR_LL_OUT_SUM] = floatBitsToUint(total);
    out_words[VKBLR_LL_OUT_COUNT] = n;
    out_words[VKBLR_LL_OUT_BAD] = sh_bad[0];
  }
}
