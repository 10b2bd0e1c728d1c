// Output ops: scale_acc (overwrite, accumulate) and scale_acc2 against an
// exact host reference, scale_acc2 ≡ scale_acc twice bit for bit, and
// f16_to_f32 over every f16 bit pattern.
#include <catch2/catch_test_macros.hpp>
#include <bit>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;

namespace {

std::vector<std::uint32_t> words(const Buffer& b, std::size_t n) { return b.download<std::uint32_t>(n); }

// f32 products and sums each rounded once, whatever the host compiler
// contracts: f64 holds an f32 product exactly, and rounding an f64 sum of
// two f32 to f32 rounds correctly (53 >= 2·24 + 2 bits).
float mul_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }
float add_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) + b); }

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

}  // namespace

GPU_TEST("scale_acc overwrites and accumulates a·col exactly", "[ops]") {
  for (const std::uint32_t k : {1000u, 4099u}) {
    const std::uint32_t m = 70;
    const std::size_t n = std::size_t{m} * k;
    const auto a = vkt::random_floats(n, 40, 3.0f), col = vkt::random_floats(k, 41, 2.0f);
    const auto init = vkt::random_floats(n, 42, 5.0f);
    Buffer ba = ctx.upload(a), bcol = ctx.upload(col);
    Buffer overwritten = poisoned(ctx, n), accumulated = ctx.upload(init);
    Recorder rec(ctx);
    rec.add(ops::scale_acc(ctx, ba, bcol, overwritten, m, k, false));
    rec.add(ops::scale_acc(ctx, ba, bcol, accumulated, m, k, true));
    rec.run();
    const auto got_over = words(overwritten, n), got_acc = words(accumulated, n);
    std::size_t bad_over = 0, bad_acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float product = mul_f32(a[i], col[i % k]);
      bad_over += got_over[i] != bits_of(product);
      bad_acc += got_acc[i] != bits_of(add_f32(init[i], product));
    }
    INFO("m = " << m << ", k = " << k);
    CHECK(bad_over == 0);
    CHECK(bad_acc == 0);
  }
}

GPU_TEST("scale_acc2 equals scale_acc twice bit for bit", "[ops]") {
  const std::uint32_t m = 70, k = 4099;
  const std::size_t n = std::size_t{m} * k;
  const auto a0 = vkt::random_floats(n, 50, 3.0f), a1 = vkt::random_floats(n, 51, 3.0f);
  const auto c0 = vkt::random_floats(k, 52, 2.0f), c1 = vkt::random_floats(k, 53, 2.0f);
  // The test can tell a fused multiply-add from two roundings: on these
  // inputs fma(a1, c1, fl(a0·c0)) differs from fl(fl(a0·c0) + fl(a1·c1)).
  std::vector<std::uint32_t> want(n);
  std::size_t fma_differs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float p0 = mul_f32(a0[i], c0[i % k]);
    const float two_roundings = add_f32(p0, mul_f32(a1[i], c1[i % k]));
    want[i] = bits_of(two_roundings);
    fma_differs += bits_of(std::fma(a1[i], c1[i % k], p0)) != want[i];
  }
  REQUIRE(fma_differs > n / 100);

  Buffer ba0 = ctx.upload(a0), ba1 = ctx.upload(a1), bc0 = ctx.upload(c0), bc1 = ctx.upload(c1);
  Buffer two_passes = poisoned(ctx, n), one_pass = poisoned(ctx, n);
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, ba0, bc0, two_passes, m, k, false));
  rec.add(ops::scale_acc(ctx, ba1, bc1, two_passes, m, k, true));
  rec.add(ops::scale_acc2(ctx, ba0, bc0, ba1, bc1, one_pass, m, k));
  rec.run();
  const auto got = words(one_pass, n);
  CHECK(vkt::count_bit_diffs(got, words(two_passes, n)) == 0);
  CHECK(vkt::count_bit_diffs(got, want) == 0);
}

GPU_TEST("f16_to_f32 widens every f16 exactly", "[ops]") {
  // All 65536 bit patterns, then 77 more: n not a multiple of 256.
  std::vector<std::uint16_t> src(65536 + 77);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(i * 40503u);
  Buffer bsrc = ctx.upload(src), out = poisoned(ctx, src.size());
  Recorder rec(ctx);
  rec.add(ops::f16_to_f32(ctx, bsrc, out, static_cast<std::uint32_t>(src.size())));
  rec.run();
  const auto got = out.download<float>(src.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const float want = f16_to_f32(src[i]);
    bad += std::isnan(want) ? !std::isnan(got[i]) : bits_of(got[i]) != bits_of(want);
  }
  CHECK(bad == 0);
}

GPU_TEST("output builders refuse bad shapes and small buffers", "[ops][errors]") {
  const std::uint32_t m = 8, k = 16;
  Buffer a = ctx.buffer(m * k * 4), col = ctx.buffer(k * 4), out = ctx.buffer(m * k * 4), small = ctx.buffer(16);
  CHECK_THROWS_WITH(ops::scale_acc(ctx, a, col, out, 0, k, false), ContainsSubstring("scale_acc: m = 0"));
  CHECK_THROWS_WITH(ops::scale_acc(ctx, a, small, out, m, k, true), ContainsSubstring("scale_acc: col holds"));
  CHECK_THROWS_WITH(ops::scale_acc(ctx, a, col, small, m, k, false), ContainsSubstring("scale_acc: out holds"));
  CHECK_THROWS_WITH(ops::scale_acc2(ctx, a, col, a, col, out, m, 0), ContainsSubstring("scale_acc2: k = 0"));
  CHECK_THROWS_WITH(ops::scale_acc2(ctx, a, col, small, col, out, m, k), ContainsSubstring("scale_acc2: a1 holds"));
  CHECK_THROWS_WITH(ops::scale_acc2(ctx, a, col, a, small, out, m, k), ContainsSubstring("scale_acc2: col1 holds"));
  CHECK_THROWS_WITH(ops::f16_to_f32(ctx, small, out, 9), ContainsSubstring("f16_to_f32: src holds"));
  CHECK_THROWS_WITH(ops::f16_to_f32(ctx, a, small, 8), ContainsSubstring("f16_to_f32: out holds"));
  CHECK_THROWS_WITH(ops::f16_to_f32(ctx, a, out, 0), ContainsSubstring("f16_to_f32: n = 0"));
}
