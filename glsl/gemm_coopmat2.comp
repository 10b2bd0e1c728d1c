#version 460
// GEMM on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2):
// out[m][ldo] (columns ocol..ocol+n) (+)= act[m][k] · B[n][k]ᵀ · oscale,
// f16 operands, f32 accumulation and output; the same contract, push
// constants and bindings as gemm_coopmat.comp (gemm.h).
//
// The workgroup owns one BM × BN accumulator and multiplies BM × BK by
// BK × BN matrices loaded with tensor addressing: the driver stages them
// (its own shared-memory layout and pipelining, and on Hopper its own
// instruction choice), which the subgroup-scope KHR kernel cannot reach.
// B modes:
//   plane  : tensor [n][ldb halves], loaded through a transposing view;
//   bits_n : tensor [n][k] in blocks of 1 × 32 signs (one u32 word each,
//            ldb words per row), transposing view, decoded by decode_sign;
//   bits_t : tensor [k][n] in blocks of 1 × 32 signs, no view.
// The decode callback turns bit j of a word into +1 (set) or −1 (clear), so
// the matrices the multiply sees are those of the plane mode: bitmap modes
// equal the plane mode bit for bit, and no plane exists in device memory.
//
// Edges: tiles wholly inside (m, n, this layer's K) use unclamped layouts
// and a K loop unrolled UNROLL times; the others clamp, reading zeros past
// m, n and K. Stores go through a
// layout of m rows and ocol + n columns with constant clamping, so nothing
// past row m or column ocol + n is written and columns below ocol never
// are (slices start at ocol).
//
// Split-K (gemm.h): layer z = gl_WorkGroupID.z multiplies its K range and
// stores into out + z·z_stride.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gemm.h"

layout(constant_id = GEMM2_SPEC_WG_SIZE) const uint WG_SIZE = 256;
layout(constant_id = GEMM2_SPEC_BM) const uint BM = 128;
layout(constant_id = GEMM2_SPEC_BN) const uint BN = 128;
layout(constant_id = GEMM2_SPEC_BK) const uint BK = 64;
layout(constant_id = GEMM2_SPEC_B_MODE) const uint B_MODE = GEMM_B_PLANE;
// K steps unrolled in the loop over whole tiles: the driver overlaps the
// loads of later steps with the multiplies of earlier ones.
layout(constant_id = GEMM2_SPEC_UNROLL) const uint UNROLL = 4;
layout(local_size_x_id = GEMM2_SPEC_WG_SIZE) in;

layout(set = 0, binding = 0) readonly buffer Act { float16_t act[]; };
layout(set = 0, binding = 1) readonly buffer Plane { float16_t plane[]; };
layout(set = 0, binding = 2) readonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 3) buffer Out { float outv[]; };

// One block of a bitmap tensor: a u32 word of 32 signs along dimension 1.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer SignWord { uint word; };

float16_t decode_sign(const in SignWord block, const in uint block_coords[2], const in uint coord_in_block[2]) {
  return ((block.word >> coord_in_block[1]) & 1u) != 0u ? float16_t(1.0) : float16_t(-1.0);
}

#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>

// One K step at kb for layouts LA (act) and LB (B): one macro for the
// clamped and the unclamped layout types.
#define K_STEP(LA, LB, kb)                                                                     \
  {                                                                                            \
    MAT_A a;                                                                                   \
    MAT_B b;                                                                                   \
    coopMatLoadTensorNV(a, act, 0, sliceTensorLayoutNV(LA, m0, BM, kb, BK));                   \
    if (B_MODE == GEMM_B_PLANE) {                                                              \
      coopMatLoadTensorNV(b, plane, 0, sliceTensorLayoutNV(LB, n0, BN, kb, BK), transposed);   \
    } else if (B_MODE == GEMM_B_BITS_N) {                                                      \
      coopMatLoadTensorNV(b, bits, 0, sliceTensorLayoutNV(LB, n0, BN, kb, BK), transposed,     \
                          decode_sign);                                                        \
    } else {                                                                                   \
      coopMatLoadTensorNV(b, bits, 0, sliceTensorLayoutNV(LB, kb, BK, n0, BN), decode_sign);   \
    }                                                                                          \
    acc = coopMatMulAdd(a, b, acc);                                                            \
  }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint k0 = gl_WorkGroupID.z * pc.k_split;
  const uint k_end = pc.k_split == 0u ? pc.k : min(pc.k, k0 + pc.k_split);
  const uint z_out = gl_WorkGroupID.z * pc.z_stride;

  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  // B's tensor: [n][k] (plane, bits_n) or [k][n] (bits_t); bitmaps in words
  const bool b_is_kn = B_MODE == GEMM_B_BITS_T;
  const uint b_rows = b_is_kn ? k_end : pc.n;
  const uint b_cols = b_is_kn ? pc.n : k_end;

  ACC acc = ACC(0.0);
  const bool inside = m0 + BM <= pc.m && n0 + BN <= pc.n && (k_end - k0) % BK == 0;
  if (inside) {
    // Alignment the compiler can see (16-byte loads): lda and a plane's
    // row stride are multiples of 8 halves, k0 one of BK (a power of two),
    // all checked on the host.
    const uint lda = pc.lda & ~7u;
    const uint ldb = B_MODE == GEMM_B_PLANE ? pc.ldb & ~7u : pc.ldb;
    tensorLayoutNV<2> la = createTensorLayoutNV(2);
    la = setTensorLayoutDimensionNV(la, pc.m, k_end);
    la = setTensorLayoutStrideNV(la, lda, 1);
    tensorLayoutNV<2> lb = createTensorLayoutNV(2);
    if (B_MODE != GEMM_B_PLANE) lb = setTensorLayoutBlockSizeNV(lb, 1, 32);
    lb = setTensorLayoutDimensionNV(lb, b_rows, b_cols);
    lb = setTensorLayoutStrideNV(lb, ldb, 1);
    uint kb = k0 & ~(BK - 1u);
    for (; kb + UNROLL * BK <= k_end;) {
      [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
        K_STEP(la, lb, kb)
        kb += BK;
      }
    }
    for (; kb < k_end; kb += BK) K_STEP(la, lb, kb)
  } else {
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    la = setTensorLayoutDimensionNV(la, pc.m, k_end);
    la = setTensorLayoutStrideNV(la, pc.lda, 1);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    if (B_MODE != GEMM_B_PLANE) lb = setTensorLayoutBlockSizeNV(lb, 1, 32);
    lb = setTensorLayoutDimensionNV(lb, b_rows, b_cols);
    lb = setTensorLayoutStrideNV(lb, pc.ldb, 1);
    for (uint kb = k0; kb < k_end; kb += BK) K_STEP(la, lb, kb)
  }

  // Epilogue: out = acc·oscale, or out + acc·oscale, through a clamped
  // layout of m rows × (ocol + n) columns.
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lo =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  lo = setTensorLayoutDimensionNV(lo, pc.m, pc.ocol + pc.n);
  lo = setTensorLayoutStrideNV(lo, pc.ldo, 1);
  const uint oc = pc.ocol + n0;
  ACC result = acc * pc.oscale;
  if (pc.accumulate != 0u) {
    ACC prior;
    coopMatLoadTensorNV(prior, outv, z_out, sliceTensorLayoutNV(lo, m0, BM, oc, BN));
    result = prior + result;
  }
  coopMatStoreTensorNV(result, outv, z_out, sliceTensorLayoutNV(lo, m0, BM, oc, BN));
}
