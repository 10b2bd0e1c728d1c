// The dense-weight route of a blr layer (vkblr/blr_dense.hpp;
// glsl/blr_dense.comp).
#include "blr_dense.h"

#include <bit>
#include <cmath>
#include <vector>

#include "../ops/op_util.hpp"
#include "sign_destinations.hpp"
#include "vkblr/blr_dense.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr {
namespace {
using detail::KernelId;
using detail::round32;
using shader::BlrDensePush;
static_assert(sizeof(BlrDensePush) == 24);

bool shape_fits(std::uint32_t m, std::uint32_t n, std::uint32_t r, std::uint32_t paths) noexcept {
  return m > 0 && n > 0 && r > 0 && paths > 0 && m % 32 == 0 && n % 32 == 0 && r % 32 == 0;
}

// Checks the call against d's shape.
void check_call(const char* op, const BlrLayer& layer, const BlrDense& d, std::uint32_t ntok) {
  layer.check(op);
  require(blr_dense_fits(layer), "{}: layer {}x{} rank {}: the dense route wants m and n multiples of 32", op,
          layer.m, layer.n, layer.r);
  require(layer.m == d.m && layer.n == d.n && layer.r == d.r && layer.paths.size() == d.paths,
          "{}: layer {}x{} rank {} with {} paths, the BlrDense is for {}x{} rank {} with {} paths", op, layer.m,
          layer.n, layer.r, layer.paths.size(), d.m, d.n, d.r, d.paths);
  detail::dim(op, "ntok", ntok);
  require(ntok <= d.ntok, "{}: ntok = {} exceeds the BlrDense's {}", op, ntok, d.ntok);
}

BlrDensePush push(const BlrDense& d, std::uint32_t rows, std::size_t path, std::uint32_t flags) {
  BlrDensePush p{};
  p.rows = rows;
  p.r = d.r;
  p.words = d.r / 32;
  p.ld = d.paths * d.r;
  p.col0 = static_cast<std::uint32_t>(path) * d.r;
  p.flags = flags;
  return p;
}

// plane [rows][P·r] and plane_t [P·r][rows] at path p's columns / rows =
// f16(S · row (· col)).
Dispatch expand(Context& ctx, const BlrDense& d, std::size_t p, const Buffer& bits, std::uint32_t rows,
                const Buffer& row, const Buffer* col, const Buffer& plane, const Buffer& plane_t) {
  Dispatch x = detail::make_dispatch(ctx, KernelId::blr_dense_expand, "blr_dense_expand");
  x.set_push(push(d, rows, p, col ? VKBLR_BLR_DENSE_COL : 0u))
      .bind(0, bits, Access::read)
      .bind(1, row, Access::read)
      .bind(3, plane, Access::write)
      .bind(4, plane_t, Access::write);
  if (col) x.bind(2, *col, Access::read);
  x.groups = detail::elt_grid(std::uint64_t{rows} * (d.r / 32), "blr_dense_expand");
  return x;
}

// U = [h_p ⊙ S_U,p], V = [g_p ⊙ ℓ_p ⊙ S_V,p] and their transposes.
Ops expand_factors(Context& ctx, const BlrLayer& layer, const BlrDense& d) {
  Ops out;
  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    const BlrPath& path = layer.paths[p];
    out.push_back(expand(ctx, d, p, path.bits_u, layer.m, path.h, nullptr, d.u, d.u_t));
    out.push_back(expand(ctx, d, p, path.bits_v, layer.n, path.g, &path.l, d.v, d.v_t));
  }
  return out;
}

// `dst` f16 [rows][cols] = U·Vᵀ (transposed: V·Uᵀ), through w32.
Ops weight(Context& ctx, const BlrDense& d, bool transposed) {
  const std::uint32_t rows = transposed ? d.n : d.m, cols = transposed ? d.m : d.n;
  Ops out = gemm(ctx, transposed ? d.v : d.u, transposed ? d.u : d.v, GemmB::plane, d.w32,
                 {.m = rows, .n = cols, .k = d.paths * d.r});
  out.push_back(ops::cvt(ctx, d.w32, transposed ? d.w_t : d.w, rows, cols, 1.0f));
  return out;
}

// The factor gradients of path p from X = N (U side: rows m) or P (V side:
// rows n).
Dispatch factor_grads(Context& ctx, const BlrDense& d, std::size_t p, const Buffer& bits, std::uint32_t rows,
                      const Buffer& row, const Buffer* col, const Buffer& x, const Buffer* g, bool accumulate,
                      const Buffer& drow, bool column_terms) {
  std::uint32_t flags = col ? VKBLR_BLR_DENSE_COL : 0u;
  if (g) flags |= VKBLR_BLR_DENSE_WRITE_G | (accumulate ? VKBLR_BLR_DENSE_ACCUMULATE : 0u);
  if (column_terms) flags |= VKBLR_BLR_DENSE_COLTERM;
  Dispatch k = detail::make_dispatch(ctx, KernelId::blr_dense_grads, "blr_dense_grads");
  k.set_push(push(d, rows, p, flags))
      .bind(0, bits, Access::read)
      .bind(1, row, Access::read)
      .bind(3, x, Access::read)
      .bind(5, drow, Access::read_write);
  if (col) k.bind(2, *col, Access::read);
  if (g) k.bind(4, *g, accumulate ? Access::read_write : Access::write);
  if (column_terms) k.bind(6, d.e, Access::write);
  constexpr std::uint32_t kFold = 65535;
  k.groups = {std::min(rows, kFold), detail::ceil_div(rows, kFold), 1};
  return k;
}

}  // namespace

bool blr_dense_fits(const BlrLayer& layer) noexcept {
  return shape_fits(layer.m, layer.n, layer.r, static_cast<std::uint32_t>(layer.paths.size()));
}

BlrDense::BlrDense(Context& ctx, std::uint32_t ntok_, std::uint32_t m_, std::uint32_t n_, std::uint32_t r_,
                   std::uint32_t paths_)
    : ntok(ntok_), m(m_), n(n_), r(r_), paths(paths_) {
  const char* op = "BlrDense";
  detail::dim(op, "ntok", ntok);
  require(shape_fits(m, n, r, paths), "{}: layer {}x{} rank {} with {} paths: want m, n and r multiples of 32, paths >= 1",
          op, m, n, r, paths);
  const std::uint64_t mn = std::uint64_t{m} * n, pr = std::uint64_t{paths} * r, t32 = round32(ntok);
  detail::elements_fit(op, std::max({mn, pr * std::max(m, n), t32 * std::max(m, n)}));
  w = ctx.buffer(mn * 2, "blr_dense.w");
  w_t = ctx.buffer(mn * 2, "blr_dense.w_t");
  u = ctx.buffer(m * pr * 2, "blr_dense.u");
  u_t = ctx.buffer(m * pr * 2, "blr_dense.u_t");
  v = ctx.buffer(n * pr * 2, "blr_dense.v");
  v_t = ctx.buffer(n * pr * 2, "blr_dense.v_t");
  w32 = ctx.buffer(mn * 4, "blr_dense.w32");
  dw16 = ctx.buffer(mn * 2, "blr_dense.dw16");
  dw16_t = ctx.buffer(mn * 2, "blr_dense.dw16_t");
  nu = ctx.buffer(m * pr * 4, "blr_dense.n");
  pv = ctx.buffer(n * pr * 4, "blr_dense.p");
  e = ctx.buffer(std::uint64_t{n} * r * 4, "blr_dense.e");
  dy16 = ctx.buffer(std::uint64_t{ntok} * m * 2, "blr_dense.dy16");
  xt = ctx.buffer(t32 * n * 2, "blr_dense.xt");
  dyt = ctx.buffer(t32 * m * 2, "blr_dense.dyt");
}

std::uint64_t BlrDense::bytes() const noexcept {
  std::uint64_t total = 0;
  for (const Buffer* b : {&w, &w_t, &u, &u_t, &v, &v_t, &w32, &dw16, &dw16_t, &nu, &pv, &e, &dy16, &xt, &dyt}) {
    total += b->size();
  }
  return total;
}

void blr_dense_forward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrDense& d, const Buffer& x16,
                       const Buffer& y, std::uint32_t ntok, bool accumulate) {
  const char* op = "blr_dense_forward";
  check_call(op, layer, d, ntok);
  detail::need_bytes(op, "x16", x16, std::uint64_t{ntok} * layer.n * 2);
  detail::need_bytes(op, "y", y, std::uint64_t{ntok} * layer.m * 4);
  rec.add(expand_factors(ctx, layer, d));
  rec.add(weight(ctx, d, false));
  rec.add(gemm(ctx, x16, d.w, GemmB::plane, y, {.m = ntok, .n = layer.m, .k = layer.n, .accumulate = accumulate}));
}

void blr_dense_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrDense& d, const Buffer& x,
                        const Buffer& dy, const Buffer& dx, std::uint32_t ntok, std::span<const BlrSignGrads> sign_grads,
                        const BlrBackward& options, bool accumulate_dx, const Buffer* xt_staged) {
  const char* op = "blr_dense_backward";
  check_call(op, layer, d, ntok);
  detail::require_gscale(op, options.gscale);
  const auto [m, n, r] = std::array{layer.m, layer.n, layer.r};
  detail::need_bytes(op, "x", x, std::uint64_t{ntok} * n * 4);
  detail::need_bytes(op, "dy", dy, std::uint64_t{ntok} * m * 4);
  detail::need_bytes(op, "dx", dx, std::uint64_t{ntok} * n * 4);
  const std::vector<BlrSignGrads> dest =
      !options.sign_grads      ? std::vector<BlrSignGrads>(layer.paths.size())
      : sign_grads.empty()     ? detail::own_sign_grads(layer)
                               : detail::sign_destinations(op, layer, sign_grads, options);
  const float gs = options.gscale, inv = 1.0f / options.gscale;
  const std::uint32_t pr = d.paths * r;

  // Ŵᵀ from the signs and scales as they are (through w32, which dŴ takes next)
  rec.add(expand_factors(ctx, layer, d));
  rec.add(weight(ctx, d, true));
  // dŴ = dyᵀ·x, tokens as K: x and dy·gs staged transposed (x unless staged
  // already; dy also row-major into dy16); dx (+)= dy·Ŵ
  const std::uint32_t t32 = round32(ntok);
  if (xt_staged) {
    detail::need_bytes(op, "xt_staged", *xt_staged, std::uint64_t{n} * t32 * 2);
  } else {
    rec.add(ops::cvt_t(ctx, x, nullptr, d.xt, ntok, n, 1.0f, n, t32));
  }
  rec.add(ops::cvt_t_rows(ctx, dy, d.dyt, d.dy16, ntok, m, gs, m, t32));
  rec.add(gemm(ctx, d.dyt, xt_staged ? *xt_staged : d.xt, GemmB::plane, d.w32,
               {.m = m, .n = n, .k = t32, .oscale = inv}));
  rec.add(gemm(ctx, d.dy16, d.w_t, GemmB::plane, dx,
               {.m = ntok, .n = n, .k = m, .oscale = inv, .accumulate = accumulate_dx}));
  // dŴ is a sum over the tokens, up to ntok times a token's dy·xᵀ where the
  // tokens agree (about √ntok times where they do not): it is staged at
  // gs / 2^⌈log2(ntok)/2⌉, so that many tokens do not overflow f16 where
  // gs keeps one token's gradients in range
  const float gw = std::ldexp(gs, -((std::bit_width(ntok - 1u) + 1) / 2)), inv_w = 1.0f / gw;
  rec.add(ops::cvt_t_rows(ctx, d.w32, d.dw16_t, d.dw16, m, n, gw, n, m));
  // N = dŴ·V [m][P·r], P = dŴᵀ·U [n][P·r], every path at once
  rec.add(gemm(ctx, d.dw16, d.v_t, GemmB::plane, d.nu, {.m = m, .n = pr, .k = n, .oscale = inv_w}));
  rec.add(gemm(ctx, d.dw16_t, d.u_t, GemmB::plane, d.pv, {.m = n, .n = pr, .k = m, .oscale = inv_w}));
  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    const BlrPath& path = layer.paths[p];
    const bool acc = options.accumulate_sign_grads;
    rec.add(factor_grads(ctx, d, p, path.bits_u, m, path.h, nullptr, d.nu, dest[p].g_u, acc, path.dh, false));
    rec.add(factor_grads(ctx, d, p, path.bits_v, n, path.g, &path.l, d.pv, dest[p].g_v, acc, path.dg, true));
    rec.add(ops::colsum(ctx, d.e, ops::ColTerm::plain(), path.dl, n, r, true));
  }
}

}  // namespace vkblr
