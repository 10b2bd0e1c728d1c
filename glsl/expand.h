// expand.h — push constants of the sign-bitmap expansion kernels (expand.comp).
#ifndef VKBLR_EXPAND_H
#define VKBLR_EXPAND_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(ExpandPush) {
  uint rows;   // bitmap rows: rows of PL, columns of PLT
  uint r;      // signs per row (the rank): columns of PL, rows of PLT
  uint words;  // u32 words per bitmap row, ceil(r / 32)
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
