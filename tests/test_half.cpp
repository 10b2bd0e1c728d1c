// Host f16/bf16 conversions: every half round-trips; rounding is to nearest
// even at normal, subnormal and overflow boundaries.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <limits>

#include "vkblr/half.hpp"

using namespace vkblr;

TEST_CASE("f16 round-trips every bit pattern", "[half]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = f16_to_f32(bits);
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    INFO("h = " << h);
    REQUIRE(f32_to_f16(f) == bits);
  }
}

TEST_CASE("f16 rounds to nearest even", "[half]") {
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // tie to even: infinity
  CHECK(f32_to_f16(1e9f) == 0x7c00);
  CHECK(f32_to_f16(-1e9f) == 0xfc00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);   // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);   // tie to even: zero
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);   // 1.5 ulps: tie to even 2
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie: even mantissa
  CHECK(f32_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);
  CHECK(f32_to_f16(std::ldexp(1.0f, -14) * (1.0f - std::ldexp(1.0f, -12))) == 0x0400);  // rounds up to normal
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
}

TEST_CASE("bf16 rounds to nearest even", "[half]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie: even
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie: even (up)
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}
