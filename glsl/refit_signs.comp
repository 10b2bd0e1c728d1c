#version 460
// Sign changes of the GPU refit's scale steps (vkblr/ops/refit.hpp), one
// invocation per bitmap word of BITS [rows][words]:
//   refit_flip_columns  BITS[i][w] ^= MASK[w] (MASK [words]: the columns
//                       whose ℓ came out negative)
//   refit_row_scales    X [rows] is a row scale's new signed value: where it
//                       is finite and not 0, SCALE[i] = |X[i]| and a negative
//                       X[i] flips row i's signs; elsewhere nothing changes
// @variant refit_flip_columns MODE=0
// @variant refit_row_scales MODE=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "nan_preserve.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) buffer Bits { uint bits[]; };
#if MODE == 0
layout(set = 0, binding = 1) readonly buffer Mask { uint mask[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer Scale { float scale[]; };
#endif

void main() {
  const uint i = elt_index();
  if (i >= pc.rows * pc.words) return;
  const uint w = i % pc.words;
#if MODE == 0
  bits[i] ^= mask[w];
#else
  const uint row = i / pc.words;
  const float v = x[row];
  if (isnan(v) || isinf(v) || v == 0.0) return;
  if (v < 0.0) bits[i] = ~bits[i];
  if (w == 0) scale[row] = abs(v);
#endif
}
