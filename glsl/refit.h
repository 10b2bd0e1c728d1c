// refit.h — push constants and workgroup sizes of the GPU refit's kernels
// (refit_u_rows.comp, refit_v_rows.comp, refit_v_commit.comp,
// refit_signs.comp, refit_sign_dot.comp, refit_hadamard.comp,
// refit_matvec.comp, refit_cg.comp; vkblr/ops/refit.hpp says what each
// computes).
//
// Sign bitmaps are u32 [rows][words], words = r / 32 (r a multiple of 32):
// bit k % 32 of word k / 32 of a row is the sign of rank k, 1 = +1.
#ifndef VKBLR_REFIT_H
#define VKBLR_REFIT_H
#include "interface.h"

// Invocations per workgroup of the row kernels (refit_u_rows, refit_v_rows,
// refit_sign_dot: one workgroup per row) and of refit_matvec (one per row)
// and refit_cg (one workgroup).
#define VKBLR_REFIT_ROW_WG 64
#define VKBLR_REFIT_CG_WG 256
// Coordinate-descent passes over one row's signs, at most (as the host refit).
#define VKBLR_REFIT_MAX_PASSES 8

VKBLR_SHADER_BEGIN

VKBLR_PUSH(RefitPush) {
  uint row0;   // first bitmap row of the block (refit_v_rows, refit_v_commit), else 0
  uint rows;   // rows of the op (workgroups of the row kernels); refit_cg, refit_hadamard: elements
  uint r;      // signs per row (the rank)
  uint words;  // u32 words per bitmap row, r / 32
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
