// blr_dense.h — push constants of the dense-weight route of a blr layer
// (blr_dense.comp).
#ifndef VKBLR_BLR_DENSE_H
#define VKBLR_BLR_DENSE_H
#include "interface.h"

// Invocations of one blr_dense_grads workgroup (one bitmap row each).
#define VKBLR_BLR_DENSE_ROW_WG 64

VKBLR_SHADER_BEGIN

VKBLR_PUSH(BlrDensePush) {
  uint rows;   // bitmap rows (m for S_U, n for S_V)
  uint r;      // signs per row (the rank)
  uint words;  // u32 words per bitmap row, ceil(r / 32)
  uint ld;     // row length of the side-by-side planes: paths · r
  uint col0;   // this path's first column in them: p · r
  uint flags;  // VKBLR_BLR_DENSE_* bits
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END

// flags
#define VKBLR_BLR_DENSE_COL 1u         // a column factor COL[r] (else 1)
#define VKBLR_BLR_DENSE_ACCUMULATE 2u  // grads: G += (else G =)
#define VKBLR_BLR_DENSE_COLTERM 4u     // grads: write E for the column sums
#define VKBLR_BLR_DENSE_WRITE_G 8u     // grads: write G (else G is not touched)
#endif
