// vkblr/ops/swiglu.hpp — the SwiGLU activation of a Llama MLP, h =
// silu(g)·u, and its gradient (glsl/swiglu.comp).
//
// g (gate) and u (up) are the two projections of the block's input, h goes
// into the down projection. They come either as two f32 [tokens][inter]
// buffers or as one fused gate|up projection's output gu f32
// [tokens][2·inter] (row t: the gate's inter values, then the up's). Both
// layouts give the same bits (tested). The exact arithmetic, with σ(g)
// evaluated without overflow, is in docs/kernels.md ("SwiGLU").
//
// Outputs must not overlap inputs. Every element of an output is written.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// h f32 [tokens][inter] = silu(g)·u; g, u f32 [tokens][inter].
Dispatch swiglu_fwd(Context& ctx, const Buffer& g, const Buffer& u, const Buffer& h, std::uint32_t tokens,
                    std::uint32_t inter);

// dg = dh·u·silu'(g), du = dh·silu(g), all f32 [tokens][inter] (overwritten).
Dispatch swiglu_bwd(Context& ctx, const Buffer& g, const Buffer& u, const Buffer& dh, const Buffer& dg,
                    const Buffer& du, std::uint32_t tokens, std::uint32_t inter);

// swiglu_fwd reading gu f32 [tokens][2·inter] (gate, then up, per row).
Dispatch swiglu_fwd_fused(Context& ctx, const Buffer& gu, const Buffer& h, std::uint32_t tokens,
                          std::uint32_t inter);

// swiglu_bwd reading gu and writing dgu f32 [tokens][2·inter] in the same
// layout (dg, then du, per row): the gradient of the fused projection's
// output.
Dispatch swiglu_bwd_fused(Context& ctx, const Buffer& gu, const Buffer& dh, const Buffer& dgu,
                          std::uint32_t tokens, std::uint32_t inter);

}  // namespace vkblr::ops
