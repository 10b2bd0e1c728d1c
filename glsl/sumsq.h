// sumsq.h — push constants of the partial sums of squares (sumsq.comp).
#ifndef VKBLR_SUMSQ_H
#define VKBLR_SUMSQ_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(SumsqPush) {
  uint n;  // sumsq: elements summed; sumsq_cat: elements of the concatenation (no read past them)
  uint reserved;
} VKBLR_PUSH_END(pc)

// Workgroups, and so partial sums, per summed vector.
#define VKBLR_SUMSQ_PARTIALS 64

VKBLR_SHADER_END
#endif
