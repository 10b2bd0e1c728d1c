#version 460
// Sign bitmap -> f16 ±1 planes. BITS is u32 [rows][words], words =
// ceil(r / 32): bit j of word w of a row is the sign of rank 32w + j, 1 = +1,
// 0 = -1; the bits past r in a row's last word are ignored.
//   expand    PL[rows][r] and its transpose PLT[r][rows], one invocation per
//             element of PL (PLT's stores are strided)
//   expand_n  PL only
//   expand_t  PLT only, consecutive invocations along a PLT row (coalesced
//             stores)
// @variant expand MODE=0
// @variant expand_n MODE=1
// @variant expand_t MODE=2
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "expand.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Bits { uint bits[]; };
#if MODE != 2
layout(set = 0, binding = 1) writeonly buffer Plane { float16_t plane[]; };
#endif
#if MODE != 1
layout(set = 0, binding = 2) writeonly buffer PlaneT { float16_t plane_t[]; };
#endif

// The sign of rank j in bitmap row `row` as an f16 ±1.
float16_t sign_at(uint row, uint j) {
  const uint word = bits[row * pc.words + j / 32];
  return ((word >> (j % 32)) & 1u) != 0 ? float16_t(1.0) : float16_t(-1.0);
}

void main() {
  const uint i = elt_index();
  if (i >= pc.rows * pc.r) return;
#if MODE == 2
  const uint j = i / pc.rows;
  const uint row = i % pc.rows;
  plane_t[i] = sign_at(row, j);
#else
  const uint row = i / pc.r;
  const uint j = i % pc.r;
  const float16_t s = sign_at(row, j);
  plane[i] = s;
#if MODE == 0
  plane_t[j * pc.rows + row] = s;
#endif
#endif
}
