#version 460
// The GPU refit's S_V step on one block of rows, one workgroup per row
// j = row0 + jl (jl < rows) of S_V (vkblr/ops/refit.hpp,
// docs/sign-optimizer.md): each row's exact coordinate descent against the
// block's half-gradient as it came in, as if it were the only row to change.
//   E [rows][r] = (C·Fᵀ)[row0 + jl][:] (the half-gradient Et's rows without
//   their factor g_j), QA [r][r] symmetric, C_DIAG [n] (C's diagonal), G [n],
//   BITS [n][words] (read only);
//   out: PROPOSED [rows][words] (the row's new signs), DG [rows][r] =
//   g_j·(s_new − s_old), DL [rows] = the row's own exact ΔL (the sum of its
//   accepted flips' ΔL).
// With e = g_j·E[jl], K_jj = g_j²·C_jj and for k ascending:
// ΔL = 4·(−s_k·e_k + QA_kk·K_jj); the sign flips when that is < 0, and then
// e += (s_new − s_old)·K_jj·QA[k][:]. Passes until none flips (at most
// VKBLR_REFIT_MAX_PASSES). The flip decision is uniform across the
// workgroup, as in refit_u_rows.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_REFIT_ROW_WG) in;
layout(constant_id = 0) const uint RANK = 32;  // = pc.r

layout(set = 0, binding = 0) readonly buffer EIn { float e_in[]; };
layout(set = 0, binding = 1) readonly buffer QaIn { float qa[]; };
layout(set = 0, binding = 2) readonly buffer CDiag { float c_diag[]; };
layout(set = 0, binding = 3) readonly buffer G { float g[]; };
layout(set = 0, binding = 4) readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 5) writeonly buffer Proposed { uint proposed[]; };
layout(set = 0, binding = 6) writeonly buffer Dg { float dg[]; };
layout(set = 0, binding = 7) writeonly buffer Dl { float dl[]; };

shared float s[RANK];
shared float e[RANK];
shared float qa_diag[RANK];

float sign_of(uint row, uint k) { return ((bits[row * pc.words + k / 32] >> (k % 32)) & 1u) != 0 ? 1.0 : -1.0; }

void main() {
  const uint jl = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (jl >= pc.rows) return;  // the whole workgroup
  const uint j = pc.row0 + jl;
  const uint t = gl_LocalInvocationIndex;
  const uint r = pc.r;
  const float gj = g[j];
  for (uint k = t; k < r; k += VKBLR_REFIT_ROW_WG) {
    s[k] = sign_of(j, k);
    e[k] = gj * e_in[jl * r + k];
    qa_diag[k] = qa[k * r + k];
  }
  barrier();

  const float kjj = gj * gj * c_diag[j];
  float gain = 0.0;  // Σ accepted ΔL / 4
  for (uint pass = 0; pass < VKBLR_REFIT_MAX_PASSES; ++pass) {
    bool changed = false;
    for (uint k = 0; k < r; ++k) {
      const float sk = s[k];
      const float delta = -sk * e[k] + qa_diag[k] * kjj;
      if (delta < 0.0) {
        barrier();
        const float step = -2.0 * sk;
        for (uint c = t; c < r; c += VKBLR_REFIT_ROW_WG) e[c] += step * kjj * qa[k * r + c];
        if (t == 0) s[k] = -sk;
        barrier();
        gain += delta;
        changed = true;
      }
    }
    if (!changed) break;
  }

  for (uint k = t; k < r; k += VKBLR_REFIT_ROW_WG) dg[jl * r + k] = gj * (s[k] - sign_of(j, k));
  for (uint w = t; w < pc.words; w += VKBLR_REFIT_ROW_WG) {
    uint word = 0;
    for (uint b = 0; b < 32; ++b) {
      if (s[32 * w + b] > 0.0) word |= 1u << b;
    }
    proposed[jl * pc.words + w] = word;
  }
  if (t == 0) dl[jl] = 4.0 * gain;
}
