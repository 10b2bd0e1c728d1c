// vkblr/gemm.hpp — the f16 GEMM with f32 accumulation, and its composites.
//
//   out[m][ldo], columns ocol .. ocol+n  (+)=  act[m][k] · B[n][k]ᵀ · oscale
//
// act is an f16 buffer [m][lda] (lda >= k, a multiple of 8; 0 = k); out is
// f32. B is one of
//   plane   f16 [n][k]: the plane's own rows;
//   bits_n  sign bitmap [n][k/32] u32 words, bit j of word w = B[row][32w+j],
//           1 = +1, 0 = -1 (the blr layers' S matrices, one row per row);
//   bits_t  sign bitmap [k][n/32]: the plane is the bitmap's transpose,
//           B[c][row] = bit (c % 32) of word c/32 of bitmap row `row`.
// Bitmaps are expanded to ±1 while the GEMM stages them into shared memory;
// the products equal the plane mode's on the expanded plane bit for bit.
//
// Constraints: m >= 1 (any; rows past m are neither read nor written),
// n and k multiples of 16, k a multiple of 32 in bits_n and n a multiple of
// 32 in bits_t. Anything else throws vkblr::Error naming the value.
//
// Kernels (GemmKernel), chosen under the context's GEMM policy
// (Context::gemm_policy, vkblr/gemm_policy.hpp):
//   coopmat   the default: subgroup-scope KHR cooperative matrices with the
//             device's fragment shape (Caps::f16_fragment()), staged by the
//             kernel; GemmPolicy::coopmat off skips it (and coopmat2);
//   coopmat2  workgroup-scope cooperative matrices with tensor loads
//             (VK_NV_cooperative_matrix2; bitmaps decoded by the load's
//             callback), the default with GemmPolicy::coopmat2 where the
//             device has it;
//   plain     a shared-memory kernel for any Vulkan 1.3 device.
// GemmPolicy::bitmap_staging off makes the bitmap modes expand into a plane
// first (an `expand` dispatch) and run the plane GEMM: same bits. The
// workgroup tile comes from the device and the shape (gemm_tile_for);
// GemmPolicy::tile overrides it. For a given device, shape and tile,
// results are deterministic.
//
// Split-K: where an output has too few tiles to fill the device and K is
// long (the sign gradients: tokens as K), the K range is cut into s layers
// that run side by side, each writing its product into a workspace
// [s][m][n] f32, and a second dispatch (gemm_splitk_reduce) sums the layers
// in order and applies oscale / accumulate. Deterministic for a given s;
// results differ from s = 1 only by f32 summation order.
// GemmPolicy::k_splits = s forces s for every automatic choice.
//
// The split-K workspace (and the expanded plane without bitmap staging) is
// a transient of the GEMM's Ops (vkblr/dispatch.hpp): the Recorder provides
// it, one per GEMM of those recorded side by side (Recorder::parallel).
#pragma once

#include <cstdint>
#include <string>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"
#include "vkblr/gemm_tile.hpp"

namespace vkblr {

enum class GemmB : std::uint32_t { plane = 0, bits_n = 1, bits_t = 2 };
const char* to_string(GemmB mode) noexcept;

struct GemmShape {
  std::uint32_t m = 0, n = 0, k = 0;
  std::uint32_t lda = 0;   // act row stride in halves; 0 = k
  std::uint32_t ldo = 0;   // out row stride in floats; 0 = n
  std::uint32_t ocol = 0;  // first out column written
  float oscale = 1.0f;
  bool accumulate = false;  // out += product
  // Split-K layers: 0 = automatic (gemm_splits_for with gemms = 1), 1 =
  // none, s > 1 = K cut into s ranges of whole K tiles (fewer when K has
  // fewer tiles).
  std::uint32_t k_splits = 0;
};

// Whether the device runs `kernel` (coopmat2: VK_NV_cooperative_matrix2
// enabled; coopmat: KHR cooperative matrices with an f16 fragment; plain:
// always), whatever the GEMM policy says.
bool device_has_gemm_kernel(const Caps& caps, GemmKernel kernel) noexcept;
// The kernel vkblr uses on this device (the policy's kernel switches honoured).
GemmKernel default_gemm_kernel(const Context& ctx);

// The tile vkblr uses for this device and shape (the policy's tile and
// kernel switches honoured), on the default kernel or on a given one.
GemmTile gemm_tile_for(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k);
GemmTile gemm_tile_for(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k, GemmKernel kernel);
// The split-K layers vkblr uses for this shape and tile (the policy's
// k_splits honoured): on devices with 16-wide fragments,
// 256 / (tiles · gemms) rounded (about two workgroups per multiprocessor of
// a large GPU), each layer at least 512 of K; elsewhere 1. `gemms`: the
// independent GEMMs of this shape in the caller's work (the paths of a blr
// layer), which may share the device: the split fills it with all of them.
// A property of the work, not of how it is recorded, so that the bits do not
// depend on how many run side by side.
std::uint32_t gemm_splits_for(const Context& ctx, const GemmTile& tile, std::uint32_t m, std::uint32_t n,
                              std::uint32_t k, std::uint32_t gemms = 1);
// Throws Error when `tile` cannot run on this device (shared memory,
// invocations, divisibility), naming the broken rule.
void check_gemm_tile(const Context& ctx, const GemmTile& tile);

// The GEMM; `b` holds the plane or the bitmap of `mode`. `tile` = nullptr:
// gemm_tile_for. One dispatch (one more for bitmaps without bitmap
// staging, one more with split-K).
Ops gemm(Context& ctx, const Buffer& act, const Buffer& b, GemmB mode, const Buffer& out, const GemmShape& shape,
         const GemmTile* tile = nullptr);

// ---- composites (the seed's plane_linear, weight_grad, gram_acc) ----------

// y[ntok][n] = (x[ntok][k] · scale) · plane[n][k]ᵀ / scale, staged through
// act16 (f16 [ntok][k]): a dense frozen linear (or, with a gradient scale,
// its transpose for the input gradient).
Ops plane_linear(Context& ctx, const Buffer& plane, const Buffer& x, const Buffer& act16, const Buffer& y,
                 std::uint32_t ntok, std::uint32_t n, std::uint32_t k, float scale);

// dw[m][k] = dy[ntok][m]ᵀ · x[ntok][k] (overwritten): both operands staged
// transposed in f16 — dyt [m32][t32] at the gradient scale gscale, xt
// [k32][t32], t32 = ntok rounded up to 32 (zero padded), m32/k32 = m/k
// rounded up to 32 — with the tokens as the GEMM's K. m, k multiples of 16.
Ops weight_grad(Context& ctx, const Buffer& x, const Buffer& dy, const Buffer& xt, const Buffer& dyt, const Buffer& dw,
                std::uint32_t ntok, std::uint32_t m, std::uint32_t k, float gscale);

// acc[k][k] += x[ntok][k]ᵀ · x (the input Gram of a linear), x staged
// transposed into xt [k32][t32] as in weight_grad. k a multiple of 16.
Ops gram_acc(Context& ctx, const Buffer& x, const Buffer& xt, const Buffer& acc, std::uint32_t ntok, std::uint32_t k);

}  // namespace vkblr
