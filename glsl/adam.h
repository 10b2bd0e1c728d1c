// adam.h — push constants of the Adam kernels (adam.comp).
#ifndef VKBLR_ADAM_H
#define VKBLR_ADAM_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(AdamPush) {
  uint n;            // entries updated
  uint step;         // t, 1-based (unless live)
  float lr;          // learning rate (unless live)
  float beta1;
  float beta2;
  float eps;
  float grad_scale;  // multiplies the gradient before anything else
  float rel_floor;   // adam: > 0 = steps relative to max(|w|, rel_floor); adam_cat reads one per entry
  uint masked;       // adam: 1 = the mask slot is bound (0 = every entry trains); adam_cat: always masked
  uint live;         // 1 = lr and step come from the scalars slot instead of the two fields above
  uint live_word;    // live: scalars[live_word] = lr (f32 bits), [live_word + 1] = step, [live_word + 2] = skip
  float weight_decay;  // λ >= 0: decoupled decay w·(1 − lr·λ) before the step (0: none, not evaluated)
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
