// colsum.h — push constants and workgroup geometry of the column reductions
// (colsum_part.comp, colsum_fused.comp, colsum_finish.comp).
//
// Two passes: pass 1 writes one partial sum per block of rows and column
// into PART[blocks][k] (a scratch buffer the context owns); pass 2 adds a
// column's partials in block order. No atomics: the result is deterministic.
#ifndef VKBLR_COLSUM_H
#define VKBLR_COLSUM_H
#include "interface.h"

// Columns per workgroup of colsum_part, colsum_fused and colsum_finish (one
// invocation per column).
#define VKBLR_COLSUM_WG 256
// colsum_fused_t*: columns per workgroup and rows per block. Its transposed
// tile, VKBLR_COLSUM_T_WG columns × (64 + 2) f16, fits 32 KiB of shared memory.
#define VKBLR_COLSUM_T_WG 128
#define VKBLR_COLSUM_T_ROWS 64

VKBLR_SHADER_BEGIN

VKBLR_PUSH(ColsumPush) {
  uint m;               // rows reduced
  uint k;               // columns
  uint rows_per_block;  // pass 1: rows summed into one partial (the last block may be shorter)
  uint blocks;          // pass 2: partials per column, ceil(m / rows_per_block)
  uint accumulate;      // colsum_finish: SUM += Σ (1) or SUM = Σ (0);
                        // colsum_fused scale_b: OUT += B·COL (1) or OUT = B·COL (0)
  float scale;          // colsum_fused: scale of the staged f16 values
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
