// vkblr/io/sign_bits.hpp — packing ±1 sign matrices into the bitmaps of a blr layer.
//
// Layout (vkblr/blr.hpp): a rows×cols sign matrix is u32 [rows][words],
// words = ceil(cols/32); bit j of word w of a row is column 32w + j, set for
// +1. Padding bits past `cols` are zero. sign(0) = +1: a value packs to 1
// unless it is < 0 (so +0, -0 and NaN give +1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "vkblr/error.hpp"

namespace vkblr::io {

constexpr std::size_t sign_words_per_row(std::size_t cols) { return (cols + 31) / 32; }

// values [rows][cols] (any real type) -> bitmap [rows][words].
template <class T>
std::vector<std::uint32_t> pack_signs(std::span<const T> values, std::size_t rows, std::size_t cols) {
  require(values.size() == rows * cols, "pack_signs: {} values for a {}×{} matrix", values.size(), rows, cols);
  const std::size_t words = sign_words_per_row(cols);
  std::vector<std::uint32_t> bits(rows * words, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      if (!(values[i * cols + j] < T{0})) bits[i * words + j / 32] |= 1u << (j % 32);
    }
  }
  return bits;
}

// The sign of element (row, col): +1 or -1.
inline float sign_at(std::span<const std::uint32_t> bits, std::size_t cols, std::size_t row, std::size_t col) {
  const std::uint32_t word = bits[row * sign_words_per_row(cols) + col / 32];
  return (word >> (col % 32)) & 1u ? 1.0f : -1.0f;
}

// bitmap [rows][words] -> ±1 values [rows][cols].
inline std::vector<float> unpack_signs(std::span<const std::uint32_t> bits, std::size_t rows, std::size_t cols) {
  require(bits.size() == rows * sign_words_per_row(cols), "unpack_signs: {} words for a {}×{} sign matrix",
          bits.size(), rows, cols);
  std::vector<float> values(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) values[i * cols + j] = sign_at(bits, cols, i, j);
  }
  return values;
}

}  // namespace vkblr::io
