// split_qg.h — push constants of the per-head q/gate split and merge
// (split_qg.comp).
#ifndef VKBLR_SPLIT_QG_H
#define VKBLR_SPLIT_QG_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(SplitQgPush) {
  uint m;         // rows (tokens)
  uint width;     // heads · head_dim: the row length of q and of gate
  uint head_dim;  // hd
  uint reserved;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
