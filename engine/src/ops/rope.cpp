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
static_assert(sizeof(RopePush) == 48);

void check_head_dim(const char* op, std::uint32_t head_dim) {
  require(head_dim >= 2 && head_dim <= 1024 && head_dim % 2 == 0,
          "{}: head_dim = {} (must be even, 2..1024)", op, head_dim);
}

// The pairs of one tensor x [tokens][heads][head_dim] (n, and quarter =
// ceil(n/4)); checks x against positions and table and returns its bytes.
std::uint64_t tensor_pairs(const char* op, const char* name, const Buffer& x, const char* heads_name,
                           std::uint32_t heads, const Buffer& positions, const Buffer& table, const Rope& s,
                           std::uint32_t* n, std::uint32_t* quarter) {
  detail::dim(op, heads_name, heads);
  const std::uint64_t elements = std::uint64_t{s.tokens} * heads * s.head_dim;
  detail::elements_fit(op, elements);
  *n = static_cast<std::uint32_t>(elements / 2);
  *quarter = (*n + 3) / 4;
  const std::uint64_t x_bytes = elements * 4, pos_bytes = std::uint64_t{s.tokens} * 4,
                      table_bytes = std::uint64_t{s.max_positions} * s.head_dim * 4;
  need_bytes(op, name, x, x_bytes);
  require_apart(op, name, x, x_bytes, "positions", positions, pos_bytes);
  require_apart(op, name, x, x_bytes, "table", table, table_bytes);
  return x_bytes;
}

// The push constants of every rope dispatch: shape checks, positions and table.
RopePush rope_push(const char* op, const Buffer& positions, const Buffer& table, const Rope& s, bool inverse) {
  detail::dim(op, "tokens", s.tokens);
  detail::dim(op, "max_positions", s.max_positions);
  check_head_dim(op, s.head_dim);
  detail::elements_fit(op, std::uint64_t{s.max_positions} * s.head_dim);
  need_bytes(op, "positions", positions, std::uint64_t{s.tokens} * 4);
  need_bytes(op, "table", table, std::uint64_t{s.max_positions} * s.head_dim * 4);
  RopePush p{};
  p.tokens = s.tokens;
  p.half_dim = s.head_dim / 2;
  p.max_positions = s.max_positions;
  p.inverse = inverse ? 1 : 0;
  return p;
}

Dispatch rope(Context& ctx, const char* op, const Buffer& x, const Buffer& positions, const Buffer& table,
              const Rope& s, bool inverse) {
  RopePush p = rope_push(op, positions, table, s, inverse);
  p.heads = s.heads;
  tensor_pairs(op, "x", x, "heads", s.heads, positions, table, s, &p.n, &p.quarter);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::rope, op);
  d.set_push(p)
      .bind(0, x, Access::read_write)
      .bind(1, positions, Access::read)
      .bind(2, table, Access::read);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}

Dispatch rope_qk(Context& ctx, const char* op, const Buffer& q, const Buffer& k, const Buffer& positions,
                 const Buffer& table, const RopeQk& s, bool inverse) {
  const Rope shape{s.tokens, s.heads, s.head_dim, s.max_positions};
  RopePush p = rope_push(op, positions, table, shape, inverse);
  p.heads = s.heads;
  p.k_heads = s.kv_heads;
  const std::uint64_t q_bytes = tensor_pairs(op, "q", q, "heads", s.heads, positions, table, shape, &p.n, &p.quarter);
  const std::uint64_t k_bytes = tensor_pairs(op, "k", k, "kv_heads", s.kv_heads, positions, table, shape, &p.k_n, &p.k_quarter);
  require_apart(op, "q", q, q_bytes, "k", k, k_bytes);
  p.q_groups = detail::ceil_div(p.quarter, detail::kEltWorkgroup);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::rope_qk, op);
  d.set_push(p)
      .bind(0, q, Access::read_write)
      .bind(1, positions, Access::read)
      .bind(2, table, Access::read)
      .bind(3, k, Access::read_write);
  d.groups = detail::elt_grid(std::uint64_t{p.q_groups} * detail::kEltWorkgroup + p.k_quarter, op);
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

Dispatch rope_fwd(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& positions, const Buffer& table,
                  const RopeQk& shape) {
  return rope_qk(ctx, "rope_fwd", q, k, positions, table, shape, false);
}

Dispatch rope_bwd(Context& ctx, const Buffer& dq, const Buffer& dk, const Buffer& positions, const Buffer& table,
                  const RopeQk& shape) {
  return rope_qk(ctx, "rope_bwd", dq, dk, positions, table, shape, true);
}

}  // namespace vkblr::ops
