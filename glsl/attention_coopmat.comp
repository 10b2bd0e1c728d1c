#version 460
// Causal self-attention with grouped-query heads on cooperative matrices:
// the products QKᵀ, PV and the backward's dOVᵀ, PᵀdO, dSᵀQ, dSK run as
// f16 × f16 -> f32 fragments of the device's F×F×F shape; the softmax, the
// masks and dS run in f32 (layouts and push constants: attention.h). q, k,
// v and do are read as their f16 copies (cvt; do staged times gscale); P
// and dS are rounded to f16 where they enter a product. The same algorithm
// as attention_plain.comp (see there). A workgroup is 4 warps (subgroups);
// each warp owns F rows of the block and works on them alone between the
// workgroup's barriers, which only guard the shared K/V (or Q/dO) tiles:
//
//   attention_fwd_coopmat   workgroup = (BQ = 4F query rows, head,
//     sequence). Q is held as fragments; per key block of BK keys the K and
//     V tiles are staged in shared memory (f16, rows padded by 16 bytes).
//     Each warp: S = Q·Kᵀ of its rows into its part of shared memory, the
//     online softmax of its rows (SG/F invocations per row, each a run of
//     CPL columns read as vec4 and written as f16 in uvec4, f32, base 2), P
//     back as f16 fragments; O stays in accumulators, rescaled by α per row
//     through a row-index matrix (an accumulator loaded with each element's
//     row number: element-wise operations on matrices of one type see the
//     same element at the same index), then O += P·V.
//   attention_dq_coopmat    the same blocking; Q and dO held as fragments.
//     Each warp per key block: S = Q·Kᵀ and dP = dO·Vᵀ in accumulators,
//     dS = P·(dP − delta) element by element in the accumulator (row- and
//     column-index matrices give each element's place), stored as an f16
//     accumulator to its part of shared memory, then dQ += dS·K.
//   attention_dkdv_coopmat  workgroup = (BK = 4F keys, kv head, sequence);
//     each warp holds the K and V rows of its F keys as fragments and
//     accumulates their dK and dV. For every query head of the group in
//     order and query blocks of BQ from the diagonal on in order: the Q and
//     dO tiles are staged; each warp: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, Pᵀ and dSᵀ
//     element by element in the accumulators, stored as f16 accumulators to
//     its part of shared memory, then dV += Pᵀ·dO and dK += dSᵀ·Q.
// The coopmat2 variants (CM2) take VK_NV_cooperative_matrix2's operations on
// these subgroup-scope matrices where the device has them, and keep P and dS
// in registers:
//   attention_fwd_coopmat2   S fragments of the warp's rows masked by a
//     per-element function (the element's row and column), the row maxima
//     and sums by row reductions (per fragment, then fragments in order),
//     the running max m, sum l and rescale α as accumulators whose every
//     element holds its row's value, P converted to A fragments for O += P·V.
//     o and lse are other bits than attention_fwd_coopmat's (the order of
//     the row sums), the same bits run after run.
//   attention_dq_coopmat2, attention_dkdv_coopmat2   dS (and Pᵀ, dSᵀ)
//     converted to A fragments as each fragment is computed, then used at
//     once (the products in the KHR kernels' order; the bits need not be
//     theirs: lavapipe's differ).
// Outputs go through shared memory in column chunks of EPI and only rows
// inside the sequence are written. Every output element is one
// accumulator's, summed in a fixed order (fragments in order): the same
// bits run after run.
// @variant attention_fwd_coopmat MODE=0
// @variant attention_dkdv_coopmat MODE=1
// @variant attention_dq_coopmat MODE=2
// @variant attention_fwd_coopmat2 MODE=0 CM2=1
// @variant attention_dkdv_coopmat2 MODE=1 CM2=1
// @variant attention_dq_coopmat2 MODE=2 CM2=1
#ifndef CM2
#define CM2 0
#endif
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#if CM2
#extension GL_NV_cooperative_matrix2 : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention.h"

layout(constant_id = ATTN_SPEC_WG_SIZE) const uint WG_SIZE = 128;  // 4 · SG
layout(constant_id = ATTN_SPEC_D) const uint D = 64;               // head_dim, a multiple of 32
layout(constant_id = ATTN_SPEC_BQ) const uint BQ = 64;             // fwd, dq: 4F query rows; dkdv: queries per block
layout(constant_id = ATTN_SPEC_BK) const uint BK = 64;             // fwd, dq: keys per block; dkdv: 4F keys
layout(constant_id = ATTN_SPEC_SG) const uint SG = 32;
layout(constant_id = ATTN_SPEC_F) const uint F = 16;
layout(constant_id = ATTN_SPEC_EPI) const uint EPI = 64;
layout(constant_id = ATTN_SPEC_PF) const bool PF = true;            // prefetch the next block's tiles
layout(local_size_x_id = ATTN_SPEC_WG_SIZE) in;

#define FragA coopmat<float16_t, gl_ScopeSubgroup, F, F, gl_MatrixUseA>
#define FragB coopmat<float16_t, gl_ScopeSubgroup, F, F, gl_MatrixUseB>
#define Acc coopmat<float, gl_ScopeSubgroup, F, F, gl_MatrixUseAccumulator>
#define Acc16 coopmat<float16_t, gl_ScopeSubgroup, F, F, gl_MatrixUseAccumulator>
#define ROW_MAJOR gl_CooperativeMatrixLayoutRowMajor
#define COL_MAJOR gl_CooperativeMatrixLayoutColumnMajor

const uint SH = D + 8;     // f16 tile row stride in halves
const uint SH8 = SH / 8;   // ... in uvec4
const uint HV8 = D / 8;    // uvec4 per head row
const uint DF = D / F;     // fragments along head_dim
const uint EPI_STRIDE = EPI + 4;  // epilogue row stride in floats
const float LOG2E = 1.4426950408889634;
const float LN2 = 0.6931471805599453;

layout(set = 0, binding = 0) restrict readonly buffer Q { uvec4 q16[]; };
layout(set = 0, binding = 1) restrict readonly buffer K { uvec4 k16[]; };
layout(set = 0, binding = 2) restrict readonly buffer V { uvec4 v16[]; };
#if MODE == 0
layout(set = 0, binding = 3) restrict writeonly buffer O { vec4 o4[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Lse { float lse[]; };
#else
layout(set = 0, binding = 4) restrict readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 5) restrict readonly buffer DO { uvec4 do16[]; };
layout(set = 0, binding = 6) restrict readonly buffer Delta { float delta[]; };
#endif
#if MODE == 1
layout(set = 0, binding = 8) restrict writeonly buffer DK { vec4 dk4[]; };
layout(set = 0, binding = 9) restrict writeonly buffer DVv { vec4 dv4[]; };
#elif MODE == 2
layout(set = 0, binding = 7) restrict writeonly buffer DQ { vec4 dq4[]; };
#endif

float neg_inf() { return uintBitsToFloat(0xff800000u); }

// DST[BASE + r·SH8 ..] rows 0..ROWS-1 <- f16 rows ROW0 + R0 + r of SRC,
// uvec4 columns COL8 .. COL8 + HV8 of rows STRIDE8 uvec4 long; zeros for
// rows past the sequence.
#define STAGE16(DST, BASE, SRC, ROWS, ROW0, R0, STRIDE8, COL8)                                          \
  for (uint e_ = gl_LocalInvocationIndex; e_ < (ROWS) * HV8; e_ += WG_SIZE) {                          \
    const uint r_ = e_ / HV8, c_ = e_ % HV8;                                                           \
    DST[(BASE) + r_ * SH8 + c_] =                                                                      \
        (R0) + r_ < pc.seq ? SRC[((ROW0) + (R0) + r_) * (STRIDE8) + (COL8) + c_] : uvec4(0u);          \
  }

// The prefetch (PF): the two tiles of the next block (fwd, dq: its K and V
// rows; dkdv: its Q and dO rows), each PF_ROWS rows of HV8 uvec4, are
// loaded into the invocations' registers (pf) before the current block is
// computed on, and stored into shared memory (DST: the first tile's rows,
// then the second's, SH8 apart) at the next block's start.
const uint PF_ROWS = MODE == 1 ? BQ : BK;
const uint PF_VECS = 2 * PF_ROWS * HV8;
const uint PF_N = PF ? (PF_VECS + WG_SIZE - 1) / WG_SIZE : 1;  // uvec4 per invocation
uvec4 pf[PF_N];

// pf <- rows R0 + r of the tiles A and B (ROW0, STRIDE8, COL8 as STAGE16);
// zeros for rows past the sequence.
#define PF_LOAD(SRC_A, SRC_B, ROW0, R0, STRIDE8, COL8)                                \
  [[unroll]] for (uint i_ = 0; i_ < PF_N; ++i_) {                                    \
    const uint e_ = gl_LocalInvocationIndex + i_ * WG_SIZE;                          \
    const uint t_ = e_ / (PF_ROWS * HV8), r_ = (e_ / HV8) % PF_ROWS, c_ = e_ % HV8;  \
    const uint at_ = ((ROW0) + (R0) + r_) * (STRIDE8) + (COL8) + c_;                 \
    pf[i_] = uvec4(0u);                                                              \
    if (e_ < PF_VECS && (R0) + r_ < pc.seq) pf[i_] = t_ == 0 ? SRC_A[at_] : SRC_B[at_]; \
  }

// DST's two tiles <- pf.
#define PF_PUT(DST)                                                                  \
  [[unroll]] for (uint i_ = 0; i_ < PF_N; ++i_) {                                    \
    const uint e_ = gl_LocalInvocationIndex + i_ * WG_SIZE;                          \
    const uint t_ = e_ / (PF_ROWS * HV8), r_ = (e_ / HV8) % PF_ROWS, c_ = e_ % HV8;  \
    if (e_ < PF_VECS) DST[(t_ * PF_ROWS + r_) * SH8 + c_] = pf[i_];                  \
  }

// The larger of three sizes (specialization-constant expressions).
#define MAX3(A, B_, C) ((A) > (B_) ? ((A) > (C) ? (A) : (C)) : ((B_) > (C) ? (B_) : (C)))

// This warp's shared-memory writes made visible to its own invocations,
// all of which wait here (the warp's scratch needs no workgroup barrier).
void warp_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

#if MODE == 0 || MODE == 2
// ---------------------------------------------------------------- fwd, dq
// The K tile at 0 and the V tile at BK·SH8; the Q (and dO) tile at the
// start; the output's column chunks at the end.
shared uvec4 kv_s[MAX3(2 * BK * SH8, BQ * SH8, BQ * EPI_STRIDE / 4)];

// Writes the accumulators ACC[DF] of every warp's F rows as output rows
// q0 + r < seq (OUT4 rows STRIDE4 vec4 long, head columns from COL4), each
// value VALUE of v (the element) and r (the row in the block).
#define EPILOGUE(ACC, OUT4, ROW0, R0, STRIDE4, COL4, VALUE)                                              \
  for (uint c0 = 0; c0 < D; c0 += EPI) {                                                                 \
    barrier();                                                                                           \
    [[unroll]] for (uint n = 0; n < DF; ++n) {                                                           \
      if (n * F >= c0 && n * F < c0 + EPI) {                                                             \
        coopMatStore(ACC[n], kv_s, (warp * F * EPI_STRIDE + n * F - c0) / 4, EPI_STRIDE / 4, ROW_MAJOR); \
      }                                                                                                  \
    }                                                                                                    \
    barrier();                                                                                           \
    for (uint e = tid; e < BQ * EPI / 4; e += WG_SIZE) {                                                 \
      const uint r = e / (EPI / 4), cc = (e % (EPI / 4)) * 4;                                            \
      if ((R0) + r < pc.seq) {                                                                           \
        const vec4 v = uintBitsToFloat(kv_s[(r * EPI_STRIDE + cc) / 4]);                                 \
        OUT4[((ROW0) + (R0) + r) * (STRIDE4) + (COL4) + (c0 + cc) / 4] = VALUE;                          \
      }                                                                                                  \
    }                                                                                                    \
  }
#endif

#if MODE == 0
#if CM2
const uint NB = BK / F;          // S fragments per warp and key block
shared float lse_s[4 * F * F];   // each warp's lse accumulator, at the end

float max_of(const in float a, const in float b) { return max(a, b); }
float sum_of(const in float a, const in float b) { return a + b; }

// The score of row r, column c of a fragment whose first query is q_first
// and first key k_first: x · scale (base 2), −∞ where the key comes after
// the query or the query is past the sequence.
float masked_score(const in uint r, const in uint c, const in float x, const in uint q_first, const in uint k_first,
                   const in uint seq, const in float scale) {
  return (k_first + c <= q_first + r && q_first + r < seq) ? x * scale : neg_inf();
}
#else
const uint L = SG / F;      // softmax invocations per row
const uint CPL = BK / L;    // ... and columns of each, a multiple of 8 (the tile choice)
const uint SS = BK + 4;     // score row stride (floats)
const uint SP = BK + 8;     // f16 P row stride (halves)
shared vec4 s4_s[BQ * SS / 4];  // each warp's F rows of S; first the row-index matrix
shared uvec4 p8_s[BQ * SP / 8];  // ... and of P, eight halves per vector
shared float part_s[BQ * L];  // per row: each invocation's partial max, then sum
shared float alpha_s[BQ];     // per row: α of the block; at the end l
#endif

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint warp = gl_SubgroupID;
  const uint blocks = (pc.seq + BQ - 1) / BQ;
  const uint qb = blocks - 1 - gl_WorkGroupID.x;  // the longest rows first
  const uint h = gl_WorkGroupID.y;
  const uint g = h / pc.group;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint q0 = qb * BQ;
  const uint qs8 = pc.q_stride / 8, ks8 = pc.kv_stride / 8;
  const uint wr = warp * F;  // the warp's first row in the block
#if !CM2
  const uint sr = wr + gl_SubgroupInvocationID / L, sp = gl_SubgroupInvocationID % L;  // softmax: row, part
  const uint qi = q0 + sr;
#endif

  if (PF) PF_LOAD(k16, v16, row0, 0, ks8, g * HV8)  // the first key block
  // Q as fragments; KHR: the row-index matrix
  STAGE16(kv_s, 0, q16, BQ, row0, q0, qs8, h * HV8)
#if !CM2
  for (uint e = tid; e < F * F / 4; e += WG_SIZE) s4_s[e] = vec4(float(4 * e / F));
#endif
  barrier();
  FragA qf[DF];
  [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
    coopMatLoad(qf[kk], kv_s, (wr * SH + kk * F) / 8, SH8, ROW_MAJOR);
  }
#if !CM2
  Acc rowid;
  coopMatLoad(rowid, s4_s, 0, F / 4, ROW_MAJOR);
#endif
  Acc o[DF];
  [[unroll]] for (uint n = 0; n < DF; ++n) o[n] = Acc(0.0);
#if CM2
  Acc m_run = Acc(neg_inf()), l_run = Acc(0.0);  // every element: its row's running max and sum
#else
  float m_run = neg_inf(), l_run = 0.0;  // of row sr, the same in each of its L invocations
#endif

  const uint k_blocks = (min(q0 + BQ, pc.seq) - 1) / BK + 1;
  for (uint kb = 0; kb < k_blocks; ++kb) {
    const uint k0 = kb * BK;
    barrier();  // every warp is done with kv_s (the previous block, or the Q (and row-index) loads)
    if (PF) {
      PF_PUT(kv_s)
    } else {
      STAGE16(kv_s, 0, k16, BK, row0, k0, ks8, g * HV8)
      STAGE16(kv_s, BK * SH8, v16, BK, row0, k0, ks8, g * HV8)
    }
    barrier();
    if (PF && kb + 1 < k_blocks) PF_LOAD(k16, v16, row0, k0 + BK, ks8, g * HV8)
#if CM2
    Acc s[NB];
    [[unroll]] for (uint n = 0; n < NB; ++n) {
      s[n] = Acc(0.0);
      [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
        FragB kt;
        coopMatLoad(kt, kv_s, (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        s[n] = coopMatMulAdd(qf[kk], kt, s[n]);
      }
      coopMatPerElementNV(s[n], s[n], masked_score, q0 + wr, k0 + n * F, pc.seq, pc.scale_log2);
    }
    // the rows' maxima, the new running max and α
    Acc m_new, part;
    coopMatReduceNV(m_new, s[0], gl_CooperativeMatrixReduceRowNV, max_of);
    [[unroll]] for (uint n = 1; n < NB; ++n) {
      coopMatReduceNV(part, s[n], gl_CooperativeMatrixReduceRowNV, max_of);
      [[unroll]] for (int i = 0; i < part.length(); ++i) m_new[i] = max(m_new[i], part[i]);
    }
    Acc alpha;
    [[unroll]] for (int i = 0; i < m_new.length(); ++i) {
      m_new[i] = max(m_run[i], m_new[i]);
      alpha[i] = m_run[i] == neg_inf() ? 0.0 : exp2(m_run[i] - m_new[i]);
    }
    m_run = m_new;
    // P in place of S, its row sums, l = l·α + Σ P
    [[unroll]] for (uint n = 0; n < NB; ++n) {
      [[unroll]] for (int i = 0; i < s[n].length(); ++i) s[n][i] = s[n][i] == neg_inf() ? 0.0 : exp2(s[n][i] - m_run[i]);
    }
    Acc block_sum;
    coopMatReduceNV(block_sum, s[0], gl_CooperativeMatrixReduceRowNV, sum_of);
    [[unroll]] for (uint n = 1; n < NB; ++n) {
      coopMatReduceNV(part, s[n], gl_CooperativeMatrixReduceRowNV, sum_of);
      [[unroll]] for (int i = 0; i < part.length(); ++i) block_sum[i] = block_sum[i] + part[i];
    }
    [[unroll]] for (int i = 0; i < l_run.length(); ++i) l_run[i] = l_run[i] * alpha[i] + block_sum[i];
    // O = diag(α)·O + P·V
    [[unroll]] for (uint n = 0; n < DF; ++n) {
      [[unroll]] for (int i = 0; i < o[n].length(); ++i) o[n][i] *= alpha[i];
    }
    [[unroll]] for (uint kk = 0; kk < NB; ++kk) {
      const FragA pa = FragA(s[kk]);
      [[unroll]] for (uint n = 0; n < DF; ++n) {
        FragB vb;
        coopMatLoad(vb, kv_s, BK * SH8 + (kk * F * SH + n * F) / 8, SH8, ROW_MAJOR);
        o[n] = coopMatMulAdd(pa, vb, o[n]);
      }
    }
#else
    [[unroll]] for (uint n = 0; n < BK / F; ++n) {
      Acc s = Acc(0.0);
      [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
        FragB kt;
        coopMatLoad(kt, kv_s, (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        s = coopMatMulAdd(qf[kk], kt, s);
      }
      coopMatStore(s, s4_s, (wr * SS + n * F) / 4, SS / 4, ROW_MAJOR);
    }
    warp_sync();
    // online softmax of row sr over this block's columns sp·CPL ..
    float sv[CPL];
    float part_max = neg_inf();
    [[unroll]] for (uint c4 = 0; c4 < CPL / 4; ++c4) {
      const vec4 x = s4_s[(sr * SS + sp * CPL) / 4 + c4];
      [[unroll]] for (uint t = 0; t < 4; ++t) {
        const uint c = 4 * c4 + t;
        sv[c] = (k0 + sp * CPL + c <= qi && qi < pc.seq) ? x[t] * pc.scale_log2 : neg_inf();
        part_max = max(part_max, sv[c]);
      }
    }
    part_s[sr * L + sp] = part_max;
    warp_sync();
    float block_max = neg_inf();
    [[unroll]] for (uint p = 0; p < L; ++p) block_max = max(block_max, part_s[sr * L + p]);
    const float m_new = max(m_run, block_max);
    const float alpha = m_run == neg_inf() ? 0.0 : exp2(m_run - m_new);
    float part_sum = 0.0;
    [[unroll]] for (uint c8 = 0; c8 < CPL / 8; ++c8) {
      uint w[4];
      [[unroll]] for (uint t = 0; t < 4; ++t) {
        const uint c = 8 * c8 + 2 * t;
        const float p0 = sv[c] == neg_inf() ? 0.0 : exp2(sv[c] - m_new);
        const float p1 = sv[c + 1] == neg_inf() ? 0.0 : exp2(sv[c + 1] - m_new);
        part_sum += p0;
        part_sum += p1;
        w[t] = packFloat2x16(f16vec2(float16_t(p0), float16_t(p1)));
      }
      p8_s[(sr * SP + sp * CPL) / 8 + c8] = uvec4(w[0], w[1], w[2], w[3]);
    }
    m_run = m_new;
    warp_sync();  // every part's max is read before the sums replace it
    part_s[sr * L + sp] = part_sum;
    if (sp == 0) alpha_s[sr] = alpha;
    warp_sync();
    float block_sum = 0.0;
    [[unroll]] for (uint p = 0; p < L; ++p) block_sum += part_s[sr * L + p];
    l_run = l_run * alpha + block_sum;
    // O = diag(α)·O + P·V
    [[unroll]] for (uint n = 0; n < DF; ++n) {
      for (int i = 0; i < o[n].length(); ++i) o[n][i] *= alpha_s[wr + uint(rowid[i])];
    }
    [[unroll]] for (uint kk = 0; kk < BK / F; ++kk) {
      FragA pa;
      coopMatLoad(pa, p8_s, (wr * SP + kk * F) / 8, SP / 8, ROW_MAJOR);
      [[unroll]] for (uint n = 0; n < DF; ++n) {
        FragB vb;
        coopMatLoad(vb, kv_s, BK * SH8 + (kk * F * SH + n * F) / 8, SH8, ROW_MAJOR);
        o[n] = coopMatMulAdd(pa, vb, o[n]);
      }
    }
#endif
  }
#if CM2
  // O / l; lse = (m + log2 l)·ln 2 of each row, read from the warp's lse_s
  Acc lse_acc;
  [[unroll]] for (int i = 0; i < lse_acc.length(); ++i) lse_acc[i] = (m_run[i] + log2(l_run[i])) * LN2;
  [[unroll]] for (uint n = 0; n < DF; ++n) {
    [[unroll]] for (int i = 0; i < o[n].length(); ++i) o[n][i] = o[n][i] / l_run[i];
  }
  coopMatStore(lse_acc, lse_s, warp * F * F, F, ROW_MAJOR);
  warp_sync();
  for (uint r = gl_SubgroupInvocationID; r < F; r += SG) {
    const uint qi = q0 + wr + r;
    if (qi < pc.seq) lse[(row0 + qi) * pc.heads + h] = lse_s[warp * F * F + r * F];
  }
  EPILOGUE(o, o4, row0, q0, pc.q_stride / 4, h * D / 4, v)
#else
  warp_sync();  // every α of the last block is read before l replaces it
  if (sp == 0) {
    alpha_s[sr] = l_run;
    if (qi < pc.seq) lse[(row0 + qi) * pc.heads + h] = (m_run + log2(l_run)) * LN2;
  }
  EPILOGUE(o, o4, row0, q0, pc.q_stride / 4, h * D / 4, v / alpha_s[r])
#endif
}

#elif MODE == 2
#if !CM2
const uint SP = BK + 8;  // f16 dS row stride (halves)
shared float16_t ds_s[BQ * SP];  // each warp's F rows of dS
#endif
shared float idx_s[2 * F * F];   // the row- and column-index matrices
shared float lse2_s[BQ];
shared float delta_s[BQ];

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint warp = gl_SubgroupID;
  const uint blocks = (pc.seq + BQ - 1) / BQ;
  const uint qb = blocks - 1 - gl_WorkGroupID.x;  // the longest rows first
  const uint h = gl_WorkGroupID.y;
  const uint g = h / pc.group;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint q0 = qb * BQ;
  const uint qs8 = pc.q_stride / 8, ks8 = pc.kv_stride / 8;
  const uint wr = warp * F;  // the warp's first row in the block

  if (PF) PF_LOAD(k16, v16, row0, 0, ks8, g * HV8)  // the first key block
  // Q and dO as fragments; the rows' lse and delta; the index matrices
  STAGE16(kv_s, 0, q16, BQ, row0, q0, qs8, h * HV8)
  for (uint r = tid; r < BQ; r += WG_SIZE) {
    const bool ok = q0 + r < pc.seq;
    const uint at = (row0 + q0 + r) * pc.heads + h;
    lse2_s[r] = ok ? lse[at] * LOG2E : 0.0;
    delta_s[r] = ok ? delta[at] : 0.0;
  }
  for (uint e = tid; e < F * F; e += WG_SIZE) {
    idx_s[e] = float(e / F);
    idx_s[F * F + e] = float(e % F);
  }
  barrier();
  FragA qf[DF], dof[DF];
  [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
    coopMatLoad(qf[kk], kv_s, (wr * SH + kk * F) / 8, SH8, ROW_MAJOR);
  }
  Acc rowid, colid;
  coopMatLoad(rowid, idx_s, 0, F, ROW_MAJOR);
  coopMatLoad(colid, idx_s, F * F, F, ROW_MAJOR);
  barrier();
  STAGE16(kv_s, 0, do16, BQ, row0, q0, qs8, h * HV8)
  barrier();
  [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
    coopMatLoad(dof[kk], kv_s, (wr * SH + kk * F) / 8, SH8, ROW_MAJOR);
  }
  Acc dq[DF];
  [[unroll]] for (uint n = 0; n < DF; ++n) dq[n] = Acc(0.0);

  const uint k_blocks = (min(q0 + BQ, pc.seq) - 1) / BK + 1;
  for (uint kb = 0; kb < k_blocks; ++kb) {
    const uint k0 = kb * BK;
    barrier();  // every warp is done with kv_s (the previous block, or the dO loads)
    if (PF) {
      PF_PUT(kv_s)
    } else {
      STAGE16(kv_s, 0, k16, BK, row0, k0, ks8, g * HV8)
      STAGE16(kv_s, BK * SH8, v16, BK, row0, k0, ks8, g * HV8)
    }
    barrier();
    if (PF && kb + 1 < k_blocks) PF_LOAD(k16, v16, row0, k0 + BK, ks8, g * HV8)
    [[unroll]] for (uint n = 0; n < BK / F; ++n) {
      Acc s = Acc(0.0), dp = Acc(0.0);
      [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
        FragB kt, vt;
        coopMatLoad(kt, kv_s, (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        coopMatLoad(vt, kv_s, BK * SH8 + (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        s = coopMatMulAdd(qf[kk], kt, s);
        dp = coopMatMulAdd(dof[kk], vt, dp);
      }
      // dS = P·(dP − delta), P = 2^(S·scale − lse), each element at its row and column
      for (int i = 0; i < s.length(); ++i) {
        const uint r = wr + uint(rowid[i]), j = n * F + uint(colid[i]);
        const uint qi = q0 + r;
        const float p = (k0 + j <= qi && qi < pc.seq) ? exp2(s[i] * pc.scale_log2 - lse2_s[r]) : 0.0;
        s[i] = p * (dp[i] - delta_s[r]);
      }
#if CM2
      // dQ += dS·K at once, the fragments in order
      const FragA da = FragA(s);
      [[unroll]] for (uint dn = 0; dn < DF; ++dn) {
        FragB kb_;
        coopMatLoad(kb_, kv_s, (n * F * SH + dn * F) / 8, SH8, ROW_MAJOR);
        dq[dn] = coopMatMulAdd(da, kb_, dq[dn]);
      }
#else
      coopMatStore(Acc16(s), ds_s, wr * SP + n * F, SP, ROW_MAJOR);
#endif
    }
#if !CM2
    warp_sync();
    [[unroll]] for (uint kk = 0; kk < BK / F; ++kk) {
      FragA da;
      coopMatLoad(da, ds_s, wr * SP + kk * F, SP, ROW_MAJOR);
      [[unroll]] for (uint n = 0; n < DF; ++n) {
        FragB kb_;
        coopMatLoad(kb_, kv_s, (kk * F * SH + n * F) / 8, SH8, ROW_MAJOR);
        dq[n] = coopMatMulAdd(da, kb_, dq[n]);
      }
    }
#endif
  }
  EPILOGUE(dq, dq4, row0, q0, pc.q_stride / 4, h * D / 4, v * pc.dk_scale)
}

#else
// ---------------------------------------------------------------- dkdv
const uint SPQ = BQ + 8;  // Pᵀ, dSᵀ row stride (halves)
// The Q tile at 0 and the dO tile at BQ·SH8; the K rows, then the V rows,
// of the workgroup's BK keys at the start; the output's column chunks
// (2·BK rows: dV, then dK) at the end.
shared uvec4 qd_s[MAX3(2 * BQ * SH8, BK * SH8, 2 * BK * EPI_STRIDE / 4)];
#if !CM2
shared float16_t p_s[BK * SPQ];   // each warp's F key rows of Pᵀ
shared float16_t ds_s[BK * SPQ];  // ... and of dSᵀ
#endif
shared float idx_s[2 * F * F];    // the row- and column-index matrices
shared float lse2_s[BQ];
shared float delta_s[BQ];

// The lse (base 2) and delta of a query block, this invocation's rows
// (tid + i·WG_SIZE < BQ) in registers, then in lse2_s and delta_s.
const uint STATS_N = (BQ + WG_SIZE - 1) / WG_SIZE;
float lse2_pf[STATS_N], delta_pf[STATS_N];

void load_stats(uint row0, uint q0, uint h) {
  [[unroll]] for (uint j = 0; j < STATS_N; ++j) {
    const uint i = gl_LocalInvocationIndex + j * WG_SIZE;
    const bool ok = i < BQ && q0 + i < pc.seq;
    const uint at = (row0 + q0 + i) * pc.heads + h;
    lse2_pf[j] = ok ? lse[at] * LOG2E : 0.0;
    delta_pf[j] = ok ? delta[at] : 0.0;
  }
}

void put_stats() {
  [[unroll]] for (uint j = 0; j < STATS_N; ++j) {
    const uint i = gl_LocalInvocationIndex + j * WG_SIZE;
    if (i < BQ) {
      lse2_s[i] = lse2_pf[j];
      delta_s[i] = delta_pf[j];
    }
  }
}

// Step `step` of a key block's (head, query block) steps: every query head
// of the group g in order, its query blocks from the diagonal block qb0 on
// in order (per_head of them). Returns (the query head, its first query).
uvec2 dkdv_step(uint g, uint qb0, uint per_head, uint step) {
  return uvec2(g * pc.group + step / per_head, (qb0 + step % per_head) * BQ);
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint warp = gl_SubgroupID;
  const uint wk = warp * F;  // the warp's first key in the workgroup's block
  const uint q_blocks = (pc.seq + BQ - 1) / BQ;
  const uint kb = gl_WorkGroupID.x;  // the keys with the most queries first
  const uint g = gl_WorkGroupID.y;
  const uint row0 = gl_WorkGroupID.z * pc.seq;
  const uint k0 = kb * BK;
  const uint qs8 = pc.q_stride / 8, ks8 = pc.kv_stride / 8;

  // (head, query block) steps: dkdv_step
  const uint qb0 = k0 / BQ, per_head = q_blocks - qb0, steps = pc.group * per_head;
  if (PF) {
    const uvec2 first = dkdv_step(g, qb0, per_head, 0);
    PF_LOAD(q16, do16, row0, first.y, qs8, first.x * HV8)
    load_stats(row0, first.y, first.x);
  }

  // the K rows, then the V rows through the same shared tile
  STAGE16(qd_s, 0, k16, BK, row0, k0, ks8, g * HV8)
  for (uint e = tid; e < F * F; e += WG_SIZE) {
    idx_s[e] = float(e / F);
    idx_s[F * F + e] = float(e % F);
  }
  barrier();
  FragA kf[DF], vf[DF];  // the warp's K and V rows
  [[unroll]] for (uint kk = 0; kk < DF; ++kk) coopMatLoad(kf[kk], qd_s, (wk * SH + kk * F) / 8, SH8, ROW_MAJOR);
  barrier();
  STAGE16(qd_s, 0, v16, BK, row0, k0, ks8, g * HV8)
  barrier();
  [[unroll]] for (uint kk = 0; kk < DF; ++kk) coopMatLoad(vf[kk], qd_s, (wk * SH + kk * F) / 8, SH8, ROW_MAJOR);
  Acc rowid, colid;
  coopMatLoad(rowid, idx_s, 0, F, ROW_MAJOR);
  coopMatLoad(colid, idx_s, F * F, F, ROW_MAJOR);
  Acc dk[DF], dv[DF];
  [[unroll]] for (uint n = 0; n < DF; ++n) {
    dk[n] = Acc(0.0);
    dv[n] = Acc(0.0);
  }

  for (uint step = 0; step < steps; ++step) {
    const uvec2 at = dkdv_step(g, qb0, per_head, step);
    const uint h = at.x, q0 = at.y;
    barrier();  // every warp is done with qd_s (the previous query block, or the K, V loads)
    if (PF) {
      PF_PUT(qd_s)
      put_stats();
    } else {
      STAGE16(qd_s, 0, q16, BQ, row0, q0, qs8, h * HV8)
      STAGE16(qd_s, BQ * SH8, do16, BQ, row0, q0, qs8, h * HV8)
      load_stats(row0, q0, h);
      put_stats();
    }
    barrier();
    if (PF && step + 1 < steps) {
      const uvec2 next = dkdv_step(g, qb0, per_head, step + 1);
      PF_LOAD(q16, do16, row0, next.y, qs8, next.x * HV8)
      load_stats(row0, next.y, next.x);
    }
    // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (F keys × F queries at a time), then
    // Pᵀ and dSᵀ = Pᵀ·(dPᵀ − delta) element by element
    [[unroll]] for (uint n = 0; n < BQ / F; ++n) {
      Acc st = Acc(0.0), dpt = Acc(0.0);
      [[unroll]] for (uint kk = 0; kk < DF; ++kk) {
        FragB qt, dot;
        coopMatLoad(qt, qd_s, (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        coopMatLoad(dot, qd_s, BQ * SH8 + (n * F * SH + kk * F) / 8, SH8, COL_MAJOR);
        st = coopMatMulAdd(kf[kk], qt, st);
        dpt = coopMatMulAdd(vf[kk], dot, dpt);
      }
      for (int e = 0; e < st.length(); ++e) {
        const uint j = wk + uint(rowid[e]), i = n * F + uint(colid[e]);
        const uint qi = q0 + i;
        const float p = (k0 + j <= qi && qi < pc.seq) ? exp2(st[e] * pc.scale_log2 - lse2_s[i]) : 0.0;
        st[e] = p;
        dpt[e] = p * (dpt[e] - delta_s[i]);
      }
#if CM2
      // dV += Pᵀ·dO and dK += dSᵀ·Q at once, the fragments in order
      const FragA pa = FragA(st), da = FragA(dpt);
      [[unroll]] for (uint dn = 0; dn < DF; ++dn) {
        FragB dob, qb_;
        coopMatLoad(dob, qd_s, BQ * SH8 + (n * F * SH + dn * F) / 8, SH8, ROW_MAJOR);
        coopMatLoad(qb_, qd_s, (n * F * SH + dn * F) / 8, SH8, ROW_MAJOR);
        dv[dn] = coopMatMulAdd(pa, dob, dv[dn]);
        dk[dn] = coopMatMulAdd(da, qb_, dk[dn]);
      }
#else
      coopMatStore(Acc16(st), p_s, wk * SPQ + n * F, SPQ, ROW_MAJOR);
      coopMatStore(Acc16(dpt), ds_s, wk * SPQ + n * F, SPQ, ROW_MAJOR);
#endif
    }
#if !CM2
    warp_sync();
    // dV += Pᵀ·dO, dK += dSᵀ·Q
    [[unroll]] for (uint kk = 0; kk < BQ / F; ++kk) {
      FragA pa, da;
      coopMatLoad(pa, p_s, wk * SPQ + kk * F, SPQ, ROW_MAJOR);
      coopMatLoad(da, ds_s, wk * SPQ + kk * F, SPQ, ROW_MAJOR);
      [[unroll]] for (uint n = 0; n < DF; ++n) {
        FragB dob, qb_;
        coopMatLoad(dob, qd_s, BQ * SH8 + (kk * F * SH + n * F) / 8, SH8, ROW_MAJOR);
        coopMatLoad(qb_, qd_s, (kk * F * SH + n * F) / 8, SH8, ROW_MAJOR);
        dv[n] = coopMatMulAdd(pa, dob, dv[n]);
        dk[n] = coopMatMulAdd(da, qb_, dk[n]);
      }
    }
#endif
  }
  // every warp's F keys: dV at rows wk.., dK at rows BK + wk.. of each chunk
  const uint ks4 = pc.kv_stride / 4;
  for (uint c0 = 0; c0 < D; c0 += EPI) {
    barrier();
    [[unroll]] for (uint n = 0; n < DF; ++n) {
      if (n * F >= c0 && n * F < c0 + EPI) {
        coopMatStore(dv[n], qd_s, (wk * EPI_STRIDE + n * F - c0) / 4, EPI_STRIDE / 4, ROW_MAJOR);
        coopMatStore(dk[n], qd_s, ((BK + wk) * EPI_STRIDE + n * F - c0) / 4, EPI_STRIDE / 4, ROW_MAJOR);
      }
    }
    barrier();
    for (uint e = tid; e < 2 * BK * EPI / 4; e += WG_SIZE) {
      const uint rr = e / (EPI / 4), cc = (e % (EPI / 4)) * 4;
      const uint key = k0 + rr % BK;
      if (key < pc.seq) {
        const vec4 v = uintBitsToFloat(qd_s[(rr * EPI_STRIDE + cc) / 4]);
        const uint at = (row0 + key) * ks4 + g * D / 4 + (c0 + cc) / 4;
        if (rr < BK) {
          dv4[at] = v * pc.dv_scale;
        } else {
          dk4[at] = v * pc.dk_scale;
        }
      }
    }
  }
}
#endif
