// Training-step kernels (glsl/mse_grad.comp, finite_guard.comp).
#include <algorithm>
#include <cmath>

#include "guard.h"
#include "op_util.hpp"
#include "train.h"
#include "vkblr/ops/train.hpp"

namespace vkblr::ops {

using shader::GuardPush;
using shader::MseGradPush;
static_assert(sizeof(MseGradPush) == 12 && sizeof(GuardPush) == 8);

Ops mse_grad(Context& ctx, const Buffer& y, const Buffer& target, const Buffer& dy, std::uint32_t n, float scale,
             const Buffer& partials) {
  const char* op = "mse_grad";
  detail::dim(op, "n", n);
  detail::need_bytes(op, "y", y, std::uint64_t{n} * 4);
  detail::need_bytes(op, "target", target, std::uint64_t{n} * 4);
  detail::need_bytes(op, "dy", dy, std::uint64_t{n} * 4);
  detail::need_bytes(op, "partials", partials, 64 * 4);
  require(std::isfinite(scale), "mse_grad: scale = {} is not finite", scale);
  require(dy.id() != y.id() && dy.id() != target.id(), "mse_grad: dy aliases y or target");
  // 64·g workgroups of about 16 elements per invocation, g <= 64
  constexpr std::uint64_t kPerGroup = std::uint64_t{VKBLR_ELT_WG} * 16;
  const auto g = static_cast<std::uint32_t>(std::clamp<std::uint64_t>((n + 64 * kPerGroup - 1) / (64 * kPerGroup), 1, 64));
  const Transient blocks = make_transient(std::uint64_t{g} * 64 * 4);  // per-workgroup sums
  const MseGradPush push{n, scale, g};
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::mse_grad, op);
  d.set_push(push)
      .bind(0, y, Access::read)
      .bind(1, target, Access::read)
      .bind(2, dy, Access::write)
      .bind(4, blocks, Access::write);
  d.groups = {64 * g, 1, 1};
  Dispatch sum = detail::make_dispatch(ctx, detail::KernelId::mse_partials, "mse_partials");
  sum.set_push(push).bind(3, partials, Access::write).bind(4, blocks, Access::read);
  sum.groups = {1, 1, 1};
  return {d, sum};
}

Dispatch finite_guard(Context& ctx, const Buffer& values, std::uint32_t count, const Buffer& flag,
                      std::uint32_t flag_word) {
  const char* op = "finite_guard";
  detail::dim(op, "count", count);
  detail::need_bytes(op, "values", values, std::uint64_t{count} * 4);
  detail::need_bytes(op, "flag", flag, (std::uint64_t{flag_word} + 1) * 4);
  require(flag.id() != values.id(), "finite_guard: flag is the values buffer");
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::finite_guard, op);
  d.set_push(GuardPush{count, flag_word}).bind(0, values, Access::read).bind(1, flag, Access::write);
  d.groups = {1, 1, 1};
  return d;
}

}  // namespace vkblr::ops
