// scale.h — push constants of the output kernels (scale_acc.comp,
// f16_to_f32.comp).
#ifndef VKBLR_SCALE_H
#define VKBLR_SCALE_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(ScalePush) {
  uint m;           // rows; f16_to_f32: 1
  uint k;           // columns (the column factors' length); f16_to_f32: elements
  uint accumulate;  // scale_acc: OUT += A·COL (1) or OUT = A·COL (0)
  uint quarter;     // scale_acc*: elements per pass (ceil(m·k / 4)); f16_to_f32: unused
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
