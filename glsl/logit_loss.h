// logit_loss.h — push constants and per-token state of the losses over a
// vocabulary in slices (logit_loss_stats.comp, logit_loss_grad.comp,
// logit_loss_reduce.comp; engine/src/ops/logit_loss.cpp).
//
// The logits of one slice of the vocabulary, z f32 [tokens][ldz] (columns
// 0..cols-1 = vocabulary rows v0..v0+cols-1; the GEMM's padded columns
// past cols are never read), come from a GEMM; the stats kernel folds them
// into every token's running state, the grad kernel turns them into the
// slice's staged gradient.
#ifndef VKBLR_LOGIT_LOSS_H
#define VKBLR_LOGIT_LOSS_H
#include "interface.h"

// Floats of per-token state, STATE[token][VKBLR_LL_STATE]:
#define VKBLR_LL_STATE 8
#define VKBLR_LL_M 0       // running max of the student's (scaled) logits
#define VKBLR_LL_S 1       // Σ exp(logit − M) so far
#define VKBLR_LL_X 2       // cross-entropy: the target's logit; KL: Σ exp(a − M_T)·(a − b)
#define VKBLR_LL_MT 3      // KL: running max of the teacher's scaled logits a
#define VKBLR_LL_ST 4      // KL: Σ exp(a − M_T)
#define VKBLR_LL_LSE 5     // after the last slice: the student's logsumexp
#define VKBLR_LL_LSE_T 6   // after the last slice: the teacher's logsumexp (KL)
#define VKBLR_LL_COUNT 7   // 1: the token counts; 0: ignored; -1: an id >= vocab (CE)

// Flags of LogitLossPush::flags.
#define VKBLR_LL_FIRST 1u  // the first slice: the state is started, not read
#define VKBLR_LL_LAST 2u   // the last slice: logsumexps and per-token losses written

// Words of the loss output (u32 [4]): the mean and the sum as f32 bits, the
// counted tokens and the tokens with ids >= vocab.
#define VKBLR_LL_OUT_MEAN 0
#define VKBLR_LL_OUT_SUM 1
#define VKBLR_LL_OUT_COUNT 2
#define VKBLR_LL_OUT_BAD 3

// Workgroup of the stats kernel (one per token) and of the reduction.
#define VKBLR_LL_WG 256

VKBLR_SHADER_BEGIN

VKBLR_PUSH(LogitLossPush) {
  uint tokens;     // rows of h, z, the state
  uint cols;       // vocabulary rows of this slice (<= ldz)
  uint ldz;        // row stride of z and of the staged gradient DZ (a multiple of 32)
  uint v0;         // the slice's first vocabulary row
  uint vocab;      // vocabulary rows in all
  uint ignore_id;  // ids equal to it carry no loss
  uint flags;      // VKBLR_LL_FIRST | VKBLR_LL_LAST
  uint ldt;        // row stride of the transposed staged gradient DZT (tokens rounded up to 32)
  float inv_tau;   // KL: 1 / temperature (logits are scaled by it); cross-entropy: 1
  float tau2;      // KL: temperature², the loss's factor; cross-entropy: 1
  float gscale;    // the staged gradient's multiplier (a power of two)
  uint reserved;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
