// vkblr/ops/dense.hpp — small dense f32 linears and their input gradient
// (glsl/dense.comp, dense_fwd_t.comp, dense_bwd_t.comp): the few-output
// projections of a model that are not worth a GEMM.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// Which kernel a dense builder records. `automatic` takes the tiled kernel
// wherever it applies (the conditions below), else the plain one; `plain`
// and `tiled` force one (tiled throws Error where it does not apply). Both
// sum every output's terms in the same order with the same fma, so the
// choice never changes a bit of the result.
enum class DenseKernel : std::uint8_t { automatic, plain, tiled };

// out f32 [m][r] = a f32 [m][k] · w f32 [r][k]ᵀ (accumulate: out +=).
// Plain (dense_fwd): one invocation per output. Tiled (dense_fwd_t): a
// workgroup per 64 rows, k staged through shared memory; applies when
// r <= 48, k % 4 == 0 and m <= 64 · 65535. out must not be a or w.
Dispatch dense_fwd(Context& ctx, const Buffer& a, const Buffer& w, const Buffer& out, std::uint32_t m,
                   std::uint32_t k, std::uint32_t r, bool accumulate, DenseKernel kernel = DenseKernel::automatic);

// Input gradient of dense_fwd: dx f32 [m][k] += dy f32 [m][r] · w f32 [r][k].
// Plain (dense_bwd): one invocation per element of dx. Tiled (dense_bwd_t):
// 4 rows of a column per invocation; applies when m <= 4 · 65535 and
// k <= 256 · 65535. dx must not be dy or w.
Dispatch dense_bwd(Context& ctx, const Buffer& dy, const Buffer& w, const Buffer& dx, std::uint32_t m,
                   std::uint32_t k, std::uint32_t r, DenseKernel kernel = DenseKernel::automatic);

}  // namespace vkblr::ops
