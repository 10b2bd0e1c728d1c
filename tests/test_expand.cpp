// Sign-bitmap expansion: expand, expand_n, expand_t against the host's
// unpacking (exact), the single orientations bit for bit equal to expand's
// two outputs, a grid that folds, and the builders' refusals.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned16;

namespace {

constexpr std::uint16_t kPlus = 0x3c00;   // f16 +1
constexpr std::uint16_t kMinus = 0xbc00;  // f16 -1

std::uint32_t words_of(std::uint32_t r) { return (r + 31) / 32; }

// A bitmap of random words, the unused bits past r included (they must be ignored).
std::vector<std::uint32_t> random_bits(std::uint32_t rows, std::uint32_t r, std::uint64_t seed) {
  return vkt::random_words(std::size_t{rows} * words_of(r), seed);
}

// The host's unpacking: the f16 sign of rank j in `row`.
std::uint16_t sign_at(const std::vector<std::uint32_t>& bits, std::uint32_t r, std::uint32_t row, std::uint32_t j) {
  return (bits[std::size_t{row} * words_of(r) + j / 32] >> (j % 32)) & 1u ? kPlus : kMinus;
}

// Positions where plane [rows][r] (transposed: [r][rows]) differs from the host.
std::size_t plane_mismatches(const std::vector<std::uint16_t>& plane, const std::vector<std::uint32_t>& bits,
                             std::uint32_t rows, std::uint32_t r, bool transposed) {
  std::size_t bad = 0;
  for (std::uint32_t row = 0; row < rows; ++row) {
    for (std::uint32_t j = 0; j < r; ++j) {
      const std::size_t at = transposed ? std::size_t{j} * rows + row : std::size_t{row} * r + j;
      bad += plane[at] != sign_at(bits, r, row, j);
    }
  }
  return bad;
}

}  // namespace

GPU_TEST("expand unpacks a bitmap into a plane and its transpose", "[ops]") {
  const std::uint32_t rows = 70, r = 200;  // r not a multiple of 32: the last word is partly unused
  const auto bits = random_bits(rows, r, 1);
  Buffer bbits = ctx.upload(bits);
  Buffer plane = poisoned16(ctx, rows * r), plane_t = poisoned16(ctx, rows * r);
  Recorder rec(ctx);
  rec.add(ops::expand(ctx, bbits, plane, plane_t, rows, r));
  rec.run();
  CHECK(plane_mismatches(plane.download<std::uint16_t>(rows * r), bits, rows, r, false) == 0);
  CHECK(plane_mismatches(plane_t.download<std::uint16_t>(rows * r), bits, rows, r, true) == 0);
}

GPU_TEST("expand puts bits 0, 31, 32, 63, 64 and r-1 at their ranks", "[ops]") {
  // Row 2i has only bit p_i set, row 2i+1 every bit but p_i.
  const std::uint32_t r = 72, words = words_of(r);
  const std::vector<std::uint32_t> positions = {0, 31, 32, 63, 64, r - 1};
  const auto rows = static_cast<std::uint32_t>(2 * positions.size());
  std::vector<std::uint32_t> bits(std::size_t{rows} * words, 0);
  for (std::uint32_t i = 0; i < positions.size(); ++i) {
    const std::uint32_t p = positions[i];
    bits[(2 * i) * words + p / 32] = 1u << (p % 32);
    for (std::uint32_t w = 0; w < words; ++w) bits[(2 * i + 1) * words + w] = ~0u;
    bits[(2 * i + 1) * words + p / 32] &= ~(1u << (p % 32));
  }
  Buffer bbits = ctx.upload(bits);
  Buffer plane = poisoned16(ctx, rows * r), plane_t = poisoned16(ctx, rows * r);
  Recorder rec(ctx);
  rec.add(ops::expand(ctx, bbits, plane, plane_t, rows, r));
  rec.run();
  const auto pl = plane.download<std::uint16_t>(rows * r), plt = plane_t.download<std::uint16_t>(rows * r);
  for (std::uint32_t i = 0; i < positions.size(); ++i) {
    std::size_t bad = 0;
    for (std::uint32_t j = 0; j < r; ++j) {
      const bool at_p = j == positions[i];
      const std::uint16_t one_hot = at_p ? kPlus : kMinus, one_cold = at_p ? kMinus : kPlus;
      bad += pl[(2 * i) * r + j] != one_hot;
      bad += pl[(2 * i + 1) * r + j] != one_cold;
      bad += plt[std::size_t{j} * rows + 2 * i] != one_hot;
      bad += plt[std::size_t{j} * rows + 2 * i + 1] != one_cold;
    }
    INFO("bit " << positions[i]);
    CHECK(bad == 0);
  }
}

GPU_TEST("expand_n and expand_t equal expand's two outputs bit for bit", "[ops]") {
  const std::uint32_t rows = 333, r = 200;
  Buffer bbits = ctx.upload(random_bits(rows, r, 2));
  Buffer plane = poisoned16(ctx, rows * r), plane_t = poisoned16(ctx, rows * r);
  Buffer plane_n = poisoned16(ctx, rows * r), plane_tt = poisoned16(ctx, rows * r);
  Recorder rec(ctx);
  rec.add(ops::expand(ctx, bbits, plane, plane_t, rows, r));
  rec.add(ops::expand_n(ctx, bbits, plane_n, rows, r));
  rec.add(ops::expand_t(ctx, bbits, plane_tt, rows, r));
  rec.run();
  CHECK(vkt::count_bit_diffs(plane_n.download<std::uint16_t>(rows * r), plane.download<std::uint16_t>(rows * r)) == 0);
  CHECK(vkt::count_bit_diffs(plane_tt.download<std::uint16_t>(rows * r), plane_t.download<std::uint16_t>(rows * r)) ==
        0);
}

GPU_TEST("expand_n and expand_t fold grids past 65535 workgroups", "[ops]") {
  // 4099 × 4100 = 16,805,900 elements > 65535 · 256: the grid folds into y.
  const std::uint32_t rows = 4099, r = 4100;
  const std::size_t n = std::size_t{rows} * r;
  const auto bits = random_bits(rows, r, 3);
  Buffer bbits = ctx.upload(bits);
  Buffer plane = poisoned16(ctx, n), plane_t = poisoned16(ctx, n);
  const Dispatch dn = ops::expand_n(ctx, bbits, plane, rows, r);
  const Dispatch dt = ops::expand_t(ctx, bbits, plane_t, rows, r);
  REQUIRE(dn.groups[1] > 1);
  REQUIRE(dt.groups[1] > 1);
  Recorder rec(ctx);
  rec.add(dn).add(dt);
  rec.run();
  CHECK(plane_mismatches(plane.download<std::uint16_t>(n), bits, rows, r, false) == 0);
  CHECK(plane_mismatches(plane_t.download<std::uint16_t>(n), bits, rows, r, true) == 0);
}

GPU_TEST("expand builders refuse bad shapes and small buffers", "[ops][errors]") {
  const std::uint32_t rows = 8, r = 40;  // 2 words per row
  Buffer bits = ctx.buffer(rows * 2 * 4), plane = ctx.buffer(rows * r * 2), plane_t = ctx.buffer(rows * r * 2);
  Buffer small = ctx.buffer(rows * r);
  CHECK_THROWS_WITH(ops::expand(ctx, bits, plane, plane_t, 0, r), ContainsSubstring("expand: rows = 0"));
  CHECK_THROWS_WITH(ops::expand_n(ctx, bits, plane, rows, 0), ContainsSubstring("expand_n: r = 0"));
  CHECK_THROWS_WITH(ops::expand_t(ctx, bits, plane_t, rows, 65), ContainsSubstring("expand_t: bits holds"));
  CHECK_THROWS_WITH(ops::expand(ctx, bits, plane, small, rows, r), ContainsSubstring("expand: plane_t holds"));
  CHECK_THROWS_WITH(ops::expand_n(ctx, bits, small, rows, r), ContainsSubstring("expand_n: plane holds"));
  CHECK_THROWS_WITH(ops::expand_t(ctx, bits, small, rows, r), ContainsSubstring("expand_t: plane_t holds"));
  CHECK_THROWS_WITH(ops::expand(ctx, bits, plane, plane, rows, r), ContainsSubstring("expand: plane and plane_t"));
}
