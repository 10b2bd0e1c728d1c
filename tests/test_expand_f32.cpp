// Scaled sign expansion: expand_f32 against the host's exact products bit
// for bit with and without each scale, a row stride and an offset on a
// poisoned plane (nothing outside the block written), bits 0 and 31 of
// every word at their ranks, and the builder's refusals.
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <vector>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

using vkt::random_words;

// (row_scale · s) · col_scale, each product rounded once (f64 holds an f32
// product exactly).
float expected(float h, bool plus, float g) {
  const float signed_h = plus ? h : -h;
  return static_cast<float>(static_cast<double>(signed_h) * g);
}

}  // namespace

GPU_TEST("expand_f32 writes (row_scale·s)·col_scale exactly, with or without scales", "[ops][expand_f32]") {
  const std::uint32_t rows = 67, r = 96, ldp = 101;
  const std::uint64_t offset = 1001;
  const std::size_t floats = offset + std::size_t{rows} * ldp + 9;
  const auto bits = random_words(std::size_t{rows} * (r / 32), 1);
  // random scales: their products need rounding
  const auto h = vkt::random_floats(rows, 2, 3.0f), g = vkt::random_floats(r, 3, 0.01f);
  Buffer dbits = ctx.upload(bits), dh = ctx.upload(h), dg = ctx.upload(g);
  for (const bool with_h : {false, true}) {
    for (const bool with_g : {false, true}) {
      Buffer plane = ctx.buffer(floats * 4);
      plane.fill(vkt::kPoison32);
      Recorder rec(ctx);
      rec.add(ops::expand_f32(ctx, dbits, with_h ? &dh : nullptr, with_g ? &dg : nullptr, plane, rows, r, ldp, offset));
      rec.run();
      const auto got = plane.download<std::uint32_t>(floats);
      std::vector<bool> in_block(floats, false);
      std::size_t wrong = 0, touched = 0;
      for (std::uint32_t i = 0; i < rows; ++i) {
        for (std::uint32_t k = 0; k < r; ++k) {
          const std::size_t at = offset + std::size_t{i} * ldp + k;
          in_block[at] = true;
          const bool plus = (bits[std::size_t{i} * (r / 32) + k / 32] >> (k % 32)) & 1u;
          const float want = expected(with_h ? h[i] : 1.0f, plus, with_g ? g[k] : 1.0f);
          wrong += got[at] != std::bit_cast<std::uint32_t>(want);
        }
      }
      for (std::size_t e = 0; e < floats; ++e) touched += !in_block[e] && got[e] != vkt::kPoison32;
      INFO("row_scale " << with_h << ", col_scale " << with_g);
      CHECK(wrong == 0);
      CHECK(touched == 0);
    }
  }
}

GPU_TEST("expand_f32 puts bits 0, 31, 32 and 63 of a row at their ranks, packed", "[ops][expand_f32]") {
  // row 2p: only bit p set; row 2p + 1: every bit but p
  const std::uint32_t r = 64, positions[] = {0, 31, 32, 63};
  const std::uint32_t rows = 8;
  std::vector<std::uint32_t> bits(rows * 2, 0);
  for (std::uint32_t q = 0; q < 4; ++q) {
    const std::uint32_t p = positions[q];
    bits[(2 * q) * 2 + p / 32] = 1u << (p % 32);
    bits[(2 * q + 1) * 2] = bits[(2 * q + 1) * 2 + 1] = ~0u;
    bits[(2 * q + 1) * 2 + p / 32] &= ~(1u << (p % 32));
  }
  Buffer dbits = ctx.upload(bits), plane = ctx.buffer(rows * r * 4);
  plane.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::expand_f32(ctx, dbits, nullptr, nullptr, plane, rows, r));
  rec.run();
  const auto got = plane.download<float>(rows * r);
  std::size_t wrong = 0;
  for (std::uint32_t q = 0; q < 4; ++q) {
    for (std::uint32_t k = 0; k < r; ++k) {
      const bool at_p = k == positions[q];
      wrong += got[(2 * q) * r + k] != (at_p ? 1.0f : -1.0f);
      wrong += got[(2 * q + 1) * r + k] != (at_p ? -1.0f : 1.0f);
    }
  }
  CHECK(wrong == 0);
}

GPU_TEST("expand_f32 refuses bad shapes and small buffers", "[ops][expand_f32][errors]") {
  Buffer bits = ctx.buffer(4 * 2 * 4), h = ctx.buffer(4 * 4), g = ctx.buffer(64 * 4), plane = ctx.buffer(4 * 64 * 4);
  Buffer small = ctx.buffer(12);
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 0, 64), ContainsSubstring("expand_f32: rows = 0"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 4, 0), ContainsSubstring("expand_f32: r = 0"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 4, 48),
                    ContainsSubstring("expand_f32: r = 48 is not a multiple of 32"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 4, 64, 63),
                    ContainsSubstring("expand_f32: ldp = 63 is less than r = 64"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, small, &h, &g, plane, 4, 64), ContainsSubstring("expand_f32: bits holds 12"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &small, &g, plane, 4, 64),
                    ContainsSubstring("expand_f32: row_scale holds 12"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &small, plane, 4, 64),
                    ContainsSubstring("expand_f32: col_scale holds 12"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 4, 64, 65),
                    ContainsSubstring("expand_f32: plane holds 1024 bytes, needs 1036"));
  CHECK_THROWS_WITH(ops::expand_f32(ctx, bits, &h, &g, plane, 4, 64, 0, 1),
                    ContainsSubstring("expand_f32: plane holds 1024 bytes, needs 1028"));
  CHECK_NOTHROW(ops::expand_f32(ctx, bits, nullptr, nullptr, plane, 4, 64));
}
