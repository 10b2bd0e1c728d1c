// Per-head q/gate split and merge (glsl/split_qg.comp).
#include "split_qg.h"

#include "op_util.hpp"
#include "vkblr/ops/split_qg.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::SplitQgPush;
static_assert(sizeof(SplitQgPush) == 16);

// Checks the shape and the three buffers; q and gate hold m·heads·head_dim
// floats, qg twice that.
SplitQgPush qg_push(const char* op, const Buffer& qg, const Buffer& q, const Buffer& gate, std::uint32_t m,
                    std::uint32_t heads, std::uint32_t head_dim) {
  dim(op, "m", m);
  dim(op, "heads", heads);
  dim(op, "head_dim", head_dim);
  const std::uint64_t width = std::uint64_t{heads} * head_dim;
  detail::elements_fit(op, std::uint64_t{m} * width * 2);
  need_bytes(op, "qg", qg, std::uint64_t{m} * width * 2 * 4);
  need_bytes(op, "q", q, std::uint64_t{m} * width * 4);
  need_bytes(op, "gate", gate, std::uint64_t{m} * width * 4);
  require(qg.id() != q.id() && qg.id() != gate.id() && q.id() != gate.id(),
          "{}: qg, q and gate must be three different buffers", op);
  SplitQgPush p{};
  p.m = m;
  p.width = static_cast<std::uint32_t>(width);
  p.head_dim = head_dim;
  return p;
}
}  // namespace

Dispatch split_qg(Context& ctx, const Buffer& qg, const Buffer& q, const Buffer& gate, std::uint32_t m,
                  std::uint32_t heads, std::uint32_t head_dim) {
  const SplitQgPush p = qg_push("split_qg", qg, q, gate, m, heads, head_dim);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::split_qg, "split_qg");
  d.set_push(p).bind(0, qg, Access::read).bind(1, q, Access::write).bind(2, gate, Access::write);
  d.groups = detail::elt_grid(std::uint64_t{m} * p.width, "split_qg");
  return d;
}

Dispatch merge_qg(Context& ctx, const Buffer& q, const Buffer& gate, const Buffer& qg, std::uint32_t m,
                  std::uint32_t heads, std::uint32_t head_dim) {
  const SplitQgPush p = qg_push("merge_qg", qg, q, gate, m, heads, head_dim);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::merge_qg, "merge_qg");
  d.set_push(p).bind(0, qg, Access::write).bind(1, q, Access::read).bind(2, gate, Access::read);
  d.groups = detail::elt_grid(std::uint64_t{m} * p.width, "merge_qg");
  return d;
}

}  // namespace vkblr::ops
