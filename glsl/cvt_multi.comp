#version 460
// cvt_col into up to four outputs from one read of SRC (paths sharing an
// input): DSTj[rows][k] = f16(SRC[row][k] · COLj[k] · scale), j < outputs,
// each value exactly as cvt_col computes it. Unused outputs are not bound.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "cvt.h"
#include "unfused.glsl"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) readonly buffer Col0 { float col0[]; };
layout(set = 0, binding = 2) readonly buffer Col1 { float col1[]; };
layout(set = 0, binding = 3) readonly buffer Col2 { float col2[]; };
layout(set = 0, binding = 4) readonly buffer Col3 { float col3[]; };
layout(set = 0, binding = 5) writeonly buffer Dst0 { float16_t dst0[]; };
layout(set = 0, binding = 6) writeonly buffer Dst1 { float16_t dst1[]; };
layout(set = 0, binding = 7) writeonly buffer Dst2 { float16_t dst2[]; };
layout(set = 0, binding = 8) writeonly buffer Dst3 { float16_t dst3[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.rows * pc.k) return;
  const uint row = i / pc.k;
  const uint c = i % pc.k;
  const bool live = row < pc.m;
  const float x = live ? src[i] : 0.0;
  dst0[i] = float16_t(live ? staged(x, col0[c], pc.scale) : 0.0);
  if (pc.outputs > 1) dst1[i] = float16_t(live ? staged(x, col1[c], pc.scale) : 0.0);
  if (pc.outputs > 2) dst2[i] = float16_t(live ? staged(x, col2[c], pc.scale) : 0.0);
  if (pc.outputs > 3) dst3[i] = float16_t(live ? staged(x, col3[c], pc.scale) : 0.0);
}
