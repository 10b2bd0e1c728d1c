// vkblr/ops/rmsnorm.hpp — RMSNorm of a Llama block, forward (optionally
// with the residual add fused) and backward (glsl/rmsnorm_fwd.comp,
// rmsnorm_bwd.comp).
//
// Activations are f32 [tokens][hidden], one row per token; the weight w is
// f32 [hidden]. The forward computes, per row,
//   y = x · inversesqrt(mean(x²) + eps) · w
// (Hugging Face's LlamaRMSNorm: x̂ = x·inv first, then x̂·w) and saves inv,
// the row's inverse RMS, f32 [tokens], for the backward. A row's sum of
// squares has a fixed order that depends only on hidden, so the bits do not
// depend on the batch, the row's position or the device's subgroup size.
// The exact arithmetic is in docs/kernels.md ("RMSNorm").
//
// hidden is at most 16384 (a row lives in one workgroup's registers).
// Outputs must not overlap inputs, nor each other.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// The shape of an RMSNorm.
struct RmsNorm {
  std::uint32_t tokens = 0;  // rows
  std::uint32_t hidden = 0;  // row length, 1..16384
  float eps = 1e-5f;         // finite, >= 0
};

// y f32 [tokens][hidden] = rmsnorm(x)·w; inv_rms f32 [tokens] = each row's
// inversesqrt(mean(x²) + eps). Every element of y and inv_rms is written.
Dispatch rmsnorm_fwd(Context& ctx, const Buffer& x, const Buffer& w, const Buffer& y, const Buffer& inv_rms,
                     const RmsNorm& shape);

// The residual add fused: stream += x (in place, one f32 addition per
// element, the bits of add_into), then y = rmsnorm(stream)·w and inv_rms as
// rmsnorm_fwd of the updated stream, bit for bit. stream f32
// [tokens][hidden] is the residual stream; its backward takes the updated
// stream as x.
Dispatch rmsnorm_fwd_residual(Context& ctx, const Buffer& x, const Buffer& stream, const Buffer& w, const Buffer& y,
                              const Buffer& inv_rms, const RmsNorm& shape);

// What rmsnorm_bwd adds to and what it overwrites.
struct RmsNormBackward {
  // dx += the input gradient (the residual stream's gradient, which the
  // norm's input also feeds) instead of dx = it.
  bool accumulate_dx = false;
  // dw += Σ_rows dy·x̂ (micro-batches) instead of dw = it.
  bool accumulate_dw = false;
};

// Backward of rmsnorm_fwd given dy f32 [tokens][hidden], the forward's input
// x (for rmsnorm_fwd_residual, the stream after the add), w and inv_rms:
//   dx f32 [tokens][hidden] (+)= inv·(dy·w − x̂·mean(dy·w·x̂)),  x̂ = x·inv
//   dw f32 [hidden]         (+)= Σ_rows dy·x̂
// Two dispatches: the first writes dx and per-block partial sums of dw
// (a block is a workgroup's few rows side by side, each taking
// ceil(tokens · row invocations / 2^17) consecutive rows; the partials are
// a transient of blocks × hidden floats), the second adds the blocks'
// partials in a fixed order (rmsnorm_dw.comp). No atomics: the same bits
// every run; dx's bits of a row do not depend on the batch.
Ops rmsnorm_bwd(Context& ctx, const Buffer& x, const Buffer& w, const Buffer& inv_rms, const Buffer& dy,
                const Buffer& dx, const Buffer& dw, const RmsNorm& shape, const RmsNormBackward& options = {});

}  // namespace vkblr::ops
