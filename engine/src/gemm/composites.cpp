// The seed's GEMM composites: plane_linear, weight_grad, gram_acc.
#include "../ops/op_util.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr {
using detail::round32;

Ops plane_linear(Context& ctx, const Buffer& plane, const Buffer& x, const Buffer& act16, const Buffer& y,
                 std::uint32_t ntok, std::uint32_t n, std::uint32_t k, float scale) {
  require(scale != 0.0f, "plane_linear: scale = 0");
  Ops ops{ops::cvt(ctx, x, act16, ntok, k, scale)};
  for (Dispatch& d : gemm(ctx, act16, plane, GemmB::plane, y, {ntok, n, k, 0, 0, 0, 1.0f / scale, false})) {
    ops.push_back(d);
  }
  return ops;
}

Ops weight_grad(Context& ctx, const Buffer& x, const Buffer& dy, const Buffer& xt, const Buffer& dyt, const Buffer& dw,
                std::uint32_t ntok, std::uint32_t m, std::uint32_t k, float gscale) {
  require(gscale != 0.0f, "weight_grad: gscale = 0");
  detail::dim("weight_grad", "ntok", ntok);
  const std::uint32_t t32 = round32(ntok);
  Ops ops{ops::cvt_t(ctx, x, nullptr, xt, ntok, k, 1.0f, round32(k), t32),
          ops::cvt_t(ctx, dy, nullptr, dyt, ntok, m, gscale, round32(m), t32)};
  for (Dispatch& d : gemm(ctx, dyt, xt, GemmB::plane, dw, {m, k, t32, 0, 0, 0, 1.0f / gscale, false})) {
    ops.push_back(d);
  }
  return ops;
}

Ops gram_acc(Context& ctx, const Buffer& x, const Buffer& xt, const Buffer& acc, std::uint32_t ntok, std::uint32_t k) {
  detail::dim("gram_acc", "ntok", ntok);
  const std::uint32_t t32 = round32(ntok);
  Ops ops{ops::cvt_t(ctx, x, nullptr, xt, ntok, k, 1.0f, round32(k), t32)};
  for (Dispatch& d : gemm(ctx, xt, xt, GemmB::plane, acc, {k, k, t32, 0, 0, 0, 1.0f, true})) ops.push_back(d);
  return ops;
}

}  // namespace vkblr
