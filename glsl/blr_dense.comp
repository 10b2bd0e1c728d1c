#version 460
// The dense-weight route of a blr layer (vkblr/blr_dense.hpp). BITS is the
// path's sign bitmap u32 [rows][words] (bit j of word w = sign of rank
// 32w + j, 1 = +1), ROW f32 [rows] its row scale, COL f32 [r] an optional
// column scale (flags), S[i][k] = ±1.
//
//   blr_dense_expand  F[i][k] = f16(S[i][k] · ROW[i] · COL[k]) into
//                     PL f16 [rows][ld] at columns col0.. and its transpose
//                     PLT f16 [ld][rows] at rows col0..; one invocation per
//                     bitmap word (32 signs), rows fastest: its 32 PL values
//                     leave as four 16-byte stores, its PLT values one per
//                     PLT row, consecutive across invocations.
//   blr_dense_grads   from X f32 [rows][ld] (columns col0..col0+r):
//                       G[i][k]  (+)= ROW[i] · COL[k] · X[i][k]   f32 [rows][r] (WRITE_G)
//                       DROW[i]  +=  Σ_k S[i][k] · COL[k] · X[i][k]
//                       E[i][k]   =  ROW[i] · S[i][k] · X[i][k]   (COLTERM)
//                     one workgroup per row; DROW's sum runs over k in a
//                     fixed order (strided per invocation, then a fixed
//                     tree): deterministic, no atomics.
// @variant blr_dense_expand MODE=0
// @variant blr_dense_grads MODE=1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "blr_dense.h"

layout(set = 0, binding = 0) readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 1) readonly buffer Row { float row_scale[]; };
layout(set = 0, binding = 2) readonly buffer Col { float col_scale[]; };

float sign_at(uint row, uint k) {
  return ((bits[row * pc.words + k / 32] >> (k % 32)) & 1u) != 0 ? 1.0 : -1.0;
}

float col_factor(uint k) { return (pc.flags & VKBLR_BLR_DENSE_COL) != 0 ? col_scale[k] : 1.0; }

#if MODE == 0
layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 3) writeonly buffer Plane { uvec4 plane4[]; };
layout(set = 0, binding = 4) writeonly buffer PlaneT { float16_t plane_t[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.rows * pc.words) return;
  const uint row = i % pc.rows;
  const uint w = i / pc.rows;
  const uint word = bits[row * pc.words + w];
  const float rf = row_scale[row];
  uint packed[16];
  for (uint j = 0; j < 32; j += 2) {
    const uint k = 32 * w + j;
    const float16_t a = float16_t(((word >> j) & 1u) != 0 ? rf * col_factor(k) : -(rf * col_factor(k)));
    const float16_t b =
        float16_t(((word >> (j + 1)) & 1u) != 0 ? rf * col_factor(k + 1) : -(rf * col_factor(k + 1)));
    plane_t[(pc.col0 + k) * pc.rows + row] = a;
    plane_t[(pc.col0 + k + 1) * pc.rows + row] = b;
    packed[j / 2] = packFloat2x16(f16vec2(a, b));
  }
  // PL row `row`, halves col0 + 32w .. +31: 16-byte aligned (ld, col0 multiples of 32)
  const uint at = (row * pc.ld + pc.col0 + 32 * w) / 8;
  for (uint q = 0; q < 4; ++q) {
    plane4[at + q] = uvec4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2], packed[4 * q + 3]);
  }
}
#else
layout(local_size_x = VKBLR_BLR_DENSE_ROW_WG) in;
layout(set = 0, binding = 3) readonly buffer X { float x[]; };
layout(set = 0, binding = 4) buffer G { float g[]; };
layout(set = 0, binding = 5) buffer DRow { float drow[]; };
layout(set = 0, binding = 6) writeonly buffer E { float e[]; };

shared float partial[VKBLR_BLR_DENSE_ROW_WG];

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
  if (row >= pc.rows) return;  // uniform per workgroup
  const uint lane = gl_LocalInvocationID.x;
  const float rf = row_scale[row];
  float acc = 0.0;
  for (uint k = lane; k < pc.r; k += VKBLR_BLR_DENSE_ROW_WG) {
    const float xv = x[row * pc.ld + pc.col0 + k];
    const float s = sign_at(row, k);
    const float cf = col_factor(k);
    const uint at = row * pc.r + k;
    const float gv = rf * cf * xv;
    if ((pc.flags & VKBLR_BLR_DENSE_WRITE_G) != 0) {
      g[at] = (pc.flags & VKBLR_BLR_DENSE_ACCUMULATE) != 0 ? g[at] + gv : gv;
    }
    acc += s * (cf * xv);
    if ((pc.flags & VKBLR_BLR_DENSE_COLTERM) != 0) e[at] = rf * (s * xv);
  }
  partial[lane] = acc;
  barrier();
  for (uint half_ = VKBLR_BLR_DENSE_ROW_WG / 2; half_ > 0; half_ /= 2) {
    if (lane < half_) partial[lane] += partial[lane + half_];
    barrier();
  }
  if (lane == 0) drow[row] += partial[0];
}
#endif
