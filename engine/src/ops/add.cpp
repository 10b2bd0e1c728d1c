// Elementwise sums and copy (glsl/add.comp).
#include "add.h"

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/add.hpp"

namespace vkblr::ops {
namespace {
using detail::need_bytes;
using shader::AddPush;
static_assert(sizeof(AddPush) == 8);

AddPush add_push(const char* op, std::uint32_t n) {
  detail::dim(op, "n", n);
  AddPush p{};
  p.n = n;
  p.quarter = static_cast<std::uint32_t>((std::uint64_t{n} + 3) / 4);
  return p;
}

// out (n floats, accessed as `out_access`) <- kernel `id` of a (n floats):
// add_into and copy, which differ in nothing else.
Dispatch unary(const char* op, Context& ctx, detail::KernelId id, Access out_access, const Buffer& a,
               const Buffer& out, std::uint32_t n) {
  const AddPush p = add_push(op, n);
  const std::uint64_t bytes = std::uint64_t{n} * 4;
  need_bytes(op, "a", a, bytes);
  need_bytes(op, "out", out, bytes);
  detail::require_apart(op, "out", out, bytes, "a", a, bytes);
  Dispatch d = detail::make_dispatch(ctx, id, op);
  d.set_push(p).bind(0, a, Access::read).bind(2, out, out_access);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}
}  // namespace

Dispatch add(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, std::uint32_t n) {
  const char* op = "add";
  const AddPush p = add_push(op, n);
  const std::uint64_t bytes = std::uint64_t{n} * 4;
  need_bytes(op, "a", a, bytes);
  need_bytes(op, "b", b, bytes);
  need_bytes(op, "out", out, bytes);
  detail::require_apart(op, "out", out, bytes, "a", a, bytes);
  detail::require_apart(op, "out", out, bytes, "b", b, bytes);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::add, op);
  d.set_push(p).bind(0, a, Access::read).bind(1, b, Access::read).bind(2, out, Access::write);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}

Dispatch add_into(Context& ctx, const Buffer& a, const Buffer& out, std::uint32_t n) {
  return unary("add_into", ctx, detail::KernelId::add_into, Access::read_write, a, out, n);
}

Dispatch copy(Context& ctx, const Buffer& a, const Buffer& out, std::uint32_t n) {
  return unary("copy", ctx, detail::KernelId::copy, Access::write, a, out, n);
}

}  // namespace vkblr::ops
