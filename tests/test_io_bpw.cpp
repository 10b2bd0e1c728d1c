// Bits per weight: the formula's terms, the rank for a target bpw (the
// largest multiple of 32 that fits, checked against a brute-force search),
// and clear refusals of impossible targets and shapes.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/fit_files.hpp"
#include "vkblr/io/bpw.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinRel;

TEST_CASE("bpw: the formula's terms", "[fit]") {
  const BitsPerWeight b = bits_per_weight({3584, 1024, 384, 2}, ScaleDtype::f16);
  CHECK(b.sign_bits == 2ull * 384 * (3584 + 1024));
  CHECK(b.scale_bits == 16ull * 2 * (3584 + 1024 + 384));
  CHECK(b.metadata_bits == kLayerMetadataBits);
  CHECK(b.weights == 3584ull * 1024);
  CHECK_THAT(b.sign_bpw, WithinRel(3538944.0 / 3670016.0, 1e-15));
  CHECK_THAT(b.scale_bpw, WithinRel(159744.0 / 3670016.0, 1e-15));
  CHECK_THAT(b.total, WithinRel((3538944.0 + 159744.0 + 128.0) / 3670016.0, 1e-15));
  CHECK_THAT(b.formula(), ContainsSubstring("P·r·(m+n) = 2·384·(3584+1024) = 3538944 sign bits") &&
                              ContainsSubstring("16·P·(m+n+r) = 16·2·(3584+1024+384) = 159744 scale bits (F16)") &&
                              ContainsSubstring("128 metadata bits") && ContainsSubstring("(m·n = 3670016)") &&
                              ContainsSubstring("= 1.0078"));
  const BitsPerWeight f32 = bits_per_weight({3584, 1024, 384, 2}, ScaleDtype::f32, 0);
  CHECK(f32.scale_bits == 2 * b.scale_bits);
  CHECK(f32.metadata_bits == 0);
}

TEST_CASE("bpw: the rank for a target is the largest multiple of 32 that fits", "[fit]") {
  const auto brute_force = [](std::uint32_t m, std::uint32_t n, std::uint32_t paths, ScaleDtype s, double target) {
    std::uint32_t best = 0;
    for (std::uint32_t r = 32; r <= max_useful_rank(m, n); r += 32) {
      if (bits_per_weight({m, n, r, paths}, s).total <= target) best = r;
    }
    return best;
  };
  for (const auto& [m, n] : {std::pair{3584u, 1024u}, std::pair{4096u, 4096u}, std::pair{256u, 160u}}) {
    for (const std::uint32_t paths : {1u, 2u, 4u}) {
      for (const double target : {0.55, 1.0, 1.58, 2.0}) {
        INFO(m << "×" << n << " P=" << paths << " target " << target);
        const std::uint32_t want = brute_force(m, n, paths, ScaleDtype::f16, target);
        if (want == 0 || want == max_useful_rank(m, n)) continue;  // refused or at the cap: below
        CHECK(rank_for_bpw(m, n, paths, ScaleDtype::f16, target) == want);
      }
    }
  }
  // A target exactly at a rank's bpw buys that rank.
  const double exact = bits_per_weight({3584, 1024, 384, 2}, ScaleDtype::f16).total;
  CHECK(rank_for_bpw(3584, 1024, 2, ScaleDtype::f16, exact) == 384);
  CHECK(rank_for_bpw(3584, 1024, 2, ScaleDtype::f16, std::nextafter(exact, 0.0)) == 352);
  // Up to the largest useful rank.
  const double full = bits_per_weight({256, 160, 160, 1}, ScaleDtype::f16).total;
  CHECK(rank_for_bpw(256, 160, 1, ScaleDtype::f16, full) == 160);
}

TEST_CASE("bpw: impossible targets and shapes are refused", "[fit]") {
  CHECK_THAT(vkt::error_of([] { rank_for_bpw(3584, 1024, 2, ScaleDtype::f16, 0.01); }),
             ContainsSubstring("--bpw 0.01: too low") && ContainsSubstring("rank 32, the smallest, takes 0.1208 bpw"));
  CHECK_THAT(vkt::error_of([] { rank_for_bpw(256, 160, 1, ScaleDtype::f16, 16.0); }),
             ContainsSubstring("--bpw 16: too high") && ContainsSubstring("rank 160"));
  CHECK_THAT(vkt::error_of([] { rank_for_bpw(256, 160, 1, ScaleDtype::f16, -1.0); }),
             ContainsSubstring("positive number"));
  CHECK_THAT(vkt::error_of([] { rank_for_bpw(256, 160, 1, ScaleDtype::f16, std::nan("")); }),
             ContainsSubstring("positive number"));
  CHECK_THAT(vkt::error_of([] { rank_for_bpw(256, 160, 0, ScaleDtype::f16, 1.0); }), ContainsSubstring("path"));
  CHECK_THAT(vkt::error_of([] { bits_per_weight({256, 160, 48, 1}, ScaleDtype::f16); }),
             ContainsSubstring("rank 48 is not a positive multiple of 32"));
  CHECK_THAT(vkt::error_of([] { bits_per_weight({256, 160, 192, 1}, ScaleDtype::f16); }),
             ContainsSubstring("rank 192 exceeds") && ContainsSubstring("(160 = min(m, n)"));
  CHECK_THAT(vkt::error_of([] { bits_per_weight({0, 160, 32, 1}, ScaleDtype::f16); }), ContainsSubstring("empty"));
}
