// Output ops (glsl/scale_acc.comp, f16_to_f32.comp).
#include "scale.h"

#include "op_util.hpp"
#include "vkblr/ops/scale.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::ScalePush;
static_assert(sizeof(ScalePush) == 16);

// Checks m and k; the push constants of an [m][k] output.
ScalePush output_push(const char* op, std::uint32_t m, std::uint32_t k) {
  dim(op, "m", m);
  dim(op, "k", k);
  detail::elements_fit(op, std::uint64_t{m} * k);
  ScalePush p{};
  p.m = m;
  p.k = k;
  p.quarter = static_cast<std::uint32_t>((std::uint64_t{m} * k + 3) / 4);  // scale_acc*: four passes
  return p;
}
}  // namespace

Dispatch scale_acc(Context& ctx, const Buffer& a, const Buffer& col, const Buffer& out, std::uint32_t m,
                   std::uint32_t k, bool accumulate) {
  const char* op = "scale_acc";
  ScalePush p = output_push(op, m, k);
  p.accumulate = accumulate ? 1 : 0;
  const std::uint64_t bytes = std::uint64_t{m} * k * 4;
  need_bytes(op, "a", a, bytes);
  need_bytes(op, "col", col, std::uint64_t{k} * 4);
  need_bytes(op, "out", out, bytes);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::scale_acc, op);
  d.set_push(p)
      .bind(0, a, Access::read)
      .bind(1, col, Access::read)
      .bind(4, out, accumulate ? Access::read_write : Access::write);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}

Dispatch scale_acc2(Context& ctx, const Buffer& a0, const Buffer& col0, const Buffer& a1, const Buffer& col1,
                    const Buffer& out, std::uint32_t m, std::uint32_t k) {
  const char* op = "scale_acc2";
  const ScalePush p = output_push(op, m, k);
  const std::uint64_t bytes = std::uint64_t{m} * k * 4;
  need_bytes(op, "a0", a0, bytes);
  need_bytes(op, "col0", col0, std::uint64_t{k} * 4);
  need_bytes(op, "a1", a1, bytes);
  need_bytes(op, "col1", col1, std::uint64_t{k} * 4);
  need_bytes(op, "out", out, bytes);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::scale_acc2, op);
  d.set_push(p)
      .bind(0, a0, Access::read)
      .bind(1, col0, Access::read)
      .bind(2, a1, Access::read)
      .bind(3, col1, Access::read)
      .bind(4, out, Access::write);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}

Dispatch f16_to_f32(Context& ctx, const Buffer& src, const Buffer& out, std::uint32_t n) {
  const char* op = "f16_to_f32";
  dim(op, "n", n);
  need_bytes(op, "src", src, std::uint64_t{n} * 2);
  need_bytes(op, "out", out, std::uint64_t{n} * 4);
  ScalePush p{};
  p.m = 1;
  p.k = n;
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::f16_to_f32, op);
  d.set_push(p).bind(0, src, Access::read).bind(4, out, Access::write);
  d.groups = detail::elt_grid(n, op);
  return d;
}

}  // namespace vkblr::ops
