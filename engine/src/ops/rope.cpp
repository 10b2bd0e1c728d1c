// Rotary position embedding (glsl/rope.comp) and its host-made cos/sin table.
#include "rope.h"

#include <cmath>

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/rope.hpp"

namespace vkblr::ops {
namespace {
using detail::need_bytes;
using detail::require_apart;
using shader::RopePush;
static_assert(sizeof(RopePush) == 32);

void check_head_dim(const char* op, std::uint32_t head_dim) {
  require(head_dim >= 2 && head_dim <= 1024 && head_dim % 2 == 0,
          "{}: head_dim = {} (must be even, 2..1024)", op, head_dim);
}

Dispatch rope(Context& ctx, const char* op, const Buffer& x, const Buffer& positions, const Buffer& table,
              const Rope& s, bool inverse) {
  detail::dim(op, "tokens", s.tokens);
  detail::dim(op, "heads", s.heads);
  detail::dim(op, "max_positions", s.max_positions);
  check_head_dim(op, s.head_dim);
  const std::uint64_t elements = std::uint64_t{s.tokens} * s.heads * s.head_dim,
                      table_elements = std::uint64_t{s.max_positions} * s.head_dim;
  detail::elements_fit(op, elements);
  detail::elements_fit(op, table_elements);
  RopePush p{};
  p.tokens = s.tokens;
  p.heads = s.heads;
  p.half_dim = s.head_dim / 2;
  p.max_positions = s.max_positions;
  p.n = static_cast<std::uint32_t>(elements / 2);
  p.quarter = (p.n + 3) / 4;
  p.inverse = inverse ? 1 : 0;
  const std::uint64_t x_bytes = elements * 4, pos_bytes = std::uint64_t{s.tokens} * 4,
                      table_bytes = table_elements * 4;
  need_bytes(op, "x", x, x_bytes);
  need_bytes(op, "positions", positions, pos_bytes);
  need_bytes(op, "table", table, table_bytes);
  require_apart(op, "x", x, x_bytes, "positions", positions, pos_bytes);
  require_apart(op, "x", x, x_bytes, "table", table, table_bytes);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::rope, op);
  d.set_push(p)
      .bind(0, x, Access::read_write)
      .bind(1, positions, Access::read)
      .bind(2, table, Access::read);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}
}  // namespace

std::vector<float> rope_table(std::uint32_t head_dim, double base, std::uint32_t max_positions) {
  const char* op = "rope_table";
  check_head_dim(op, head_dim);
  require(std::isfinite(base) && base > 1.0, "{}: base = {} (must be finite and > 1)", op, base);
  detail::dim(op, "max_positions", max_positions);
  detail::elements_fit(op, std::uint64_t{max_positions} * head_dim);
  const std::uint32_t half = head_dim / 2;
  std::vector<double> inv_freq(half);
  for (std::uint32_t i = 0; i < half; ++i) inv_freq[i] = std::pow(base, -2.0 * i / head_dim);
  std::vector<float> table(std::size_t{max_positions} * head_dim);
  for (std::uint32_t pos = 0; pos < max_positions; ++pos) {
    for (std::uint32_t i = 0; i < half; ++i) {
      const double theta = pos * inv_freq[i];
      table[(std::size_t{pos} * half + i) * 2] = static_cast<float>(std::cos(theta));
      table[(std::size_t{pos} * half + i) * 2 + 1] = static_cast<float>(std::sin(theta));
    }
  }
  return table;
}

Dispatch rope_fwd(Context& ctx, const Buffer& x, const Buffer& positions, const Buffer& table, const Rope& shape) {
  return rope(ctx, "rope_fwd", x, positions, table, shape, false);
}

Dispatch rope_bwd(Context& ctx, const Buffer& dx, const Buffer& positions, const Buffer& table, const Rope& shape) {
  return rope(ctx, "rope_bwd", dx, positions, table, shape, true);
}

}  // namespace vkblr::ops
