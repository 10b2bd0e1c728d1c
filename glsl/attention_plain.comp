#version 460
// Causal self-attention with grouped-query heads, f32 throughout, on any
// Vulkan 1.3 device (layouts and push constants: attention.h). Tiled: no
// T×T score matrix exists anywhere; a workgroup holds B×B scores at a time.
//
//   attention_fwd_plain   o, lse <- q, k, v
//     workgroup = (query block, head, sequence); key blocks 0..diagonal in
//     order with an online softmax in base 2: per block m' = max(m, rowmax),
//     α = 2^(m − m'), p = 2^(s − m'), l' = α·l + Σp, o' = α·o + p·V; at the
//     end o = o'/l and lse = (m + log2 l)·ln 2 (natural log of Σ exp(scale·q·k)).
//   attention_dkdv_plain  dk, dv <- q, k, v, do, lse, delta
//     workgroup = (key block, kv head, sequence); for each query head of the
//     kv head's group in order, query blocks from the diagonal on in order:
//     P = 2^(scale·log2e·q·k − lse·log2e), dS = P·(do·v − delta),
//     dv += Pᵀ·do, dk += dSᵀ·q; then dk ·= scale/gscale, dv ·= 1/gscale.
//   attention_dq_plain    dq <- q, k, v, do, lse, delta
//     workgroup = (query block, head, sequence); key blocks 0..diagonal in
//     order: dq += dS·k; then dq ·= scale/gscale.
// Scores, P and dS are masked to zero where key > query (causal within each
// sequence); rows past the sequence are staged as zeros and never written.
// Every output element is written by one invocation, its sums in a fixed
// order: the same bits run after run.
//
// Invocations: TPR = 8 per row of the block, B rows (B = 8, 16 or 32, chosen
// by the host to fit the device's shared memory). Invocation (r, c) owns
// the vec4 columns c + 8·j of its row (j < D/32) and the block's columns
// c + 8·t (t < B/8) of the score row.
// @variant attention_fwd_plain MODE=0
// @variant attention_dkdv_plain MODE=1
// @variant attention_dq_plain MODE=2
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention.h"

layout(constant_id = ATTN_SPEC_WG_SIZE) const uint WG_SIZE = 128;  // TPR · B
layout(constant_id = ATTN_SPEC_D) const uint D = 64;               // head_dim, a multiple of 32
layout(constant_id = ATTN_SPEC_BQ) const uint B = 16;              // rows per block (queries and keys)
layout(local_size_x_id = ATTN_SPEC_WG_SIZE) in;

const uint TPR = ATTN_PLAIN_TPR;
const uint HV = D / 4;     // vec4 per head row
const uint SV = HV + 1;    // shared row stride in vec4 (16 bytes of padding)
const uint CV = HV / TPR;  // vec4 columns per invocation
const uint SPT = B / TPR;  // score columns per invocation
const uint SS = B + 1;     // shared score row stride (floats)
const float LOG2E = 1.4426950408889634;
const float LN2 = 0.6931471805599453;

layout(set = 0, binding = 0) restrict readonly buffer Q { vec4 q4[]; };
layout(set = 0, binding = 1) restrict readonly buffer K { vec4 k4[]; };
layout(set = 0, binding = 2) restrict readonly buffer V { vec4 v4[]; };
#if MODE == 0
layout(set = 0, binding = 3) restrict writeonly buffer O { vec4 o4[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Lse { float lse[]; };
#else
layout(set = 0, binding = 4) restrict readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 5) restrict readonly buffer DO { vec4 do4[]; };
layout(set = 0, binding = 6) restrict readonly buffer Delta { float delta[]; };
#endif
#if MODE == 1
layout(set = 0, binding = 8) restrict writeonly buffer DK { vec4 dk4[]; };
layout(set = 0, binding = 9) restrict writeonly buffer DVv { vec4 dv4[]; };
#elif MODE == 2
layout(set = 0, binding = 7) restrict writeonly buffer DQ { vec4 dq4[]; };
#endif

float neg_inf() { return uintBitsToFloat(0xff800000u); }

// DST rows 0..B-1 <- SRC rows ROW0 + R0 + r, vec4 columns COL4 .. COL4 + HV
// of rows STRIDE4 vec4 long; zeros for rows past the sequence.
#define STAGE_ROWS(DST, SRC, ROW0, R0, STRIDE4, COL4)                                                      \
  for (uint e_ = gl_LocalInvocationIndex; e_ < B * HV; e_ += WG_SIZE) {                                    \
    const uint r_ = e_ / HV, c_ = e_ % HV;                                                                 \
    DST[r_ * SV + c_] = (R0) + r_ < pc.seq ? SRC[((ROW0) + (R0) + r_) * (STRIDE4) + (COL4) + c_] : vec4(0.0); \
  }

// Σ_e dot(A[a·SV + e], B[b·SV + e]) over one head row, e in order.
#define ROW_DOT(RESULT, A, ROW_A, BB, ROW_B)                                    \
  {                                                                            \
    float s_ = 0.0;                                                            \
    for (uint e_ = 0; e_ < HV; ++e_) s_ += dot(A[(ROW_A) * SV + e_], BB[(ROW_B) * SV + e_]); \
    RESULT = s_;                                                               \
  }

#if MODE == 0
shared vec4 q_s[B * SV];
shared vec4 kv_s[B * SV];  // the key block, then its values
shared float s_s[B * SS];  // scores (base 2), then P
shared float alpha_s[B];
shared float l_s[B];

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint r = tid / TPR, c = tid % TPR;
  const uint blocks = (pc.seq + B - 1) / B;
  const uint qb = blocks - 1 - gl_WorkGroupID.x;  // the longest rows first
  const uint h = gl_WorkGroupID.y;
  const uint g = h / pc.group;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint q0 = qb * B;
  const uint qi = q0 + r;
  const uint qs4 = pc.q_stride / 4, ks4 = pc.kv_stride / 4;

  STAGE_ROWS(q_s, q4, row0, q0, qs4, h * HV)
  vec4 acc[CV];
  [[unroll]] for (uint j = 0; j < CV; ++j) acc[j] = vec4(0.0);
  float m_run = neg_inf(), l_run = 0.0;  // meaningful in the row's invocation c = 0
  for (uint kb = 0; kb <= qb; ++kb) {
    const uint k0 = kb * B;
    barrier();  // the previous block is done with kv_s and s_s
    STAGE_ROWS(kv_s, k4, row0, k0, ks4, g * HV)
    barrier();
    [[unroll]] for (uint t = 0; t < SPT; ++t) {
      const uint j = c + TPR * t;
      float s;
      ROW_DOT(s, q_s, r, kv_s, j)
      s_s[r * SS + j] = (k0 + j <= qi && qi < pc.seq) ? s * pc.scale_log2 : neg_inf();
    }
    barrier();
    STAGE_ROWS(kv_s, v4, row0, k0, ks4, g * HV)
    if (c == 0) {
      float block_max = neg_inf();
      for (uint j = 0; j < B; ++j) block_max = max(block_max, s_s[r * SS + j]);
      const float m_new = max(m_run, block_max);
      const float alpha = m_run == neg_inf() ? 0.0 : exp2(m_run - m_new);
      float sum = 0.0;
      for (uint j = 0; j < B; ++j) {
        const float s = s_s[r * SS + j];
        const float p = s == neg_inf() ? 0.0 : exp2(s - m_new);
        s_s[r * SS + j] = p;
        sum += p;
      }
      l_run = l_run * alpha + sum;
      m_run = m_new;
      alpha_s[r] = alpha;
    }
    barrier();
    const float alpha = alpha_s[r];
    [[unroll]] for (uint j = 0; j < CV; ++j) acc[j] *= alpha;
    for (uint kk = 0; kk < B; ++kk) {
      const float p = s_s[r * SS + kk];
      [[unroll]] for (uint j = 0; j < CV; ++j) acc[j] += p * kv_s[kk * SV + c + TPR * j];
    }
  }
  if (c == 0) l_s[r] = l_run;
  barrier();
  if (qi < pc.seq) {
    const float l = l_s[r];
    const uint out4 = (row0 + qi) * qs4 + h * HV;
    [[unroll]] for (uint j = 0; j < CV; ++j) o4[out4 + c + TPR * j] = acc[j] / l;
    if (c == 0) lse[(row0 + qi) * pc.heads + h] = (m_run + log2(l_run)) * LN2;
  }
}

#elif MODE == 1
shared vec4 k_s[B * SV];
shared vec4 v_s[B * SV];
shared vec4 q_s[B * SV];
shared vec4 do_s[B * SV];
shared float p_s[B * SS];   // Pᵀ: [key][query]
shared float ds_s[B * SS];  // dSᵀ
shared float lse2_s[B];     // lse · log2(e) of the query block
shared float delta_s[B];

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint r = tid / TPR, c = tid % TPR;
  const uint blocks = (pc.seq + B - 1) / B;
  const uint kb = gl_WorkGroupID.x;  // the keys with the most queries first
  const uint g = gl_WorkGroupID.y;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint k0 = kb * B;
  const uint kj = k0 + r;
  const uint qs4 = pc.q_stride / 4, ks4 = pc.kv_stride / 4;

  STAGE_ROWS(k_s, k4, row0, k0, ks4, g * HV)
  STAGE_ROWS(v_s, v4, row0, k0, ks4, g * HV)
  vec4 dk[CV], dv[CV];
  [[unroll]] for (uint j = 0; j < CV; ++j) {
    dk[j] = vec4(0.0);
    dv[j] = vec4(0.0);
  }
  for (uint hh = 0; hh < pc.group; ++hh) {
    const uint h = g * pc.group + hh;
    for (uint qb = kb; qb < blocks; ++qb) {
      const uint q0 = qb * B;
      barrier();  // the previous query block is done with q_s, do_s, p_s, ds_s
      STAGE_ROWS(q_s, q4, row0, q0, qs4, h * HV)
      STAGE_ROWS(do_s, do4, row0, q0, qs4, h * HV)
      if (tid < B) {
        const bool ok = q0 + tid < pc.seq;
        const uint at = (row0 + q0 + tid) * pc.heads + h;
        lse2_s[tid] = ok ? lse[at] * LOG2E : 0.0;
        delta_s[tid] = ok ? delta[at] : 0.0;
      }
      barrier();
      [[unroll]] for (uint t = 0; t < SPT; ++t) {
        const uint i = c + TPR * t;
        const uint qi = q0 + i;
        float s, dp;
        ROW_DOT(s, k_s, r, q_s, i)
        ROW_DOT(dp, v_s, r, do_s, i)
        const float p = (kj <= qi && qi < pc.seq) ? exp2(s * pc.scale_log2 - lse2_s[i]) : 0.0;
        p_s[r * SS + i] = p;
        ds_s[r * SS + i] = p * (dp - delta_s[i]);
      }
      barrier();
      for (uint i = 0; i < B; ++i) {
        const float p = p_s[r * SS + i];
        const float ds = ds_s[r * SS + i];
        [[unroll]] for (uint j = 0; j < CV; ++j) {
          dv[j] += p * do_s[i * SV + c + TPR * j];
          dk[j] += ds * q_s[i * SV + c + TPR * j];
        }
      }
    }
  }
  if (kj < pc.seq) {
    const uint out4 = (row0 + kj) * ks4 + g * HV;
    [[unroll]] for (uint j = 0; j < CV; ++j) {
      dk4[out4 + c + TPR * j] = dk[j] * pc.dk_scale;
      dv4[out4 + c + TPR * j] = dv[j] * pc.dv_scale;
    }
  }
}

#else
shared vec4 q_s[B * SV];
shared vec4 do_s[B * SV];
shared vec4 k_s[B * SV];
shared vec4 v_s[B * SV];
shared float ds_s[B * SS];  // dS: [query][key]

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint r = tid / TPR, c = tid % TPR;
  const uint blocks = (pc.seq + B - 1) / B;
  const uint qb = blocks - 1 - gl_WorkGroupID.x;  // the longest rows first
  const uint h = gl_WorkGroupID.y;
  const uint g = h / pc.group;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint q0 = qb * B;
  const uint qi = q0 + r;
  const bool row_ok = qi < pc.seq;
  const uint qs4 = pc.q_stride / 4, ks4 = pc.kv_stride / 4;

  STAGE_ROWS(q_s, q4, row0, q0, qs4, h * HV)
  STAGE_ROWS(do_s, do4, row0, q0, qs4, h * HV)
  const uint at = (row0 + qi) * pc.heads + h;
  const float lse2 = row_ok ? lse[at] * LOG2E : 0.0;
  const float dl = row_ok ? delta[at] : 0.0;
  vec4 dq[CV];
  [[unroll]] for (uint j = 0; j < CV; ++j) dq[j] = vec4(0.0);
  for (uint kb = 0; kb <= qb; ++kb) {
    const uint k0 = kb * B;
    barrier();  // the previous block is done with k_s, v_s, ds_s
    STAGE_ROWS(k_s, k4, row0, k0, ks4, g * HV)
    STAGE_ROWS(v_s, v4, row0, k0, ks4, g * HV)
    barrier();
    [[unroll]] for (uint t = 0; t < SPT; ++t) {
      const uint j = c + TPR * t;
      float s, dp;
      ROW_DOT(s, q_s, r, k_s, j)
      ROW_DOT(dp, do_s, r, v_s, j)
      const float p = (k0 + j <= qi && row_ok) ? exp2(s * pc.scale_log2 - lse2) : 0.0;
      ds_s[r * SS + j] = p * (dp - dl);
    }
    barrier();
    for (uint j = 0; j < B; ++j) {
      const float ds = ds_s[r * SS + j];
      [[unroll]] for (uint jj = 0; jj < CV; ++jj) dq[jj] += ds * k_s[j * SV + c + TPR * jj];
    }
  }
  if (row_ok) {
    const uint out4 = (row0 + qi) * qs4 + h * HV;
    [[unroll]] for (uint j = 0; j < CV; ++j) dq4[out4 + c + TPR * j] = dq[j] * pc.dk_scale;
  }
}
#endif
