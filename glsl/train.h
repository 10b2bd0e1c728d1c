// train.h — push constants of the training-step kernels (mse_grad.comp,
// finite_guard.comp).
#ifndef VKBLR_TRAIN_H
#define VKBLR_TRAIN_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(MseGradPush) {
  uint n;                   // elements
  float scale;              // dy = (y − target) · scale
  uint groups_per_partial;  // workgroups of mse_grad = 64 · groups_per_partial
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
