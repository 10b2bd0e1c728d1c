// Sign bitmap -> scaled f32 plane (glsl/expand_f32.comp).
#include "vkblr/ops/expand_f32.hpp"

#include "expand_f32.h"
#include "op_util.hpp"

namespace vkblr::ops {
namespace {
using shader::ExpandF32Push;
static_assert(sizeof(ExpandF32Push) == 24);
}  // namespace

Dispatch expand_f32(Context& ctx, const Buffer& bits, const Buffer* row_scale, const Buffer* col_scale,
                    const Buffer& plane, std::uint32_t rows, std::uint32_t r, std::uint32_t ldp, std::uint64_t offset) {
  const char* op = "expand_f32";
  detail::dim(op, "rows", rows);
  detail::dim(op, "r", r);
  require(r % 32 == 0, "{}: r = {} is not a multiple of 32", op, r);
  if (ldp == 0) ldp = r;
  require(ldp >= r, "{}: ldp = {} is less than r = {}", op, ldp, r);
  detail::elements_fit(op, std::uint64_t{rows} * r);
  detail::need_bytes(op, "bits", bits, std::uint64_t{rows} * (r / 32) * 4);
  if (row_scale) detail::need_bytes(op, "row_scale", *row_scale, std::uint64_t{rows} * 4);
  if (col_scale) detail::need_bytes(op, "col_scale", *col_scale, std::uint64_t{r} * 4);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::expand_f32, op);
  ExpandF32Push p{};
  p.rows = rows;
  p.r = r;
  p.ldp = ldp;
  p.offset = detail::bind_elements(ctx, d, op, "plane", 3, plane, Access::write, offset,
                                   std::uint64_t{rows - 1} * ldp + r);
  p.row_scaled = row_scale ? 1u : 0u;
  p.col_scaled = col_scale ? 1u : 0u;
  d.bind(0, bits, Access::read);
  if (row_scale) d.bind(1, *row_scale, Access::read);
  if (col_scale) d.bind(2, *col_scale, Access::read);
  d.set_push(p);
  d.groups = detail::elt_grid(std::uint64_t{rows} * r, op);
  return d;
}

}  // namespace vkblr::ops
