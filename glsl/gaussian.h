// gaussian.h — push constants of the Gaussian fill (gaussian.comp,
// vkblr/ops/random.hpp).
#ifndef VKBLR_GAUSSIAN_H
#define VKBLR_GAUSSIAN_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(GaussianPush) {
  uint count;   // draws, first + count <= 2^31
  uint offset;  // element of OUT that receives draw `first`, in the bound range
  uint key;     // stream_key(seed, stream) of lowbias32.h
  float scale;  // every draw's multiplier
  uint first;   // index of the first draw
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
