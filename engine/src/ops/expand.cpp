// Sign-bitmap expansion (glsl/expand.comp).
#include "expand.h"

#include "op_util.hpp"
#include "vkblr/ops/expand.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::ExpandPush;
static_assert(sizeof(ExpandPush) == 12);

// Checks the shape and the bitmap; a dispatch of `id` over rows·r elements
// with the bitmap bound.
Dispatch expansion(Context& ctx, detail::KernelId id, const char* op, const Buffer& bits, std::uint32_t rows,
                   std::uint32_t r) {
  dim(op, "rows", rows);
  dim(op, "r", r);
  const std::uint32_t words = detail::ceil_div(r, 32);
  detail::elements_fit(op, std::uint64_t{rows} * r);
  need_bytes(op, "bits", bits, std::uint64_t{rows} * words * 4);
  ExpandPush p{};
  p.rows = rows;
  p.r = r;
  p.words = words;
  Dispatch d = detail::make_dispatch(ctx, id, op);
  d.set_push(p).bind(0, bits, Access::read);
  d.groups = detail::elt_grid(std::uint64_t{rows} * r, op);
  return d;
}

// expand_n (the plane at slot 1) or expand_t (slot 2) into a buffer or a
// transient.
template <class Plane>
Dispatch expansion_into(Context& ctx, detail::KernelId id, const char* op, const Buffer& bits, const Plane& plane,
                        std::uint32_t rows, std::uint32_t r) {
  Dispatch d = expansion(ctx, id, op, bits, rows, r);
  need_bytes(op, id == detail::KernelId::expand_n ? "plane" : "plane_t", plane, std::uint64_t{rows} * r * 2);
  d.bind(id == detail::KernelId::expand_n ? 1 : 2, plane, Access::write);
  return d;
}
}  // namespace

Dispatch expand(Context& ctx, const Buffer& bits, const Buffer& plane, const Buffer& plane_t, std::uint32_t rows,
                std::uint32_t r) {
  Dispatch d = expansion(ctx, detail::KernelId::expand, "expand", bits, rows, r);
  const std::uint64_t plane_bytes = std::uint64_t{rows} * r * 2;
  need_bytes("expand", "plane", plane, plane_bytes);
  need_bytes("expand", "plane_t", plane_t, plane_bytes);
  require(plane.id() != plane_t.id(), "expand: plane and plane_t are the same buffer");
  d.bind(1, plane, Access::write).bind(2, plane_t, Access::write);
  return d;
}

Dispatch expand_n(Context& ctx, const Buffer& bits, const Buffer& plane, std::uint32_t rows, std::uint32_t r) {
  return expansion_into(ctx, detail::KernelId::expand_n, "expand_n", bits, plane, rows, r);
}

Dispatch expand_t(Context& ctx, const Buffer& bits, const Buffer& plane_t, std::uint32_t rows, std::uint32_t r) {
  return expansion_into(ctx, detail::KernelId::expand_t, "expand_t", bits, plane_t, rows, r);
}

Dispatch expand_n(Context& ctx, const Buffer& bits, const Transient& plane, std::uint32_t rows, std::uint32_t r) {
  return expansion_into(ctx, detail::KernelId::expand_n, "expand_n", bits, plane, rows, r);
}

Dispatch expand_t(Context& ctx, const Buffer& bits, const Transient& plane_t, std::uint32_t rows, std::uint32_t r) {
  return expansion_into(ctx, detail::KernelId::expand_t, "expand_t", bits, plane_t, rows, r);
}

}  // namespace vkblr::ops
