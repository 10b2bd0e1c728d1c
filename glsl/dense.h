// dense.h — push constants of the small dense f32 linears (dense.comp,
// dense_fwd_t.comp, dense_bwd_t.comp).
#ifndef VKBLR_DENSE_H
#define VKBLR_DENSE_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(DensePush) {
  uint m;           // rows (tokens)
  uint k;           // input features: a is [m][k], w is [r][k]
  uint r;           // output features: out is [m][r]
  uint accumulate;  // forward kernels: 1 = out += a·wᵀ, 0 = out = a·wᵀ (the backward always adds)
} VKBLR_PUSH_END(pc)

// Rows of a dense_fwd_t workgroup and the most outputs it computes.
#define VKBLR_DENSE_TILE_ROWS 64
#define VKBLR_DENSE_TILE_OUTPUTS 48
// Rows of dx one dense_bwd_t invocation computes.
#define VKBLR_DENSE_BWD_ROWS 4

VKBLR_SHADER_END
#endif
