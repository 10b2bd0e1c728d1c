// refit_checks.hpp — the argument checks and grids the GPU refit's op
// builders share (refit.cpp, refit_cg.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "op_util.hpp"
#include "refit.h"
#include "vkblr/ops/refit.hpp"

namespace vkblr::ops::refit_detail {

static_assert(sizeof(shader::RefitPush) == 16);

// Checks rows and r (a multiple of 32, (row0 + rows)·r within 32-bit
// indexing); the push constants of rows [row0, row0 + rows).
inline shader::RefitPush refit_push(const char* op, std::uint32_t row0, std::uint32_t rows, std::uint32_t r) {
  detail::dim(op, "rows", rows);
  detail::dim(op, "r", r);
  require(r % 32 == 0, "{}: r = {} is not a multiple of 32", op, r);
  detail::elements_fit(op, (std::uint64_t{row0} + rows) * r);
  shader::RefitPush p{};
  p.row0 = row0;
  p.rows = rows;
  p.r = r;
  p.words = r / 32;
  return p;
}

// refit_push of a block, which must lie inside its bitmap.
inline shader::RefitPush block_push(const char* op, const RefitBlock& block, std::uint32_t r) {
  require(std::uint64_t{block.row0} + block.rows <= block.n, "{}: rows {}..{} of a bitmap of {}", op, block.row0,
          std::uint64_t{block.row0} + block.rows, block.n);
  return refit_push(op, block.row0, block.rows, r);
}

// One workgroup per row, folded into y past 65535 workgroups.
inline std::array<std::uint32_t, 3> row_grid(std::uint32_t rows) {
  if (rows <= detail::kFoldWidth) return {rows, 1, 1};
  return {detail::kFoldWidth, detail::ceil_div(rows, detail::kFoldWidth), 1};
}

// A row kernel keeps `bytes` of shared memory per workgroup for rank r.
inline void shared_fits(Context& ctx, const char* op, std::uint32_t r, std::uint64_t bytes) {
  require(bytes <= ctx.caps().max_shared_memory,
          "{}: rank {} needs {} bytes of shared memory per workgroup; the device has {}", op, r, bytes,
          ctx.caps().max_shared_memory);
}

struct Named {
  const char* name;
  const Buffer& buffer;
};

// Every output is a buffer of its own: neither another output nor an input.
inline void outputs_apart(const char* op, std::initializer_list<Named> outputs, std::initializer_list<Named> inputs) {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (auto other = out + 1; other != outputs.end(); ++other) {
      require(out->buffer.id() != other->buffer.id(), "{}: {} and {} are the same buffer", op, out->name, other->name);
    }
    for (const Named& in : inputs) {
      require(out->buffer.id() != in.buffer.id(), "{}: {} and {} are the same buffer", op, out->name, in.name);
    }
  }
}

}  // namespace vkblr::ops::refit_detail
