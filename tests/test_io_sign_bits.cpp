// Packing of sign matrices into blr bitmaps: every bit position lands in
// its word and bit (published 1-bit tools shipped unpackers with shifted
// bits), random matrices round-trip, sign(0) = +1, and the layout is the
// one the engine's tests (and kernels) use.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <limits>

#include "support/gemm_ref.hpp"
#include "support/host.hpp"
#include "vkblr/io/sign_bits.hpp"

using namespace vkblr::io;

TEST_CASE("sign bits: every bit position packs to its word and bit", "[fit]") {
  constexpr std::size_t rows = 3, cols = 128, words = cols / 32;
  for (std::size_t col = 0; col < cols; ++col) {
    INFO("column " << col);
    std::vector<float> s(rows * cols, -1.0f);
    s[1 * cols + col] = 1.0f;
    const auto bits = pack_signs(std::span<const float>(s), rows, cols);
    REQUIRE(bits.size() == rows * words);
    for (std::size_t w = 0; w < bits.size(); ++w) {
      const std::uint32_t want = w == 1 * words + col / 32 ? 1u << (col % 32) : 0u;
      REQUIRE(bits[w] == want);
    }
    REQUIRE(unpack_signs(bits, rows, cols) == s);
  }
}

TEST_CASE("sign bits: named positions 0, 31, 32, 63, 64, 95", "[fit]") {
  std::vector<double> s(96, -1.0);
  for (const std::size_t c : {0u, 31u, 32u, 63u, 64u, 95u}) s[c] = 1.0;
  const auto bits = pack_signs(std::span<const double>(s), 1, 96);
  CHECK(bits == std::vector<std::uint32_t>{0x80000001u, 0x80000001u, 0x80000001u});
  for (std::size_t c = 0; c < 96; ++c) CHECK(sign_at(bits, 96, 0, c) == static_cast<float>(s[c]));
}

TEST_CASE("sign bits: random matrices round-trip, padding stays zero", "[fit]") {
  for (const std::size_t cols : {32u, 64u, 96u, 100u, 7u}) {
    INFO("cols " << cols);
    const std::size_t rows = 37;
    const auto s = vkt::random_signs(rows, cols, 1000 + cols);
    const auto bits = pack_signs(std::span<const float>(s), rows, cols);
    REQUIRE(bits.size() == rows * sign_words_per_row(cols));
    CHECK(unpack_signs(bits, rows, cols) == s);
    if (cols % 32 != 0) {
      const std::uint32_t padding = ~0u << (cols % 32);
      for (std::size_t r = 0; r < rows; ++r) CHECK((bits[r * sign_words_per_row(cols) + cols / 32] & padding) == 0);
    }
  }
}

TEST_CASE("sign bits: sign(0) = +1; the layout is the engine tests' layout", "[fit]") {
  const std::vector<float> v = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -1e-30f, 2.0f, -3.0f,
                                std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()};
  const auto bits = pack_signs(std::span<const float>(v), 1, v.size());
  CHECK(unpack_signs(bits, 1, v.size()) == std::vector<float>{1, 1, 1, -1, 1, -1, 1, -1});

  const auto s = vkt::random_signs(64, 96, 77);
  CHECK(pack_signs(std::span<const float>(s), 64, 96) == vkt::pack_signs(s, 64, 96));
}

TEST_CASE("sign bits: sizes that do not match are refused", "[fit]") {
  const std::vector<float> v(10, 1.0f);
  CHECK_THROWS_AS(pack_signs(std::span<const float>(v), 3, 4), vkblr::Error);
  const std::vector<std::uint32_t> bits(3);
  CHECK_THROWS_AS(unpack_signs(bits, 2, 32), vkblr::Error);
}
