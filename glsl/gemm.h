// gemm.h — push constants of the GEMM family (gemm_coopmat.comp,
// gemm_plain.comp): out[m][ldo] (columns ocol..ocol+n) (+)=
// act[m][k] · B[n][k]ᵀ · oscale.
//
// Split-K (k_split > 0): workgroup layer z multiplies K range
// [z·k_split, min(k, (z+1)·k_split)) and writes its product to
// out + z·z_stride; gemm_splitk_reduce.comp then sums the layers in z order.
#ifndef VKBLR_GEMM_H
#define VKBLR_GEMM_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(GemmPush) {
  uint m;           // rows of act and out (any m >= 1)
  uint n;           // columns written (multiple of 16)
  uint k;           // reduction length (multiple of 16)
  uint lda;         // act row stride in halves (multiple of 8)
  uint ldb;         // plane: row stride in halves; bitmaps: words per bitmap row
  uint ldo;         // out row stride in floats
  uint ocol;        // first column of out written
  uint accumulate;  // 1: out += product, 0: out = product
  float oscale;     // product multiplier
  uint k_split;     // split-K: K per workgroup layer z (a multiple of BK); 0 = all of K
  uint z_stride;    // split-K: floats between the outputs of layers z and z + 1
  uint splits;      // gemm_splitk_reduce: layers summed (gemm kernels: unused)
} VKBLR_PUSH_END(pc)

// Specialization constants (ids shared with the C++ tile configuration).
#define GEMM_SPEC_WG_SIZE 0
#define GEMM_SPEC_SUBGROUP 1
#define GEMM_SPEC_FM 2
#define GEMM_SPEC_FN 3
#define GEMM_SPEC_FK 4
#define GEMM_SPEC_BM 5
#define GEMM_SPEC_BN 6
#define GEMM_SPEC_BK 7
#define GEMM_SPEC_WM 8
#define GEMM_SPEC_WN 9
#define GEMM_SPEC_B_MODE 10
#define GEMM_SPEC_STAGES 11
#define GEMM_SPEC_EPI_COLS 12  // coopmat epilogue: columns staged per chunk
#define GEMM_SPEC_PREFETCH 13  // coopmat: K tiles in flight in registers (1 or 2)
#define GEMM_SPEC_WORD_GROUP 14  // coopmat bits_n: bitmap words read per 16-byte load (1 or 4)

// Specialization constants of gemm_coopmat2.comp: ids 0..5, all given on
// every pipeline. (Dense ids: with gaps, the Khronos layer's check of
// workgroup-scope matrix shapes read another entry's value for a size, as
// if it took the entry at the position of the id; docs/gpu.md.)
#define GEMM2_SPEC_WG_SIZE 0
#define GEMM2_SPEC_BM 1
#define GEMM2_SPEC_BN 2
#define GEMM2_SPEC_BK 3
#define GEMM2_SPEC_B_MODE 4
#define GEMM2_SPEC_UNROLL 5  // K steps unrolled over whole tiles

// B operand modes.
#define GEMM_B_PLANE 0   // f16 plane [n][ldb halves]
#define GEMM_B_BITS_N 1  // sign bitmap [n][ldb words]: bit j of word w = B[n][32w + j]
#define GEMM_B_BITS_T 2  // sign bitmap [k][ldb words]: bit j of word w = B[32w + j][k]

VKBLR_SHADER_END
#endif
