// vkblr/blr_dense.hpp — a blr layer trained through its dense weight.
//
// blr_forward / blr_backward run a layer path by path through its rank,
// staging per-token intermediates of every path ([ntok][r], [ntok][m],
// transposed copies for the sign GEMMs): at inference and at few tokens the
// right route. At the many tokens of a training step (ntok ≫ paths·r) those
// passes move far more data than the GEMMs need. The dense route forms the
// layer's weight once per use and runs the layer as dense GEMMs:
//
//   Ŵ = Σ_p diag(h_p)·S_U,p·diag(ℓ_p)·S_V,pᵀ·diag(g_p)        f16 [m][n]
//     = U·Vᵀ, U = [h_p ⊙ S_U,p]_p f16 [m][P·r], V = [g_p ⊙ ℓ_p ⊙ S_V,p]_p
//       f16 [n][P·r] (paths side by side; one GEMM of m·n·P·r)
//   forward   y (+)= x·Ŵᵀ                       (x staged f16 by the caller)
//   backward  dx (+)= dy·Ŵ, dŴ = dyᵀ·x (tokens as K, f32 [m][n]), then per path
//             N = dŴ·(g⊙ℓ⊙S_V)  [m][r]      P = dŴᵀ·(h⊙S_U)  [n][r]
//             G_U (+)= diag(h)·N              dh += rowsum(S_U ⊙ N)
//             G_V (+)= diag(g)·P·diag(ℓ)      dg += rowsum(S_V ⊙ P·diag(ℓ))
//                                             dℓ += colsum(diag(g)·S_V ⊙ P)
//
// These are blr_backward's gradients (its BlrBackward conventions: scale
// gradients accumulate, sign gradients overwrite or add), up to f16 staging
// (Ŵ, U, V, dy·gscale, x, dŴ·gscale): the same values to f16 rounding, not
// the same bits. Deterministic: fixed-order reductions, no atomics.
//
// Ownership: BlrDense owns the staging buffers of layers of one shape; the
// recorded ops borrow them and the layer's buffers. Layers of one shape may
// share one BlrDense where the Recorder may order them (it adds the
// barriers; ops on separate BlrDense run side by side).
#pragma once

#include <cstdint>
#include <span>

#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr {

// Whether a layer can take the dense route: m and n multiples of 32 (the
// transposed f16 staging), a valid layer otherwise (BlrLayer::check).
bool blr_dense_fits(const BlrLayer& layer) noexcept;

// Staging for layers of shape m × n, rank r, `paths` paths, up to `ntok`
// tokens a call. Throws vkblr::Error for a shape blr_dense_fits refuses.
struct BlrDense {
  BlrDense(Context& ctx, std::uint32_t ntok, std::uint32_t m, std::uint32_t n, std::uint32_t r, std::uint32_t paths);

  std::uint32_t ntok = 0, m = 0, n = 0, r = 0, paths = 0;
  Buffer w;             // f16 [m][n]: Ŵ (blr_dense_forward)
  Buffer w_t;           // f16 [n][m]: Ŵᵀ (blr_dense_backward)
  Buffer u, u_t;        // f16 [m][P·r] and [P·r][m]: h_p ⊙ S_U,p
  Buffer v, v_t;        // f16 [n][P·r] and [P·r][n]: g_p ⊙ ℓ_p ⊙ S_V,p
  Buffer w32;           // f32 [m][n]: Ŵ or Ŵᵀ before staging, then dŴ
  Buffer dw16, dw16_t;  // f16 [m][n], [n][m]: dŴ·gscale
  Buffer nu, pv;        // f32 [m][P·r], [n][P·r]: N and P of every path
  Buffer e;             // f32 [n][r]: the column terms of dℓ
  Buffer dy16;          // f16 [ntok][m]: dy·gscale
  Buffer xt, dyt;       // f16 [n][t32], [m][t32]: x and dy·gscale transposed (t32 = ntok rounded up to 32)

  std::uint64_t bytes() const noexcept;  // device bytes of the buffers above
};

// y f32 [ntok][m] (+)= x16·Ŵᵀ: Ŵ formed into d.w from the layer's current
// signs and scales, x16 f16 [ntok][n] staged by the caller (layers of one
// input share it). Throws vkblr::Error for a shape or buffer that does not
// fit (d's shape, ntok).
void blr_dense_forward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrDense& d, const Buffer& x16,
                       const Buffer& y, std::uint32_t ntok, bool accumulate = false);

// The backward of y = x·Ŵᵀ for x f32 [ntok][n], dy f32 [ntok][m]: dx f32
// [ntok][n] (+)= dy·Ŵ (accumulate_dx), every path's dh, dℓ, dg accumulate,
// and (options.sign_grads) path p's sign gradients go to sign_grads[p]
// (both buffers, as blr_backward's span form checks them; empty span: the
// paths' own g_u / g_v, none for a path without them), overwritten or added as
// options.accumulate_sign_grads says. Ŵ is formed anew from the signs and
// scales as they are. options.gscale: the f16 staging scale of dy and dŴ.
// xt_staged: x's transposed f16 staging for this call (f16 [n][ntok rounded
// up to 32]) where an earlier blr_dense_backward of the same x made it (its
// BlrDense::xt; layers of one input share it), or nullptr: staged into d.xt.
// Throws vkblr::Error naming the value for a bad shape, buffer or gscale.
void blr_dense_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrDense& d, const Buffer& x,
                        const Buffer& dy, const Buffer& dx, std::uint32_t ntok, std::span<const BlrSignGrads> sign_grads,
                        const BlrBackward& options, bool accumulate_dx = false, const Buffer* xt_staged = nullptr);

}  // namespace vkblr
