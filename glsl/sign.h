// sign.h — push constants, counter slots and geometry of the sign optimizer
// kernels (sign_*.comp; engine/src/sign/, docs/sign-optimizer.md).
#ifndef VKBLR_SIGN_H
#define VKBLR_SIGN_H
#include "interface.h"

// Telemetry counters, u32 words of a matrix's counter buffer.
#define VKBLR_SIGN_FLIPS 0     // flips of the last step
#define VKBLR_SIGN_OSC 1       // of those, signs that had flipped before
#define VKBLR_SIGN_IN_BAND 2   // latents with |w| <= hyst after the last step
#define VKBLR_SIGN_HAMMING 3   // signs that differ from bits0 (sign_hamming)
#define VKBLR_SIGN_TOTAL_LO 4  // flips of the steps before the last, 64 bits
#define VKBLR_SIGN_TOTAL_HI 5
#define VKBLR_SIGN_COUNTERS 8  // words of the buffer

// Flip-budget threshold search: a radix select over the u32 bits of the
// non-negative f32 scores, 8 bits per pass from the top. The select buffer
// holds a head (the prefix found so far, the flips still to place below it,
// whether every candidate flips) and one 256-bin histogram per pass.
#define VKBLR_SIGN_SEL_PREFIX 0
#define VKBLR_SIGN_SEL_NEED 1
#define VKBLR_SIGN_SEL_ALL 2
#define VKBLR_SIGN_SEL_HEAD 4
#define VKBLR_SIGN_RADIX_BINS 256
#define VKBLR_SIGN_RADIX_PASSES 4
#define VKBLR_SIGN_SELECT_WORDS (VKBLR_SIGN_SEL_HEAD + VKBLR_SIGN_RADIX_PASSES * VKBLR_SIGN_RADIX_BINS)

// fact: rows summed into one partial of the column sums of g².
#define VKBLR_SIGN_FACT_ROWS 64

VKBLR_SHADER_BEGIN

VKBLR_PUSH(SignPush) {
  uint n;               // signs, rows·r
  uint rows;            // rows of the matrix
  uint r;               // signs per row, a multiple of 32
  uint step;            // t from 1 (unless live); stochastic-rounding stream
  float lr;             // η (unless live)
  float beta1;
  float beta2;
  float eps;
  float clamp;          // |w| <= clamp
  float hyst;           // hysteresis half-width
  float tau;            // init: latents s·tau; bop: the flip threshold
  float grad_scale;     // multiplies G first
  uint live;            // 1 = lr and t come from the scalars slot
  uint live_word;       // live: scalars[live_word] = lr (f32 bits), scalars[live_word + 1] = t
  uint key;             // stochastic rounding: the matrix's stream (seed, matrix id)
  uint budget;          // flip budget K, 0 = none (begin, update)
  uint pass;            // sign_hist, sign_pick: radix pass 0..3 (bits 31-8p .. 24-8p)
  uint blocks;          // fact: row blocks of the partials; ties, scan, apply: ceil(n / 256) workgroups
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
