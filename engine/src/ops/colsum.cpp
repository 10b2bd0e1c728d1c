// Column reductions (glsl/colsum_part.comp, colsum_fused.comp,
// colsum_finish.comp).
#include "colsum.h"

#include <algorithm>
#include <limits>

#include "op_util.hpp"
#include "vkblr/ops/colsum.hpp"

namespace vkblr::ops {
namespace {
using detail::ceil_div;
using detail::dim;
using detail::KernelId;
using detail::need_bytes;
using shader::ColsumPush;
static_assert(sizeof(ColsumPush) == 24);

constexpr std::uint32_t kMaxBlocks = 256;
constexpr std::uint32_t kMinBlockRows = VKBLR_COLSUM_T_ROWS;  // also colsum_fused_t's only block size
// Most floats of a reduction's partials: 256 blocks of 32768 columns.
constexpr std::uint64_t kPartialFloats = std::uint64_t{kMaxBlocks} * 32768;
constexpr std::uint32_t kMaxGroups = 65535;  // workgroups along x

// How pass 1 cuts m rows: `count` blocks of `rows` rows, the last shorter.
struct RowBlocks {
  std::uint32_t rows;
  std::uint32_t count;
};

RowBlocks row_blocks(std::uint32_t m) {
  const std::uint32_t rows = std::max(kMinBlockRows, ceil_div(m, kMaxBlocks));
  return {rows, ceil_div(m, rows)};
}

// The kernels index [m][k] with 32-bit integers.
bool indexable(std::uint32_t m, std::uint32_t k) {
  return std::uint64_t{m} * k <= std::numeric_limits<std::uint32_t>::max();
}
bool partials_fit(RowBlocks blocks, std::uint32_t k) { return std::uint64_t{blocks.count} * k <= kPartialFloats; }

// Checks m and k for any column reduction; its row blocks.
RowBlocks checked_blocks(const char* op, std::uint32_t m, std::uint32_t k) {
  dim(op, "m", m);
  dim(op, "k", k);
  detail::elements_fit(op, std::uint64_t{m} * k);
  const RowBlocks blocks = row_blocks(m);
  require(partials_fit(blocks, k),
          "{}: {} row blocks × k = {} columns need {} partial sums; at most {} are allowed", op,
          blocks.count, k, std::uint64_t{blocks.count} * k, kPartialFloats);
  return blocks;
}

// The partial sums [blocks][k] of one reduction: a transient of its Ops.
Transient partials(RowBlocks blocks, std::uint32_t k) { return make_transient(std::uint64_t{blocks.count} * k * 4); }

ColsumPush push(std::uint32_t m, std::uint32_t k, RowBlocks blocks) {
  ColsumPush p{};
  p.m = m;
  p.k = k;
  p.rows_per_block = blocks.rows;
  p.blocks = blocks.count;
  return p;
}

// Pass 2: sum (+)= the partials of `blocks`, in block order.
Dispatch finish_pass(Context& ctx, const Transient& part, const Buffer& sum, std::uint32_t m, std::uint32_t k,
                     RowBlocks blocks, bool accumulate) {
  ColsumPush p = push(m, k, blocks);
  p.accumulate = accumulate ? 1 : 0;
  Dispatch d = detail::make_dispatch(ctx, KernelId::colsum_finish, "colsum_finish");
  d.set_push(p)
      .bind(3, part, Access::read)
      .bind(4, sum, accumulate ? Access::read_write : Access::write);
  d.groups = {ceil_div(k, VKBLR_COLSUM_WG), 1, 1};
  return d;
}

KernelId part_kernel(ColTerm::Kind kind) {
  switch (kind) {
    case ColTerm::Kind::prod: return KernelId::colsum_part_prod;
    case ColTerm::Kind::prod_row: return KernelId::colsum_part_prod_row;
    case ColTerm::Kind::plain: return KernelId::colsum_part_plain;
  }
  fail("colsum: unknown term kind {}", static_cast<int>(kind));
}

KernelId fused_kernel(Fuse::Kind kind, bool transposed) {
  switch (kind) {
    case Fuse::Kind::cvt_a: return transposed ? KernelId::colsum_fused_t_cvt_a : KernelId::colsum_fused_cvt_a;
    case Fuse::Kind::cvt_b: return transposed ? KernelId::colsum_fused_t_cvt_b : KernelId::colsum_fused_cvt_b;
    case Fuse::Kind::scale_b: return transposed ? KernelId::colsum_fused_t_scale_b : KernelId::colsum_fused_scale_b;
  }
  fail("colsum_fused: unknown fused op kind {}", static_cast<int>(kind));
}

// colsum and colsum_prod (errors name `op`).
Ops reduce(Context& ctx, const char* op, const Buffer& a, const ColTerm& term, const Buffer& out, std::uint32_t m,
           std::uint32_t k, bool accumulate) {
  const RowBlocks blocks = checked_blocks(op, m, k);
  const std::uint64_t elements = std::uint64_t{m} * k;
  need_bytes(op, "a", a, elements * 4);
  need_bytes(op, "out", out, std::uint64_t{k} * 4);
  const Transient part = partials(blocks, k);
  Dispatch pass1 = detail::make_dispatch(ctx, part_kernel(term.kind), "colsum_part");
  pass1.set_push(push(m, k, blocks)).bind(0, a, Access::read);
  if (term.kind != ColTerm::Kind::plain) {
    require(term.b != nullptr, "{}: the product term has a null b buffer", op);
    need_bytes(op, "b", *term.b, elements * 4);
    pass1.bind(1, *term.b, Access::read);
  }
  if (term.kind == ColTerm::Kind::prod_row) {
    require(term.row_factor != nullptr, "{}: the prod_row term has a null row_factor buffer", op);
    need_bytes(op, "row_factor", *term.row_factor, std::uint64_t{m} * 4);
    pass1.bind(2, *term.row_factor, Access::read);
  }
  pass1.bind(3, part, Access::write);
  pass1.groups = {ceil_div(k, VKBLR_COLSUM_WG), blocks.count, 1};
  return {pass1, finish_pass(ctx, part, out, m, k, blocks, accumulate)};
}

// colsum_fused (dst_t null) and colsum_fused_t: pass 1 with the fused op,
// then pass 2 accumulating into sum.
Ops fused(Context& ctx, const char* op, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t m,
          std::uint32_t k, const Fuse& fuse, const Buffer* dst_t) {
  const RowBlocks blocks = checked_blocks(op, m, k);
  const std::uint64_t elements = std::uint64_t{m} * k;
  if (dst_t) {
    require(m % 32 == 0, "{}: m = {} is not a multiple of 32", op, m);
    require(blocks.rows == VKBLR_COLSUM_T_ROWS, "{}: m = {} exceeds {} (row blocks of exactly {} rows, at most {})", op,
            m, kMaxBlocks * VKBLR_COLSUM_T_ROWS, VKBLR_COLSUM_T_ROWS, kMaxBlocks);
    require(ceil_div(k, VKBLR_COLSUM_T_WG) <= kMaxGroups, "{}: k = {} needs more than {} workgroups", op, k,
            kMaxGroups);
    need_bytes(op, "dst_t", *dst_t, elements * 2);
  }
  need_bytes(op, "a", a, elements * 4);
  need_bytes(op, "b", b, elements * 4);
  need_bytes(op, "sum", sum, std::uint64_t{k} * 4);
  require(fuse.col && fuse.dst, "{}: the fused op has a null col or dst buffer", op);
  need_bytes(op, "col", *fuse.col, std::uint64_t{k} * 4);
  const bool scales = fuse.kind == Fuse::Kind::scale_b;
  need_bytes(op, "dst", *fuse.dst, elements * (scales ? 4 : 2));

  const Transient part = partials(blocks, k);
  ColsumPush p = push(m, k, blocks);
  p.accumulate = scales && fuse.accumulate ? 1 : 0;
  p.scale = fuse.scale;
  Dispatch pass1 = detail::make_dispatch(ctx, fused_kernel(fuse.kind, dst_t != nullptr), op);
  pass1.set_push(p)
      .bind(0, a, Access::read)
      .bind(1, b, Access::read)
      .bind(2, *fuse.col, Access::read)
      .bind(3, part, Access::write);
  if (scales) {
    pass1.bind(6, *fuse.dst, fuse.accumulate ? Access::read_write : Access::write);
  } else {
    pass1.bind(5, *fuse.dst, Access::write);
  }
  if (dst_t) pass1.bind(7, *dst_t, Access::write);
  pass1.groups = {ceil_div(k, dst_t ? VKBLR_COLSUM_T_WG : VKBLR_COLSUM_WG), blocks.count, 1};
  return {pass1, finish_pass(ctx, part, sum, m, k, blocks, true)};
}

}  // namespace

bool colsum_fits(std::uint32_t m, std::uint32_t k) noexcept {
  return m > 0 && k > 0 && indexable(m, k) && partials_fit(row_blocks(m), k);
}

bool colsum_fused_t_fits(std::uint32_t m, std::uint32_t k) noexcept {
  return colsum_fits(m, k) && m % 32 == 0 && row_blocks(m).rows == VKBLR_COLSUM_T_ROWS &&
         ceil_div(k, VKBLR_COLSUM_T_WG) <= kMaxGroups;
}

Ops colsum(Context& ctx, const Buffer& a, const ColTerm& term, const Buffer& out, std::uint32_t m, std::uint32_t k,
           bool accumulate) {
  return reduce(ctx, "colsum", a, term, out, m, k, accumulate);
}

Ops colsum_prod(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, std::uint32_t m, std::uint32_t k) {
  return reduce(ctx, "colsum_prod", a, ColTerm::prod(b), out, m, k, true);
}

Ops colsum_fused(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t m, std::uint32_t k,
                 const Fuse& fuse) {
  return fused(ctx, "colsum_fused", a, b, sum, m, k, fuse, nullptr);
}

Ops colsum_fused_t(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t m,
                   std::uint32_t k, const Fuse& fuse, const Buffer& dst_t) {
  return fused(ctx, "colsum_fused_t", a, b, sum, m, k, fuse, &dst_t);
}

}  // namespace vkblr::ops
