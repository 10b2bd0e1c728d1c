// bench_args.hpp — vkblr-bench's command-line values, parsed strictly:
// decimal digits only (no sign, no spaces, no other base), each number
// within 32 bits, and each size within what its op accepts. A bad value
// throws std::invalid_argument naming the text and the broken rule (main
// turns it into a usage error, exit status 2) before any device work.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

namespace bench {

// The unsigned numbers of `text` separated by `sep`: from `min_count` to
// `max_count` of them. `form` names the expected form in messages
// ("MxNxK").
std::vector<std::uint32_t> parse_numbers(std::string_view text, char sep, std::size_t min_count,
                                         std::size_t max_count, std::string_view form);

// A GEMM shape m×n×k.
using GemmSize = std::array<std::uint32_t, 3>;

// "MxNxK" with the GEMM's rules (vkblr/gemm.hpp): m >= 1, n and k positive
// multiples of 16.
GemmSize parse_gemm_shape(std::string_view text);

// Throws std::invalid_argument unless `mode` is one of vkblr-bench's GEMM
// modes (plane, bits_n, bits_t, plain) and `shape` meets its extra rule:
// bits_n reads k/32 words per row (k a multiple of 32), bits_t n/32 (n a
// multiple of 32).
void check_gemm_mode(const GemmSize& shape, std::string_view mode);

// vkblr::parse_gemm_tile, its error as std::invalid_argument (CLI11's).
// Whether the device can run the tile is vkblr::check_gemm_tile's to say,
// for each case.
vkblr::GemmTile parse_gemm_tile(std::string_view text);

// "MxNxK" for the f32 GEMM (vkblr/ops/gemm_f32.hpp): every size >= 1.
GemmSize parse_gemm_f32_shape(std::string_view text);

// vkblr::parse_gemm_f32_tile likewise; whether the device can run the tile
// is vkblr::ops::check_gemm_f32_tile's to say, for each case.
vkblr::ops::GemmF32Tile parse_gemm_f32_tile(std::string_view text);

}  // namespace bench
