// Staging ops (glsl/cvt.comp, cvt_multi.comp, cvt_t.comp).
#include "cvt.h"

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::CvtPush;
static_assert(sizeof(CvtPush) == 32);

// Elements per pass of cvt.comp (four passes, one element each).
std::uint32_t quarter_of(std::uint32_t rows, std::uint32_t k) {
  return static_cast<std::uint32_t>((std::uint64_t{rows} * k + 3) / 4);
}

CvtPush staging_push(const char* op, std::uint32_t m, std::uint32_t k, float scale, std::uint32_t& rows) {
  dim(op, "m", m);
  dim(op, "k", k);
  if (rows == 0) rows = m;
  require(rows >= m, "{}: rows = {} < m = {}", op, rows, m);
  detail::elements_fit(op, std::uint64_t{rows} * k);
  CvtPush p{};
  p.m = m;
  p.k = k;
  p.rows = rows;
  p.scale = scale;
  return p;
}

// cvt into a buffer or a transient.
template <class Dst>
Dispatch cvt_into(Context& ctx, const Buffer& src, const Dst& dst, std::uint32_t m, std::uint32_t k, float scale,
                  std::uint32_t rows) {
  CvtPush p = staging_push("cvt", m, k, scale, rows);
  need_bytes("cvt", "src", src, std::uint64_t{m} * k * 4);
  need_bytes("cvt", "dst", dst, std::uint64_t{rows} * k * 2);
  p.quarter = quarter_of(rows, k);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::cvt, "cvt");
  d.set_push(p).bind(0, src, Access::read).bind(2, dst, Access::write);
  d.groups = detail::elt_grid(p.quarter, "cvt");
  return d;
}

}  // namespace

Dispatch cvt(Context& ctx, const Buffer& src, const Buffer& dst, std::uint32_t m, std::uint32_t k, float scale,
             std::uint32_t rows) {
  return cvt_into(ctx, src, dst, m, k, scale, rows);
}

Dispatch cvt(Context& ctx, const Buffer& src, const Transient& dst, std::uint32_t m, std::uint32_t k, float scale,
             std::uint32_t rows) {
  return cvt_into(ctx, src, dst, m, k, scale, rows);
}

Dispatch cvt_col(Context& ctx, const Buffer& src, const Buffer& col, const Buffer& dst, std::uint32_t m,
                 std::uint32_t k, float scale, std::uint32_t rows) {
  CvtPush p = staging_push("cvt_col", m, k, scale, rows);
  need_bytes("cvt_col", "src", src, std::uint64_t{m} * k * 4);
  need_bytes("cvt_col", "col", col, std::uint64_t{k} * 4);
  need_bytes("cvt_col", "dst", dst, std::uint64_t{rows} * k * 2);
  p.quarter = quarter_of(rows, k);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::cvt_col, "cvt_col");
  d.set_push(p).bind(0, src, Access::read).bind(1, col, Access::read).bind(2, dst, Access::write);
  d.groups = detail::elt_grid(p.quarter, "cvt_col");
  return d;
}

Dispatch cvt_cols(Context& ctx, const Buffer& src, const Buffer& dst, std::uint32_t m, std::uint32_t k,
                  std::uint32_t stride, std::uint32_t col0, float scale, std::uint32_t rows) {
  CvtPush p = staging_push("cvt_cols", m, k, scale, rows);
  require(std::uint64_t{col0} + k <= stride, "cvt_cols: columns {}..{} past the row stride {}", col0,
          std::uint64_t{col0} + k, stride);
  detail::elements_fit("cvt_cols", std::uint64_t{m} * stride);
  need_bytes("cvt_cols", "src", src, std::uint64_t{m} * stride * 4);
  need_bytes("cvt_cols", "dst", dst, std::uint64_t{rows} * k * 2);
  p.stride = stride;
  p.col0 = col0;
  p.quarter = quarter_of(rows, k);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::cvt_cols, "cvt_cols");
  d.set_push(p).bind(0, src, Access::read).bind(2, dst, Access::write);
  d.groups = detail::elt_grid(p.quarter, "cvt_cols");
  return d;
}

Dispatch cvt_multi(Context& ctx, const Buffer& src, std::span<const Buffer* const> cols,
                   std::span<const Buffer* const> dsts, std::uint32_t m, std::uint32_t k, float scale,
                   std::uint32_t rows) {
  CvtPush p = staging_push("cvt_multi", m, k, scale, rows);
  require(!cols.empty() && cols.size() <= 4, "cvt_multi: {} outputs (1 to 4)", cols.size());
  require(dsts.size() == cols.size(), "cvt_multi: {} column factors for {} outputs", cols.size(), dsts.size());
  need_bytes("cvt_multi", "src", src, std::uint64_t{m} * k * 4);
  p.outputs = static_cast<std::uint32_t>(cols.size());
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::cvt_multi, "cvt_multi");
  d.set_push(p).bind(0, src, Access::read);
  for (std::uint32_t j = 0; j < cols.size(); ++j) {
    require(cols[j] && dsts[j], "cvt_multi: output {} has a null buffer", j);
    need_bytes("cvt_multi", "col", *cols[j], std::uint64_t{k} * 4);
    need_bytes("cvt_multi", "dst", *dsts[j], std::uint64_t{rows} * k * 2);
    for (std::uint32_t i = 0; i < j; ++i) {
      require(dsts[i]->id() != dsts[j]->id(), "cvt_multi: outputs {} and {} are the same buffer", i, j);
    }
    d.bind(1 + j, *cols[j], Access::read).bind(5 + j, *dsts[j], Access::write);
  }
  d.groups = detail::elt_grid(std::uint64_t{rows} * k, "cvt_multi");
  return d;
}

namespace {
// cvt_t, and with `rows` cvt_t_rows.
Dispatch transposed(const char* op, Context& ctx, const Buffer& src, const Buffer* col, const Buffer& dst,
                    const Buffer* rows, std::uint32_t m, std::uint32_t k, float scale, std::uint32_t k_rows,
                    std::uint32_t tok_rows) {
  dim(op, "m", m);
  dim(op, "k", k);
  if (k_rows == 0) k_rows = detail::round32(k);
  if (tok_rows == 0) tok_rows = detail::round32(m);
  require(k_rows >= k && k_rows % 32 == 0, "{}: k_rows = {} must be a multiple of 32 and >= k = {}", op, k_rows, k);
  require(tok_rows >= m && tok_rows % 32 == 0, "{}: tok_rows = {} must be a multiple of 32 and >= m = {}", op,
          tok_rows, m);
  detail::elements_fit(op, std::uint64_t{k_rows} * tok_rows);
  need_bytes(op, "src", src, std::uint64_t{m} * k * 4);
  need_bytes(op, "dst", dst, std::uint64_t{k_rows} * tok_rows * 2);
  CvtPush p{};
  p.m = m;
  p.k = k;
  p.rows = tok_rows;
  p.outputs = k_rows;
  p.scale = scale;
  const detail::KernelId id = rows ? detail::KernelId::cvt_t_rows
                              : col ? detail::KernelId::cvt_t_col
                                    : detail::KernelId::cvt_t;
  Dispatch d = detail::make_dispatch(ctx, id, "cvt_t");
  d.set_push(p).bind(0, src, Access::read).bind(2, dst, Access::write);
  if (col) {
    need_bytes(op, "col", *col, std::uint64_t{k} * 4);
    d.bind(1, *col, Access::read);
  }
  if (rows) {
    need_bytes(op, "rows", *rows, std::uint64_t{m} * k * 2);
    detail::require_apart(op, "rows", *rows, std::uint64_t{m} * k * 2, "dst", dst,
                          std::uint64_t{k_rows} * tok_rows * 2);
    d.bind(3, *rows, Access::write);
  }
  d.groups = {tok_rows / 32, k_rows / 32, 1};
  return d;
}
}  // namespace

Dispatch cvt_t(Context& ctx, const Buffer& src, const Buffer* col, const Buffer& dst, std::uint32_t m, std::uint32_t k,
               float scale, std::uint32_t k_rows, std::uint32_t tok_rows) {
  return transposed("cvt_t", ctx, src, col, dst, nullptr, m, k, scale, k_rows, tok_rows);
}

Dispatch cvt_t_rows(Context& ctx, const Buffer& src, const Buffer& dst, const Buffer& rows, std::uint32_t m,
                    std::uint32_t k, float scale, std::uint32_t k_rows, std::uint32_t tok_rows) {
  return transposed("cvt_t_rows", ctx, src, nullptr, dst, &rows, m, k, scale, k_rows, tok_rows);
}

}  // namespace vkblr::ops
