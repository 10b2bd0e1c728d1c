// sign_common.glsl — what the sign optimizer kernels share: the stochastic
// rounding generator, the state element type (f32, or bf16 with BF16 = 1),
// the per-replay scalars and the element grid's workgroup index.
#ifndef VKBLR_SIGN_COMMON_GLSL
#define VKBLR_SIGN_COMMON_GLSL

#include "lowbias32.h"

// Stream ids of the stored values (the generator's last input).
#define SIGN_FIELD_W 0u
#define SIGN_FIELD_M 1u
#define SIGN_FIELD_V 2u

// The random word of one stored value: counter-based, so any element of any
// step can be drawn on its own. key = lowbias32(lowbias32(lowbias32(seed_lo)
// ^ seed_hi) ^ matrix_id) comes from the host; t = the step (0 at init).
uint sign_random(uint key, uint t, uint i, uint field) {
  return lowbias32(lowbias32(lowbias32(key ^ t) ^ i) ^ field);
}

// x rounded to bf16 stochastically: the low 16 bits of the word `rnd` are
// added to the magnitude's bits and the sum truncated, so x rounds away from
// zero with probability (its distance from the lower bf16) / (bf16 spacing):
// unbiased. Inf stays, NaN becomes a quiet NaN; the result is an f32 that
// bf16 represents exactly.
float bf16_stochastic(float x, uint rnd) {
  const uint b = floatBitsToUint(x);
  if ((b & 0x7f800000u) == 0x7f800000u) {
    return uintBitsToFloat((b & 0x7fffffffu) > 0x7f800000u ? (b | 0x00400000u) & 0xffff0000u : b);
  }
  return uintBitsToFloat((b + (rnd & 0xffffu)) & 0xffff0000u);
}

#if BF16 == 1
#define STATE_T uint16_t
float state_value(uint16_t s) { return uintBitsToFloat(uint(s) << 16); }
uint16_t state_word(float v) { return uint16_t(floatBitsToUint(v) >> 16); }
// The value stored for x (element i, field, step t), as an f32.
float state_round(float x, uint i, uint field, uint t) { return bf16_stochastic(x, sign_random(pc.key, t, i, field)); }
#else
#define STATE_T float
float state_value(float s) { return s; }
float state_word(float v) { return v; }
float state_round(float x, uint i, uint field, uint t) { return x; }
#endif

// Workgroup index in the element grid (elt_index() / VKBLR_ELT_WG).
uint sign_workgroup() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#endif
