#version 460
// GEMM on cooperative matrices: out[m][ldo] (columns ocol..ocol+n) (+)=
// act[m][k] · B[n][k]ᵀ · oscale, f16 operands, f32 accumulation and output.
//
// Workgroup = (BM/WM) × (BN/WN) subgroups over a BM × BN output block; each
// subgroup owns a WM × WN block as (WM/FM) × (WN/FN) accumulator fragments
// of the device's FM × FN × FK shape. K advances in tiles of BK staged in
// shared memory (gemm_tile.glsl). The next tile (PREFETCH = 2: the next
// two) is loaded into registers while the current one is multiplied, then
// stored: with STAGES = 2 into the other buffer (one barrier per tile), with
// STAGES = 1 into the same one between two barriers. Each A fragment is reused
// across the subgroup's WN/FN columns. bits_n with WORD_GROUP = 4 reads each
// row's bitmap words four K tiles at a time (gemm_tile.glsl). The epilogue
// goes through shared memory in column chunks of EPI_COLS: every subgroup
// stores its fragments of the chunk (uniform control flow), then the
// workgroup writes the chunk's in-range elements with 16-byte coalesced
// rows, so rows past m and columns past n are never written and
// `oscale`/accumulate are applied with the same f32 operations wherever a
// tile sits. (Storing and writing one fragment at a time per subgroup
// needs a subgroup op after divergent writes, which lavapipe gets wrong.)
//
// Summation order of an output: K tiles in order, FK-wide fragment products
// in order within a tile: fixed for a given configuration, so the bitmap
// modes equal the plane mode bit for bit.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gemm.h"

layout(constant_id = GEMM_SPEC_WG_SIZE) const uint WG_SIZE = 128;
layout(constant_id = GEMM_SPEC_SUBGROUP) const uint SG = 32;
layout(constant_id = GEMM_SPEC_FM) const uint FM = 16;
layout(constant_id = GEMM_SPEC_FN) const uint FN = 16;
layout(constant_id = GEMM_SPEC_FK) const uint FK = 16;
layout(constant_id = GEMM_SPEC_BM) const uint BM = 128;
layout(constant_id = GEMM_SPEC_BN) const uint BN = 128;
layout(constant_id = GEMM_SPEC_BK) const uint BK = 32;
layout(constant_id = GEMM_SPEC_WM) const uint WM = 64;
layout(constant_id = GEMM_SPEC_WN) const uint WN = 64;
layout(constant_id = GEMM_SPEC_B_MODE) const uint B_MODE = GEMM_B_PLANE;
layout(constant_id = GEMM_SPEC_STAGES) const uint STAGES = 2;
layout(constant_id = GEMM_SPEC_EPI_COLS) const uint EPI_COLS = 64;
layout(constant_id = GEMM_SPEC_WORD_GROUP) const uint WORD_GROUP = 1;
layout(local_size_x_id = GEMM_SPEC_WG_SIZE) in;

layout(set = 0, binding = 0) readonly buffer Act { uvec4 act[]; };
layout(set = 0, binding = 1) readonly buffer Plane { uvec4 plane[]; };
layout(set = 0, binding = 2) readonly buffer Bits { uvec4 bits[]; };  // bitmap words, four per element
layout(set = 0, binding = 3) buffer Out { float outv[]; };

#include "gemm_tile.glsl"

layout(constant_id = GEMM_SPEC_PREFETCH) const uint PREFETCH = 1;

const uint CR = WM / FM;  // accumulator rows per subgroup
const uint CC = WN / FN;  // accumulator columns per subgroup

// Register set `set` <- the K tile at k0; where WORD_GROUP = 4 its bitmap
// words are component `comp` of grp_next (from_next) or grp_cur, both
// literals at every call.
void load_next(uint m0, uint n0, uint k0, uint set, bool from_next, uint comp) {
  load_a(m0, k0, set);
  if (WORD_GROUP == 4u) {
    take_word(n0, k0, set, from_next, comp);
  } else {
    load_b(n0, k0, set);
  }
}

// One K step: tile KT multiplied from its shared-memory stage; the tile after
// it, held in register set SET, stored for the next step (see main). POS =
// KT % 4 as a literal where WORD_GROUP = 4: step 4g moves group g of bitmap
// words to grp_cur and loads group g+1; the tile loaded in the step, KT+2
// (PREFETCH = 2) or KT+1 (PREFETCH = 1), then takes its word from grp_cur
// while it lies in group g, else from grp_next: component (POS+2) % 4 or
// (POS+1) % 4.
#define K_STEP(KT, SET, POS)                                                                              \
  {                                                                                                       \
    const uint kt_ = KT;                                                                                  \
    const uint stage = STAGES == 2 ? (kt_ & 1u) : 0u;                                                     \
    const bool more = kt_ + 1u < k_tiles;                                                                 \
    if (WORD_GROUP == 4u && (POS) == 0u) {                                                                \
      advance_word_group();                                                                               \
      if (kt_ + 4u < k_tiles) load_word_group(n0, (k_begin + (kt_ + 4u) * BK) / 32u);                     \
    }                                                                                                     \
    if (PREFETCH == 2u) {                                                                                 \
      if (kt_ + 2u < k_tiles) {                                                                           \
        load_next(m0, n0, k_begin + (kt_ + 2u) * BK, (SET) ^ 1u, (POS) >= 2u, ((POS) + 2u) & 3u);         \
      }                                                                                                   \
    } else if (more) {                                                                                    \
      load_next(m0, n0, k_begin + (kt_ + 1u) * BK, SET, (POS) == 3u, ((POS) + 1u) & 3u);                  \
    }                                                                                                     \
    const uint a_base = a_base_of(stage);                                                                 \
    const uint b_base = b_base_of(stage);                                                                 \
    [[unroll]] for (uint kk = 0; kk < BK; kk += FK) {                                                     \
      coopmat<float16_t, gl_ScopeSubgroup, FM, FK, gl_MatrixUseA> a[CR];                                  \
      [[unroll]] for (uint i = 0; i < CR; ++i) {                                                          \
        coopMatLoad(a[i], smem, a_base + ((warp_m * WM + i * FM) * SA + kk) / 8, SA / 8,                  \
                    gl_CooperativeMatrixLayoutRowMajor);                                                  \
      }                                                                                                   \
      [[unroll]] for (uint j = 0; j < CC; ++j) {                                                          \
        coopmat<float16_t, gl_ScopeSubgroup, FK, FN, gl_MatrixUseB> b;                                    \
        const uint n = warp_n * WN + j * FN;                                                              \
        if (B_MODE == GEMM_B_BITS_T) {                                                                    \
          coopMatLoad(b, smem, b_base + (kk * SBT + n) / 8, SBT / 8, gl_CooperativeMatrixLayoutRowMajor); \
        } else {                                                                                          \
          coopMatLoad(b, smem, b_base + (n * SB + kk) / 8, SB / 8, gl_CooperativeMatrixLayoutColumnMajor); \
        }                                                                                                 \
        [[unroll]] for (uint i = 0; i < CR; ++i) acc[i][j] = coopMatMulAdd(a[i], b, acc[i][j]);           \
      }                                                                                                   \
    }                                                                                                     \
    if (STAGES == 2) {                                                                                    \
      if (more) store_tile(stage ^ 1u, SET);                                                              \
      barrier();                                                                                          \
    } else if (more) {                                                                                    \
      barrier(); /* everyone is done reading this tile */                                                 \
      store_tile(0, SET);                                                                                 \
      barrier();                                                                                          \
    }                                                                                                     \
  }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint warp_m = gl_SubgroupID / (BN / WN);
  const uint warp_n = gl_SubgroupID % (BN / WN);

  coopmat<float, gl_ScopeSubgroup, FM, FN, gl_MatrixUseAccumulator> acc[CR][CC];
  [[unroll]] for (uint i = 0; i < CR; ++i) {
    [[unroll]] for (uint j = 0; j < CC; ++j) {
      acc[i][j] = coopmat<float, gl_ScopeSubgroup, FM, FN, gl_MatrixUseAccumulator>(0.0);
    }
  }

  // this layer's K range (split-K) and output
  const uint k_begin = gl_WorkGroupID.z * pc.k_split;
  const uint k_len = pc.k_split == 0u ? pc.k : min(pc.k_split, pc.k - k_begin);
  const uint z_out = gl_WorkGroupID.z * pc.z_stride;
  const uint k_tiles = (k_len + BK - 1) / BK;
  // K steps two at a time, register set 0 then 1 (a literal in each call,
  // so both sets stay in registers). PREFETCH = 1: step kt loads tile kt+1
  // into its own set and stores it after the multiply; PREFETCH = 2: tile
  // kt+1 is already in the step's set, and the step loads tile kt+2 into
  // the other one, so each global load has two steps to land.
  //
  // WORD_GROUP = 4: the same with the loop unrolled by four, so each step's
  // group component is a literal (k_tiles is a multiple of 4 there); group
  // 0 is loaded first and gives tiles 0 and 1 their words.
  if (WORD_GROUP == 4u) load_word_group(n0, k_begin / 32u);
  load_next(m0, n0, k_begin, 0u, true, 0u);
  store_tile(0, 0u);
  barrier();
  if (PREFETCH == 2u && k_tiles > 1u) load_next(m0, n0, k_begin + BK, 0u, true, 1u);
  if (WORD_GROUP == 4u) {
    for (uint kt = 0; kt < k_tiles; kt += 4) {
      K_STEP(kt, 0u, 0u)
      K_STEP(kt + 1u, 1u, 1u)
      K_STEP(kt + 2u, 0u, 2u)
      K_STEP(kt + 3u, 1u, 3u)
    }
  } else {
    for (uint kt = 0; kt < k_tiles; kt += 2) {
      K_STEP(kt, 0u, 0u)
      if (kt + 1u < k_tiles) {
        K_STEP(kt + 1u, 1u, 0u)
      }
    }
  }

  // Epilogue, chunk by chunk of EPI_COLS columns (rows padded by 4 floats).
  const uint EPI_STRIDE = EPI_COLS + 4;
  const uint EPI_VECS = BM * (EPI_COLS / 4);
  [[unroll]] for (uint c0 = 0; c0 < BN; c0 += EPI_COLS) {
    barrier();  // the K loop or the previous chunk is done with smem
    [[unroll]] for (uint j = 0; j < CC; ++j) {
      const uint col = warp_n * WN + j * FN;  // in the tile
      if (col >= c0 && col < c0 + EPI_COLS) {
        [[unroll]] for (uint i = 0; i < CR; ++i) {
          coopMatStore(acc[i][j], smem, ((warp_m * WM + i * FM) * EPI_STRIDE + col - c0) / 4, EPI_STRIDE / 4,
                       gl_CooperativeMatrixLayoutRowMajor);
        }
      }
    }
    barrier();
    for (uint e = gl_LocalInvocationIndex; e < EPI_VECS; e += WG_SIZE) {
      const uint row = e / (EPI_COLS / 4);
      const uint col = c0 + (e % (EPI_COLS / 4)) * 4;
      if (m0 + row < pc.m && n0 + col < pc.n) {
        const uint first = z_out + (m0 + row) * pc.ldo + pc.ocol + n0 + col;
        const vec4 v = uintBitsToFloat(smem[(row * EPI_STRIDE + col - c0) / 4]);
        [[unroll]] for (uint q = 0; q < 4; ++q) {
          precise float r = v[q] * pc.oscale;
          if (pc.accumulate != 0u) r = outv[first + q] + r;
          outv[first + q] = r;
        }
      }
    }
  }
}
