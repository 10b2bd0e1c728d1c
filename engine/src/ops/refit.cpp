// The GPU refit's sign kernels (vkblr/ops/refit.hpp; glsl/refit_u_rows.comp,
// refit_v_rows.comp, refit_v_commit.comp, refit_signs.comp,
// refit_sign_dot.comp, refit_hadamard.comp).
#include "vkblr/ops/refit.hpp"

#include <array>

#include "refit_checks.hpp"

namespace vkblr::ops {
namespace {
using detail::need_bytes;
using refit_detail::block_push;
using refit_detail::outputs_apart;
using refit_detail::refit_push;
using refit_detail::row_grid;
using refit_detail::shared_fits;
using shader::RefitPush;
}  // namespace

Dispatch refit_u_rows(Context& ctx, const Buffer& p, const Buffer& q, const Buffer& qs, const Buffer& bits,
                      const Buffer& h, std::uint32_t rows, std::uint32_t r) {
  const char* op = "refit_u_rows";
  const RefitPush push = refit_push(op, 0, rows, r);
  shared_fits(ctx, op, r, std::uint64_t{16} * r + 8 * VKBLR_REFIT_ROW_WG);
  need_bytes(op, "p", p, std::uint64_t{rows} * r * 4);
  need_bytes(op, "q", q, std::uint64_t{r} * r * 4);
  need_bytes(op, "qs", qs, std::uint64_t{rows} * r * 4);
  need_bytes(op, "bits", bits, std::uint64_t{rows} * push.words * 4);
  need_bytes(op, "h", h, std::uint64_t{rows} * 4);
  outputs_apart(op, {{"bits", bits}, {"h", h}}, {{"p", p}, {"q", q}, {"qs", qs}});
  const std::array<std::uint32_t, 1> spec{r};
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_u_rows, op, spec);
  d.set_push(push)
      .bind(0, p, Access::read)
      .bind(1, q, Access::read)
      .bind(2, qs, Access::read)
      .bind(3, bits, Access::read_write)
      .bind(4, h, Access::read_write);
  d.groups = row_grid(rows);
  return d;
}

Dispatch refit_v_rows(Context& ctx, const Buffer& e, const Buffer& qa, const Buffer& c_diag, const Buffer& g,
                      const Buffer& bits, const RefitBlock& block, std::uint32_t r, const Buffer& proposed,
                      const Buffer& dg, const Buffer& dl) {
  const char* op = "refit_v_rows";
  const RefitPush push = block_push(op, block, r);
  shared_fits(ctx, op, r, std::uint64_t{12} * r);
  need_bytes(op, "e", e, std::uint64_t{block.rows} * r * 4);
  need_bytes(op, "qa", qa, std::uint64_t{r} * r * 4);
  need_bytes(op, "c_diag", c_diag, std::uint64_t{block.n} * 4);
  need_bytes(op, "g", g, std::uint64_t{block.n} * 4);
  need_bytes(op, "bits", bits, std::uint64_t{block.n} * push.words * 4);
  need_bytes(op, "proposed", proposed, std::uint64_t{block.rows} * push.words * 4);
  need_bytes(op, "dg", dg, std::uint64_t{block.rows} * r * 4);
  need_bytes(op, "dl", dl, std::uint64_t{block.rows} * 4);
  outputs_apart(op, {{"proposed", proposed}, {"dg", dg}, {"dl", dl}},
                {{"e", e}, {"qa", qa}, {"c_diag", c_diag}, {"g", g}, {"bits", bits}});
  const std::array<std::uint32_t, 1> spec{r};
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_v_rows, op, spec);
  d.set_push(push)
      .bind(0, e, Access::read)
      .bind(1, qa, Access::read)
      .bind(2, c_diag, Access::read)
      .bind(3, g, Access::read)
      .bind(4, bits, Access::read)
      .bind(5, proposed, Access::write)
      .bind(6, dg, Access::write)
      .bind(7, dl, Access::write);
  d.groups = row_grid(block.rows);
  return d;
}

Dispatch refit_v_commit(Context& ctx, const Buffer& accept, const Buffer& proposed, const Buffer& bits,
                        const Buffer& dg, const Buffer& z, const RefitBlock& block, std::uint32_t r) {
  const char* op = "refit_v_commit";
  const RefitPush push = block_push(op, block, r);
  need_bytes(op, "accept", accept, std::uint64_t{block.rows} * 4);
  need_bytes(op, "proposed", proposed, std::uint64_t{block.rows} * push.words * 4);
  need_bytes(op, "bits", bits, std::uint64_t{block.n} * push.words * 4);
  need_bytes(op, "dg", dg, std::uint64_t{block.rows} * r * 4);
  need_bytes(op, "z", z, std::uint64_t{block.rows} * r * 4);
  outputs_apart(op, {{"bits", bits}, {"dg", dg}, {"z", z}}, {{"accept", accept}, {"proposed", proposed}});
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_v_commit, op);
  d.set_push(push)
      .bind(0, accept, Access::read)
      .bind(1, proposed, Access::read)
      .bind(2, bits, Access::write)
      .bind(3, dg, Access::write)
      .bind(4, z, Access::write);
  d.groups = detail::elt_grid(std::uint64_t{block.rows} * r, op);
  return d;
}

Dispatch refit_flip_columns(Context& ctx, const Buffer& mask, const Buffer& bits, std::uint32_t rows, std::uint32_t r) {
  const char* op = "refit_flip_columns";
  const RefitPush push = refit_push(op, 0, rows, r);
  need_bytes(op, "mask", mask, std::uint64_t{push.words} * 4);
  need_bytes(op, "bits", bits, std::uint64_t{rows} * push.words * 4);
  outputs_apart(op, {{"bits", bits}}, {{"mask", mask}});
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_flip_columns, op);
  d.set_push(push).bind(0, bits, Access::read_write).bind(1, mask, Access::read);
  d.groups = detail::elt_grid(std::uint64_t{rows} * push.words, op);
  return d;
}

Dispatch refit_row_scales(Context& ctx, const Buffer& x, const Buffer& bits, const Buffer& scale, std::uint32_t rows,
                          std::uint32_t r) {
  const char* op = "refit_row_scales";
  const RefitPush push = refit_push(op, 0, rows, r);
  need_bytes(op, "x", x, std::uint64_t{rows} * 4);
  need_bytes(op, "bits", bits, std::uint64_t{rows} * push.words * 4);
  need_bytes(op, "scale", scale, std::uint64_t{rows} * 4);
  outputs_apart(op, {{"bits", bits}, {"scale", scale}}, {{"x", x}});
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_row_scales, op);
  d.set_push(push).bind(0, bits, Access::read_write).bind(1, x, Access::read).bind(2, scale, Access::write);
  d.groups = detail::elt_grid(std::uint64_t{rows} * push.words, op);
  return d;
}

Dispatch refit_sign_dot(Context& ctx, const Buffer& bits, const Buffer& a, const Buffer& col, const Buffer& out,
                        std::uint32_t rows, std::uint32_t r) {
  const char* op = "refit_sign_dot";
  const RefitPush push = refit_push(op, 0, rows, r);
  need_bytes(op, "bits", bits, std::uint64_t{rows} * push.words * 4);
  need_bytes(op, "a", a, std::uint64_t{rows} * r * 4);
  need_bytes(op, "col", col, std::uint64_t{r} * 4);
  need_bytes(op, "out", out, std::uint64_t{rows} * 4);
  outputs_apart(op, {{"out", out}}, {{"bits", bits}, {"a", a}, {"col", col}});
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_sign_dot, op);
  d.set_push(push)
      .bind(0, bits, Access::read)
      .bind(1, a, Access::read)
      .bind(2, col, Access::read)
      .bind(3, out, Access::write);
  d.groups = row_grid(rows);
  return d;
}

Dispatch refit_hadamard(Context& ctx, const Buffer& a, const Buffer& b, std::uint64_t count) {
  const char* op = "refit_hadamard";
  RefitPush push{};
  push.rows = detail::dim(op, "count", count);
  need_bytes(op, "a", a, count * 4);
  need_bytes(op, "b", b, count * 4);
  outputs_apart(op, {{"a", a}}, {{"b", b}});
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_hadamard, op);
  d.set_push(push).bind(0, a, Access::read_write).bind(1, b, Access::read);
  d.groups = detail::elt_grid(count, op);
  return d;
}

}  // namespace vkblr::ops
