#version 460
// dense_bwd with 4 rows per invocation: OUT[m][k] += A[m][r] · W[r][k].
// Invocation (x = column j, y = row block) computes rows 4y..4y+3 of column
// j, so each weight load serves 4 outputs. Each output sums o = 0..r-1 in
// order with one fma() per term into a precise accumulator, exactly as
// dense.comp's dense_bwd: the two agree bit for bit. Rows past m read row
// 4y instead (in bounds) and are never written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dense.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer In { float a[]; };
layout(set = 0, binding = 1) readonly buffer Weight { float w[]; };
layout(set = 0, binding = 2) buffer Out { float dst[]; };

void main() {
  const uint j = gl_GlobalInvocationID.x;
  if (j >= pc.k) return;
  const uint row0 = gl_GlobalInvocationID.y * VKBLR_DENSE_BWD_ROWS;
  uint rows[VKBLR_DENSE_BWD_ROWS];
  precise float acc[VKBLR_DENSE_BWD_ROWS];
  for (uint q = 0; q < VKBLR_DENSE_BWD_ROWS; ++q) {
    rows[q] = row0 + q < pc.m ? row0 + q : row0;
    acc[q] = 0.0;
  }
  for (uint o = 0; o < pc.r; ++o) {
    const float wv = w[o * pc.k + j];
    for (uint q = 0; q < VKBLR_DENSE_BWD_ROWS; ++q) acc[q] = fma(a[rows[q] * pc.r + o], wv, acc[q]);
  }
  for (uint q = 0; q < VKBLR_DENSE_BWD_ROWS; ++q) {
    if (row0 + q < pc.m) dst[(row0 + q) * pc.k + j] += acc[q];
  }
}
