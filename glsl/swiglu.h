// swiglu.h — push constants of the SwiGLU activation (swiglu.comp).
#ifndef VKBLR_SWIGLU_H
#define VKBLR_SWIGLU_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(SwigluPush) {
  uint n;        // elements of h: tokens · inter
  uint inter;    // the MLP's intermediate width (a row of h)
  uint quarter;  // ceil(n / 4): invocation i handles elements i, i + quarter, ...
  uint reserved;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
