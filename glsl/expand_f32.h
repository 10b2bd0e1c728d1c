// expand_f32.h — push constants of the scaled sign expansion
// (expand_f32.comp, vkblr/ops/expand_f32.hpp).
#ifndef VKBLR_EXPAND_F32_H
#define VKBLR_EXPAND_F32_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(ExpandF32Push) {
  uint rows;        // bitmap rows = plane rows
  uint r;           // signs per row, a multiple of 32
  uint ldp;         // plane row stride, floats (>= r)
  uint offset;      // first plane element in the bound range
  uint row_scaled;  // 1: ROW_SCALE bound, 0: every row scale is 1
  uint col_scaled;  // 1: COL_SCALE bound, 0: every column scale is 1
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
