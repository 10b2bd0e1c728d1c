#version 460
// The GPU refit's S_U step, one workgroup per row i of S_U (rows are
// independent under C; vkblr/ops/refit.hpp, docs/sign-optimizer.md):
// exact coordinate descent on the row's signs s, then the row's scale.
//   P [rows][r], QS [rows][r] = S_U·Q (the signs as they come in), Q [r][r]
//   symmetric; BITS [rows][words] and H [rows] are read and rewritten.
// For k ascending, ΔL/4 = h²·(Q_kk − s_k·qs_k) + h·s_k·P_ik; the sign flips
// when that is < 0, and then qs += 2·s_k(new)·Q[k][:]. Passes over the row
// until none flips (at most VKBLR_REFIT_MAX_PASSES). Then h_i = (s·P_i) /
// (s·qs) when s·qs > 0; a negative h_i flips the row's signs instead, and
// h_i = 0 leaves h as it was.
//
// Every invocation computes the same ΔL from the same shared values, so the
// flip decision is uniform across the workgroup: the barriers inside the
// loop are in uniform control flow, and there are two only on a flip (all
// invocations have read s_k and qs_k before anyone writes them). The two
// dot products are fixed-order: strided partial sums in index order, then
// a fixed tree.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_REFIT_ROW_WG) in;
layout(constant_id = 0) const uint RANK = 32;  // = pc.r: sizes the shared rows

layout(set = 0, binding = 0) readonly buffer PIn { float p_in[]; };
layout(set = 0, binding = 1) readonly buffer QIn { float q[]; };
layout(set = 0, binding = 2) readonly buffer QsIn { float qs_in[]; };
layout(set = 0, binding = 3) buffer Bits { uint bits[]; };
layout(set = 0, binding = 4) buffer H { float h[]; };

shared float s[RANK];
shared float qs[RANK];
shared float p[RANK];
shared float q_diag[RANK];
shared float sum_num[VKBLR_REFIT_ROW_WG];
shared float sum_den[VKBLR_REFIT_ROW_WG];

void main() {
  const uint i = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (i >= pc.rows) return;  // the whole workgroup
  const uint t = gl_LocalInvocationIndex;
  const uint r = pc.r;
  for (uint k = t; k < r; k += VKBLR_REFIT_ROW_WG) {
    const uint word = bits[i * pc.words + k / 32];
    s[k] = ((word >> (k % 32)) & 1u) != 0 ? 1.0 : -1.0;
    qs[k] = qs_in[i * r + k];
    p[k] = p_in[i * r + k];
    q_diag[k] = q[k * r + k];
  }
  barrier();

  const float hi = h[i];
  for (uint pass = 0; pass < VKBLR_REFIT_MAX_PASSES; ++pass) {
    bool changed = false;
    for (uint k = 0; k < r; ++k) {
      const float sk = s[k];
      const float delta = hi * hi * (q_diag[k] - sk * qs[k]) + hi * sk * p[k];
      if (delta < 0.0) {
        barrier();
        const float step = -2.0 * sk;  // s_new − s_old = 2·s_new
        for (uint j = t; j < r; j += VKBLR_REFIT_ROW_WG) qs[j] += step * q[k * r + j];
        if (t == 0) s[k] = -sk;
        barrier();
        changed = true;
      }
    }
    if (!changed) break;
  }

  // h_i = (s·P_i) / (s·qs)
  float num = 0.0, den = 0.0;
  for (uint k = t; k < r; k += VKBLR_REFIT_ROW_WG) {
    num += s[k] * p[k];
    den += s[k] * qs[k];
  }
  sum_num[t] = num;
  sum_den[t] = den;
  barrier();
  for (uint half_width = VKBLR_REFIT_ROW_WG / 2; half_width > 0; half_width >>= 1) {
    if (t < half_width) {
      sum_num[t] += sum_num[t + half_width];
      sum_den[t] += sum_den[t + half_width];
    }
    barrier();
  }
  float h_new = hi;
  float row_sign = 1.0;
  if (sum_den[0] > 0.0) {
    const float ratio = sum_num[0] / sum_den[0];
    if (ratio < 0.0) row_sign = -1.0;
    if (abs(ratio) > 0.0) h_new = abs(ratio);
  }
  for (uint w = t; w < pc.words; w += VKBLR_REFIT_ROW_WG) {
    uint word = 0;
    for (uint b = 0; b < 32; ++b) {
      if (row_sign * s[32 * w + b] > 0.0) word |= 1u << b;
    }
    bits[i * pc.words + w] = word;
  }
  if (t == 0) h[i] = h_new;
}
