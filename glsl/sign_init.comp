#version 460
// Latents of a new sign matrix from its bits: W[i] = +tau where bit i is 1,
// −tau where it is 0, one invocation per sign i < n. bf16 state (BF16 = 1):
// rounded stochastically as every stored value, with step 0.
// @variant sign_init_f32 BF16=0
// @variant sign_init_bf16 BF16=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sign.h"
#include "sign_common.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 1) writeonly buffer Latent { STATE_T latent[]; };
layout(set = 0, binding = 7) readonly buffer Bits { uint bits[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.n) return;
  const bool s = ((bits[i / 32] >> (i % 32)) & 1u) != 0;
  latent[i] = state_word(state_round(s ? pc.tau : -pc.tau, i, SIGN_FIELD_W, 0u));
}
