// The Gaussian fill: every draw near its f64 reference, the reference
// itself (written again here, and pinned values), the moments and tails of
// 10^6 draws, streams and seeds independent (also streams whose keys differ
// in a few low bits), a draw independent of count and offset, one drawn in
// pieces (first) the one drawn at once, poisoned outputs untouched outside
// the block, and the builder's refusals.
#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numbers>
#include <vector>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/random_ref.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// random.hpp's draw written again: words hashed from the counter, then keyed.
double draw(std::uint64_t seed, std::uint32_t stream, std::uint32_t i) {
  const std::uint32_t key = vkt::stream_key(seed, stream);
  const auto uniform = [key](std::uint32_t c) { return ((vkt::mix32(vkt::mix32(c) ^ key) >> 9) + 0.5) * 0x1p-23; };
  return std::sqrt(-2.0 * std::log(uniform(2 * i))) * std::cos(2.0 * std::numbers::pi * uniform(2 * i + 1));
}

// `count` draws from draw `first` at element `offset` of a poisoned buffer
// of `floats`.
std::vector<float> fill(Context& ctx, std::size_t floats, std::uint64_t count, std::uint64_t seed,
                        std::uint32_t stream, float scale = 1.0f, std::uint64_t offset = 0, std::uint64_t first = 0) {
  Buffer out = ctx.buffer(floats * 4);
  out.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::gaussian(ctx, out, count, seed, stream, scale, offset, first));
  rec.run();
  return out.download<float>(floats);
}

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Pearson correlation of two equally long series.
double correlation(const std::vector<float>& x, const std::vector<float>& y) {
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  const double n = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += double(x[i]) * x[i];
    syy += double(y[i]) * y[i];
    sxy += double(x[i]) * y[i];
  }
  return (sxy - sx * sy / n) / std::sqrt((sxx - sx * sx / n) * (syy - sy * sy / n));
}

}  // namespace

TEST_CASE("gaussian_reference is the documented draw, the same every time", "[ops][random]") {
  for (const std::uint64_t seed : {0ull, 1ull, 0x0123456789abcdefull}) {
    for (const std::uint32_t stream : {0u, 1u, 77u}) {
      for (const std::uint32_t i : {0u, 1u, 2u, 1000u, 0x7fffffffu}) {
        CHECK(ops::gaussian_reference(seed, stream, i) == draw(seed, stream, i));
      }
    }
  }
  // pinned: a change of the generator shows here
  CHECK(std::abs(ops::gaussian_reference(1, 0, 0) - (-0.7923001269458926)) < 1e-12);
  CHECK(std::abs(ops::gaussian_reference(1, 0, 1) - 0.38504596184892) < 1e-12);
  CHECK(std::abs(ops::gaussian_reference(0x0123456789abcdef, 5, 12345) - (-1.1238236806575017)) < 1e-12);
  CHECK_THROWS_WITH(ops::gaussian_reference(1, 0, 0x80000000u),
                    ContainsSubstring("gaussian_reference: i = 2147483648"));
}

GPU_TEST("gaussian draws equal their f64 reference, scaled, at an offset", "[ops][random]") {
  const std::uint64_t seed = 0x0123456789abcdef, count = 300001, offset = 5, floats = offset + count + 7;
  const std::uint32_t stream = 3;
  const auto plain = fill(ctx, floats, count, seed, stream, 1.0f, offset);
  const auto scaled = fill(ctx, floats, count, seed, stream, -2.5f, offset);
  std::size_t far = 0, far_scaled = 0, touched = 0;
  double worst = 0;
  for (std::size_t e = 0; e < floats; ++e) {
    if (e < offset || e >= offset + count) {
      touched += bits(plain[e]) != vkt::kPoison32 || bits(scaled[e]) != vkt::kPoison32;
      continue;
    }
    const double want = ops::gaussian_reference(seed, stream, static_cast<std::uint32_t>(e - offset));
    const double tolerance = 1e-5 * std::max(1.0, std::abs(want));
    far += !(std::abs(plain[e] - want) <= tolerance);
    far_scaled += !(std::abs(scaled[e] + 2.5 * want) <= 2.5 * tolerance);
    worst = std::max(worst, std::abs(plain[e] - want) / tolerance);
  }
  INFO("worst |device − reference| / tolerance: " << worst);
  CHECK(far == 0);
  CHECK(far_scaled == 0);
  CHECK(touched == 0);
}

GPU_TEST("gaussian: 10^6 draws have a standard normal's moments and tails", "[ops][random]") {
  const std::size_t n = 1000000;
  const auto z = fill(ctx, n, n, 7, 0);
  double sum = 0, sum2 = 0, sum4 = 0, biggest = 0;
  std::size_t beyond2 = 0, beyond3 = 0, positive = 0;
  for (const float x : z) {
    sum += x;
    sum2 += double(x) * x;
    sum4 += double(x) * x * x * x;
    biggest = std::max(biggest, double(std::abs(x)));
    beyond2 += std::abs(x) > 2;
    beyond3 += std::abs(x) > 3;
    positive += x > 0;
  }
  const double mean = sum / n, variance = sum2 / n - mean * mean;
  // five standard errors each
  CHECK(std::abs(mean) < 0.005);
  CHECK(std::abs(variance - 1) < 0.007);
  CHECK(std::abs(sum4 / n - 3) < 0.05);
  CHECK(std::abs(double(beyond2) / n - 0.0455003) < 0.00105);
  CHECK(std::abs(double(beyond3) / n - 0.0026998) < 0.00026);
  CHECK(std::abs(double(positive) / n - 0.5) < 0.0025);
  CHECK(biggest < 5.8);  // √(−2 ln 2^-24): the smallest uniform
  CHECK(biggest > 4.0);
}

GPU_TEST("gaussian streams and seeds are independent", "[ops][random]") {
  const std::size_t n = 100000;
  const double limit = 5 / std::sqrt(double(n));
  const auto base = fill(ctx, n, n, 11, 0);
  CHECK(std::abs(correlation(base, fill(ctx, n, n, 11, 1))) < limit);
  CHECK(std::abs(correlation(base, fill(ctx, n, n, 12, 0))) < limit);
  CHECK(std::abs(correlation(base, fill(ctx, n, n, 11ull << 32, 0))) < limit);
  const std::vector<float> head(base.begin(), base.end() - 1), tail(base.begin() + 1, base.end());
  CHECK(std::abs(correlation(head, tail)) < limit);  // neighbouring draws

  // Two streams whose keys differ only in bits 1-11: were the key XORed
  // into the counter before hashing, the first 2048 draws of one would be
  // those of the other in another order. They share no value.
  const std::uint64_t seed = 5;
  const std::uint32_t key0 = vkt::stream_key(seed, 0);
  std::uint32_t stream = 1;
  while (((vkt::stream_key(seed, stream) ^ key0) & ~0xffeu) != 0) ++stream;
  const std::size_t m = 2048;
  auto a = fill(ctx, m, m, seed, 0), b = fill(ctx, m, m, seed, stream);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<float> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  INFO("stream " << stream << ", keys " << key0 << " and " << vkt::stream_key(seed, stream));
  CHECK(common.empty());
}

GPU_TEST("a gaussian draw depends on its index only: counts, offsets, one draw", "[ops][random]") {
  const auto long_run = fill(ctx, 70001 + 333, 70001, 9, 2, 1.0f, 333);
  const auto short_run = fill(ctx, 1000, 1000, 9, 2);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 1000; ++i) differ += bits(short_run[i]) != bits(long_run[333 + i]);
  CHECK(differ == 0);
  const auto one = fill(ctx, 1, 1, 9, 2);  // count 1 in a one-float buffer
  CHECK(bits(one[0]) == bits(short_run[0]));
  const auto last = fill(ctx, 64, 1, 9, 2, 1.0f, 63);  // the buffer's last element
  CHECK(bits(last[63]) == bits(short_run[0]));
  CHECK(std::count_if(last.begin(), last.end() - 1, [](float x) { return bits(x) != vkt::kPoison32; }) == 0);
}

GPU_TEST("a gaussian draw made in pieces (first) is the draw made at once", "[ops][random]") {
  const auto whole = fill(ctx, 5000, 5000, 9, 2);
  const auto piece = fill(ctx, 1300, 1200, 9, 2, 1.0f, 100, 3700);  // draws 3700..4899 at elements 100..1299
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 1200; ++i) differ += bits(piece[100 + i]) != bits(whole[3700 + i]);
  CHECK(differ == 0);
  CHECK(std::count_if(piece.begin(), piece.begin() + 100, [](float x) { return bits(x) != vkt::kPoison32; }) == 0);
  // the last draw of a stream, against its f64 reference
  const auto last = fill(ctx, 1, 1, 9, 2, 1.0f, 0, (1ull << 31) - 1);
  CHECK(std::abs(last[0] - ops::gaussian_reference(9, 2, (1u << 31) - 1)) <=
        1e-5 * std::max(1.0, std::abs(double{last[0]})));
}

GPU_TEST("gaussian refuses empty or oversized counts and small buffers", "[ops][random][errors]") {
  Buffer out = ctx.buffer(64 * 4);
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 0, 1, 0), ContainsSubstring("gaussian: count = 0"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, (1ull << 31) + 1, 1, 0),
                    ContainsSubstring("gaussian: count = 2147483649 exceeds 2^31 draws"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 65, 1, 0), ContainsSubstring("gaussian: out holds 256 bytes, needs 260"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 60, 1, 0, 1.0f, 5),
                    ContainsSubstring("gaussian: out holds 256 bytes, needs 260"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 8, 1, 0, 1.0f, 0, (1ull << 31) - 7),
                    ContainsSubstring("gaussian: first = 2147483641 + count = 8 exceeds 2^31 draws"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 8, 1, 0, 1.0f, 0, ~0ull),
                    ContainsSubstring("exceeds 2^31 draws"));
  CHECK_THROWS_WITH(ops::gaussian(ctx, out, 8, 1, 0, 1.0f, std::uint64_t{1} << 62),
                    ContainsSubstring("gaussian: out offset 4611686018427387904 is out of range"));
}
