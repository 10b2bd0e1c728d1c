#include "vkblr-fit/io/f16_rows.hpp"

#include <algorithm>
#include <numeric>

#include "vkblr/error.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr::fit {

std::uint64_t f16_chunk_rows(const Context& ctx, std::uint64_t cols, std::uint64_t wanted, std::uint64_t rows) {
  require(cols > 0, "f16 rows: chunks of rows of 0 columns");
  const std::uint64_t align = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  const std::uint64_t step = align / std::gcd(cols * 2, align);
  const std::uint64_t chunk = (std::max<std::uint64_t>(wanted, 1) + step - 1) / step * step;
  return std::min(chunk, std::max<std::uint64_t>(rows, 1));
}

Dispatch narrow_rows(Context& ctx, const Buffer& src, const Buffer& dst, std::uint64_t first, std::uint32_t count,
                     std::uint32_t cols) {
  require(cols > 0, "f16 rows: rows of 0 columns");
  const std::uint64_t row_bytes = std::uint64_t{cols} * 2;
  require(first <= dst.size() / row_bytes && count <= dst.size() / row_bytes - first,
          "f16 rows: rows [{}, {}) of {} columns are past the destination's {} bytes", first, first + count, cols,
          dst.size());
  return ops::cvt(ctx, src, dst.view(first * row_bytes, count * row_bytes), count, cols, 1.0f);
}

}  // namespace vkblr::fit
