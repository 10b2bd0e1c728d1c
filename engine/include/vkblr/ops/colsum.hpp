// vkblr/ops/colsum.hpp — deterministic column reductions of f32 [m][k]
// matrices, plain or fused with the elementwise op that reads the same
// operand (glsl/colsum_part.comp, colsum_fused.comp, colsum_finish.comp).
//
// Every reduction is two dispatches (Ops). Pass 1 sums each column over
// blocks of rows_per_block = max(64, ceil(m / 256)) rows into partials
// [blocks][k], blocks = ceil(m / rows_per_block) <= 256; pass 2 adds a
// column's partials in block order. Each term is rounded before it is added
// (no fused multiply-add) and nothing is atomic, so a reduction gives the
// same bits every run, and a fused form gives exactly the bits of its
// unfused pair.
//
// The partials are a transient of the reduction's Ops (vkblr/dispatch.hpp):
// the Recorder provides blocks × k floats while it records them, and
// reductions recorded side by side (Recorder::parallel) get their own.
// blocks × k is at most 256 × 32768 (32 MiB; colsum_fits).
//
// Choosing a form: the seed's fallback chain colsum_fused_t -> colsum_fused
// -> colsum_prod + the separate op. A predicate says whether a form takes a
// shape; its builders throw vkblr::Error for a shape it refuses.
//
//   colsum_fused_t_fits(m, k)  colsum_fused_t: the operand read once, its
//                              transposed f16 copy written in the same pass
//   colsum_fits(m, k)          colsum_fused + cvt_t: the same bits, the
//                              transposed copy staged on its own; or
//                              colsum_prod + cvt_col / scale_acc: the same
//                              bits again, unfused
//
// colsum_fused takes every shape colsum_prod takes, so the middle level
// never has to fall through to the last one (take the unfused pair only to
// turn fusion off). The seed refused its fused forms unless m was its padded
// row count, a multiple of 128, because its staged operands carried padding
// rows; vkblr's GEMM reads any number of rows, so the staged operand is
// exactly [m][k]. What remains of that constraint: the fused staging writes
// rows 0..m-1 and nothing past them, so an operand that must carry zero
// padding rows (cvt_col with rows > m) needs the separate op.
//
// Outputs must not alias inputs.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// What colsum sums per row, for each column c.
struct ColTerm {
  enum class Kind : std::uint8_t {
    prod,      // a[row][c]·b[row][c]
    prod_row,  // a[row][c]·b[row][c]·row_factor[row]
    plain,     // a[row][c]
  };
  Kind kind = Kind::plain;
  const Buffer* b = nullptr;           // prod, prod_row: f32 [m][k]
  const Buffer* row_factor = nullptr;  // prod_row: f32 [m]

  static ColTerm prod(const Buffer& b) { return {Kind::prod, &b, nullptr}; }
  static ColTerm prod_row(const Buffer& b, const Buffer& row_factor) { return {Kind::prod_row, &b, &row_factor}; }
  static ColTerm plain() { return {}; }
};

// The elementwise op colsum_fused does on an operand of a·b while it reads
// it, with the arithmetic of the separate op (bit for bit).
struct Fuse {
  enum class Kind : std::uint8_t {
    cvt_a,    // dst f16 [m][k] = f16((a·col[c])·scale)    (cvt_col of a)
    cvt_b,    // dst f16 [m][k] = f16((b·col[c])·scale)    (cvt_col of b)
    scale_b,  // dst f32 [m][k] (+)= b·col[c]              (scale_acc of b)
  };
  Kind kind = Kind::cvt_a;
  const Buffer* col = nullptr;  // f32 [k]
  const Buffer* dst = nullptr;
  // cvt_a, cvt_b: the staging scale. scale_b: the scale of the value
  // colsum_fused_t transposes, f16((a·col[c])·scale) (colsum_fused ignores it).
  float scale = 1.0f;
  bool accumulate = false;  // scale_b: dst += b·col instead of dst = b·col

  static Fuse cvt_a(const Buffer& col, const Buffer& dst, float scale) {
    return {Kind::cvt_a, &col, &dst, scale, false};
  }
  static Fuse cvt_b(const Buffer& col, const Buffer& dst, float scale) {
    return {Kind::cvt_b, &col, &dst, scale, false};
  }
  static Fuse scale_b(const Buffer& col, const Buffer& dst, bool accumulate, float transposed_scale = 1.0f) {
    return {Kind::scale_b, &col, &dst, transposed_scale, accumulate};
  }
};

// Whether colsum, colsum_prod and colsum_fused take m rows of k columns:
// m, k > 0, m·k < 2^32 and the partials (blocks × k) within 256 × 32768.
bool colsum_fits(std::uint32_t m, std::uint32_t k) noexcept;
// Whether colsum_fused_t takes the shape: colsum_fits, row blocks of exactly
// 64 rows (m <= 16384), m a multiple of 32, and k <= 65535 · 128.
bool colsum_fused_t_fits(std::uint32_t m, std::uint32_t k) noexcept;

// out f32 [k] (+)= Σ_row term(a f32 [m][k], ...) per column (accumulate:
// add to out, else overwrite it).
Ops colsum(Context& ctx, const Buffer& a, const ColTerm& term, const Buffer& out, std::uint32_t m, std::uint32_t k,
           bool accumulate);
// out f32 [k] += Σ_row a[row][c]·b[row][c]: colsum(prod, accumulating).
Ops colsum_prod(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, std::uint32_t m, std::uint32_t k);
// sum f32 [k] += Σ_row a·b (a, b f32 [m][k]), with `fuse` done on the
// operand it names in the same pass: the bits of colsum_prod followed by the
// separate op.
Ops colsum_fused(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t m, std::uint32_t k,
                 const Fuse& fuse);
// colsum_fused that also writes dst_t f16 [k][m], the transposed f16 operand
// of the sign-gradient GEMM: for cvt_a / cvt_b the staged dst values, for
// scale_b f16((a·col[c])·fuse.scale). Bit for bit the first k rows of
// cvt_t(src, col, scale, k_rows, tok_rows = m) of the same operand (cvt_t's
// zero rows past k are not written).
Ops colsum_fused_t(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t m,
                   std::uint32_t k, const Fuse& fuse, const Buffer& dst_t);

}  // namespace vkblr::ops
