// f16_rows.hpp — filling an f16 matrix [rows][cols] (device memory, or host
// memory the device writes) a chunk of rows at a time from f32 rows: the
// one f32 -> f16 narrowing of vkblr-fit's inputs (X from a file, synthetic
// X), and the chunk size that lets each chunk be bound where it lands.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::fit {

// Rows per chunk: `wanted` (at least 1), rounded up to a whole number of
// the fewest rows whose f16 bytes are a multiple of the device's
// storage-buffer alignment, so that every chunk's rows start at an offset
// a view can be bound at (given the matrix starts at one); then at most
// `rows`. Throws vkblr::Error for cols = 0.
std::uint64_t f16_chunk_rows(const Context& ctx, std::uint64_t cols, std::uint64_t wanted, std::uint64_t rows);

// Rows [first, first + count) of dst f16 [..][cols] = src f32 [count][cols]
// (its first count·cols floats), each rounded to nearest even (ops::cvt);
// the rest of dst untouched. first·cols·2 + dst's offset must suit the
// storage-buffer alignment (f16_chunk_rows). Throws vkblr::Error naming
// "f16 rows" for cols = 0 or rows past dst's end, or as ops::cvt.
Dispatch narrow_rows(Context& ctx, const Buffer& src, const Buffer& dst, std::uint64_t first, std::uint32_t count,
                     std::uint32_t cols);

}  // namespace vkblr::fit
