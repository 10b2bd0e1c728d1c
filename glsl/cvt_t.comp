#version 460
// Transposed staging: DST[outputs][rows] = f16(SRC[t][r] (· COL[r]) · scale)
// for tokens t < m and r < k, zero for padded tokens and rows; SRC is
// [m][k] f32. Element for element the value cvt / cvt_col stage. A 32×32
// tile goes through shared memory (rows padded to 33: no bank conflicts) so
// both the reads and the writes are coalesced; rows and outputs are
// multiples of 32. cvt_t_rows also writes ROWS[t][r] for t < m, r < k (the
// row-major staging cvt makes, the same values) from the same read.
// @variant cvt_t MODE=0
// @variant cvt_t_col MODE=1
// @variant cvt_t_rows MODE=2
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "cvt.h"
#include "unfused.glsl"

layout(local_size_x = 32, local_size_y = 8) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
#if MODE == 1
layout(set = 0, binding = 1) readonly buffer Col { float col[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Dst { float16_t dst[]; };
#if MODE == 2
layout(set = 0, binding = 3) writeonly buffer Rows { float16_t rows16[]; };
#endif

shared float tile[32 * 33];

void main() {
  const uint t0 = gl_WorkGroupID.x * 32;
  const uint r0 = gl_WorkGroupID.y * 32;
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  for (uint j = 0; j < 32; j += 8) {
    const uint t = t0 + ly + j;
    const uint r = r0 + lx;
    float v = 0.0;
    if (t < pc.m && r < pc.k) {
#if MODE == 1
      v = staged(src[t * pc.k + r], col[r], pc.scale);
#else
      v = src[t * pc.k + r] * pc.scale;
#endif
#if MODE == 2
      rows16[t * pc.k + r] = float16_t(v);
#endif
    }
    tile[(ly + j) * 33 + lx] = v;
  }
  barrier();
  for (uint j = 0; j < 32; j += 8) {
    const uint r = r0 + ly + j;
    const uint t = t0 + lx;
    dst[r * pc.rows + t] = float16_t(tile[lx * 33 + ly + j]);
  }
}
