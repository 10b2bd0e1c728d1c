// cvt.h — push constants of the f32 -> f16 staging kernels (cvt.comp,
// cvt_multi.comp, cvt_t.comp).
#ifndef VKBLR_CVT_H
#define VKBLR_CVT_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(CvtPush) {
  uint m;        // source rows (tokens)
  uint k;        // columns staged per row
  uint rows;     // rows written (>= m; rows past m are zero). cvt_t: tokens written
  uint outputs;  // cvt_multi: outputs 1..4; cvt_t: rows written along k (>= k)
  uint stride;   // cvt_cols: source row stride in elements
  uint col0;     // cvt_cols: first source column
  float scale;   // every value is multiplied by it
  uint quarter;  // cvt, cvt_col, cvt_cols: elements per pass (ceil(rows·k / 4)); else unused
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
