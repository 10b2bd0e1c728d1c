// RMSNorm forward and backward (glsl/rmsnorm_fwd.comp, rmsnorm_bwd.comp;
// the backward's dw partials are added by glsl/rmsnorm_dw.comp).
#include "rmsnorm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/rmsnorm.hpp"

namespace vkblr::ops {
namespace {
using detail::ceil_div;
using detail::need_bytes;
using detail::require_apart;
using shader::RmsnormPush;
static_assert(sizeof(RmsnormPush) == 32);

constexpr std::uint32_t kMaxHidden = VKBLR_RMSNORM_MAX_WG * VKBLR_RMSNORM_COLS;
// The backward: rows side by side in a workgroup up to this many
// invocations, and enough rows per slot that about kBwdInvocations
// invocations cover the batch (half an H100's resident threads: fewer
// leave its memory idle, more add dw partials).
constexpr std::uint32_t kBwdWorkgroup = 512;
constexpr std::uint64_t kBwdInvocations = std::uint64_t{1} << 17;
// rmsnorm_dw: columns per workgroup, and slices of a column's partials
// summed side by side.
constexpr std::uint32_t kDwCols = VKBLR_RMSNORM_DW_COLS, kDwSlices = VKBLR_RMSNORM_DW_SLICES;

// The workgroup of a row of `hidden` columns: the smallest power of two
// from 32 that leaves at most 8 columns per invocation (at most 1024, then
// up to 16 columns each).
std::uint32_t row_workgroup(std::uint32_t hidden) {
  std::uint32_t wg = VKBLR_ROW_SUM_LANES;
  while (std::uint64_t{wg} * 8 < hidden && wg < VKBLR_RMSNORM_MAX_WG) wg *= 2;
  return wg;
}

// `count` workgroups, folded into y past 65535.
std::array<std::uint32_t, 3> folded(std::uint32_t count) {
  if (count <= detail::kFoldWidth) return {count, 1, 1};
  return {detail::kFoldWidth, ceil_div(count, detail::kFoldWidth), 1};
}

// Columns per invocation of a row of `hidden` over `wg` invocations.
std::uint32_t row_cols(std::uint32_t hidden, std::uint32_t wg) { return ceil_div(hidden, wg); }

// Checks the shape; the invocations of a row in `wg`.
RmsnormPush norm_push(Context& ctx, const char* op, const RmsNorm& s, std::uint32_t* wg) {
  detail::dim(op, "tokens", s.tokens);
  detail::dim(op, "hidden", s.hidden);
  require(s.hidden <= kMaxHidden, "{}: hidden = {} exceeds {}", op, s.hidden, kMaxHidden);
  require(std::isfinite(s.eps) && s.eps >= 0.0f, "{}: eps = {} (must be finite and >= 0)", op, s.eps);
  detail::elements_fit(op, std::uint64_t{s.tokens} * s.hidden);
  *wg = row_workgroup(s.hidden);
  require(*wg <= ctx.caps().max_workgroup_invocations, "{}: hidden = {} needs workgroups of {}; the device allows {}",
          op, s.hidden, *wg, ctx.caps().max_workgroup_invocations);
  RmsnormPush p{};
  p.rows = s.tokens;
  p.hidden = s.hidden;
  p.eps = s.eps;
  return p;
}

Dispatch forward(Context& ctx, const char* op, const Buffer& x, const Buffer* stream, const Buffer& w,
                 const Buffer& y, const Buffer& inv_rms, const RmsNorm& s) {
  std::uint32_t wg = 0;
  const RmsnormPush p = norm_push(ctx, op, s, &wg);
  const std::uint64_t bytes = std::uint64_t{s.tokens} * s.hidden * 4, w_bytes = std::uint64_t{s.hidden} * 4,
                      inv_bytes = std::uint64_t{s.tokens} * 4;
  need_bytes(op, "x", x, bytes);
  if (stream) need_bytes(op, "stream", *stream, bytes);
  need_bytes(op, "w", w, w_bytes);
  need_bytes(op, "y", y, bytes);
  need_bytes(op, "inv_rms", inv_rms, inv_bytes);
  require_apart(op, "y", y, bytes, "x", x, bytes);
  require_apart(op, "y", y, bytes, "w", w, w_bytes);
  require_apart(op, "y", y, bytes, "inv_rms", inv_rms, inv_bytes);
  require_apart(op, "inv_rms", inv_rms, inv_bytes, "x", x, bytes);
  require_apart(op, "inv_rms", inv_rms, inv_bytes, "w", w, w_bytes);
  if (stream) {
    require_apart(op, "stream", *stream, bytes, "x", x, bytes);
    require_apart(op, "stream", *stream, bytes, "w", w, w_bytes);
    require_apart(op, "stream", *stream, bytes, "y", y, bytes);
    require_apart(op, "stream", *stream, bytes, "inv_rms", inv_rms, inv_bytes);
  }
  const std::uint32_t spec[] = {wg, row_cols(s.hidden, wg)};
  Dispatch d = detail::make_dispatch(ctx, stream ? detail::KernelId::rmsnorm_fwd_residual : detail::KernelId::rmsnorm_fwd,
                                     op, spec);
  d.set_push(p).bind(0, x, Access::read).bind(2, w, Access::read).bind(3, y, Access::write);
  d.bind(4, inv_rms, Access::write);
  if (stream) d.bind(1, *stream, Access::read_write);
  d.groups = folded(s.tokens);
  return d;
}
}  // namespace

Dispatch rmsnorm_fwd(Context& ctx, const Buffer& x, const Buffer& w, const Buffer& y, const Buffer& inv_rms,
                     const RmsNorm& shape) {
  return forward(ctx, "rmsnorm_fwd", x, nullptr, w, y, inv_rms, shape);
}

Dispatch rmsnorm_fwd_residual(Context& ctx, const Buffer& x, const Buffer& stream, const Buffer& w, const Buffer& y,
                              const Buffer& inv_rms, const RmsNorm& shape) {
  return forward(ctx, "rmsnorm_fwd_residual", x, &stream, w, y, inv_rms, shape);
}

Ops rmsnorm_bwd(Context& ctx, const Buffer& x, const Buffer& w, const Buffer& inv_rms, const Buffer& dy,
                const Buffer& dx, const Buffer& dw, const RmsNorm& shape, const RmsNormBackward& options) {
  const char* op = "rmsnorm_bwd";
  std::uint32_t wg = 0;
  RmsnormPush p = norm_push(ctx, op, shape, &wg);
  const std::uint64_t bytes = std::uint64_t{shape.tokens} * shape.hidden * 4,
                      w_bytes = std::uint64_t{shape.hidden} * 4, inv_bytes = std::uint64_t{shape.tokens} * 4;
  need_bytes(op, "x", x, bytes);
  need_bytes(op, "w", w, w_bytes);
  need_bytes(op, "inv_rms", inv_rms, inv_bytes);
  need_bytes(op, "dy", dy, bytes);
  need_bytes(op, "dx", dx, bytes);
  need_bytes(op, "dw", dw, w_bytes);
  for (const auto& [name, b, n] : {std::tuple{"x", &x, bytes}, std::tuple{"w", &w, w_bytes},
                                   std::tuple{"inv_rms", &inv_rms, inv_bytes}, std::tuple{"dy", &dy, bytes}}) {
    require_apart(op, "dx", dx, bytes, name, *b, n);
    require_apart(op, "dw", dw, w_bytes, name, *b, n);
  }
  require_apart(op, "dx", dx, bytes, "dw", dw, w_bytes);

  p.accumulate = options.accumulate_dx ? 1 : 0;
  p.accumulate_dw = options.accumulate_dw ? 1 : 0;
  const std::uint32_t slots = std::min(std::max(kBwdWorkgroup / wg, 1u), shape.tokens);
  p.rows_per_slot = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(1, (std::uint64_t{shape.tokens} * wg + kBwdInvocations - 1) / kBwdInvocations));
  p.rows_per_block = slots * p.rows_per_slot;
  p.blocks = ceil_div(shape.tokens, p.rows_per_block);
  const Transient part = make_transient(std::uint64_t{p.blocks} * shape.hidden * 4);

  const std::uint32_t spec[] = {wg, row_cols(shape.hidden, wg), slots, slots * wg};
  Dispatch rows = detail::make_dispatch(ctx, detail::KernelId::rmsnorm_bwd, op, spec);
  rows.set_push(p)
      .bind(0, x, Access::read)
      .bind(2, w, Access::read)
      .bind(4, inv_rms, Access::read)
      .bind(5, dy, Access::read)
      .bind(6, dx, options.accumulate_dx ? Access::read_write : Access::write)
      .bind(7, part, Access::write);
  rows.groups = folded(p.blocks);

  // dw (+)= Σ_b part[b]: slices of blocks side by side, then the slices in order.
  const std::uint32_t dw_spec[] = {kDwCols, kDwSlices, kDwCols * kDwSlices};
  Dispatch finish = detail::make_dispatch(ctx, detail::KernelId::rmsnorm_dw, "rmsnorm_bwd_dw", dw_spec);
  finish.set_push(p)
      .bind(7, part, Access::read)
      .bind(3, dw, options.accumulate_dw ? Access::read_write : Access::write);
  finish.groups = {ceil_div(shape.hidden, kDwCols), 1, 1};
  return {rows, finish};
}

}  // namespace vkblr::ops
