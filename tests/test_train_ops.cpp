// Training-step kernels: the squared-error gradient with its partials, and
// the non-finite guard.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <limits>
#include <vector>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops/train.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;

namespace {

// mse_grad's 64 partials as its kernels form them (glsl/mse_grad.comp), in f32.
std::vector<float> host_mse_partials(const std::vector<float>& y, const std::vector<float>& t) {
  const std::uint64_t n = y.size(), per_group = 256 * 16;
  const std::uint64_t g = std::clamp<std::uint64_t>((n + 64 * per_group - 1) / (64 * per_group), 1, 64);
  const std::uint64_t groups = 64 * g, stride = groups * 256;
  std::vector<float> blocks(groups);
  for (std::uint64_t w = 0; w < groups; ++w) {
    float sums[256];
    for (std::uint64_t x = 0; x < 256; ++x) {
      float acc = 0.0f;
      for (std::uint64_t i = w * 256 + x; i < n; i += stride) {
        const float d = y[i] - t[i];
        const float sq = d * d;
        acc = acc + sq;
      }
      sums[x] = acc;
    }
    for (std::uint64_t s = 128; s > 0; s >>= 1) {
      for (std::uint64_t x = 0; x < s; ++x) sums[x] = sums[x] + sums[x + s];
    }
    blocks[w] = sums[0];
  }
  std::vector<float> partials(64);
  for (std::uint64_t x = 0; x < 64; ++x) {
    float acc = 0.0f;
    for (std::uint64_t k = 0; k < g; ++k) acc = acc + blocks[k * 64 + x];
    partials[x] = acc;
  }
  return partials;
}

}  // namespace

GPU_TEST("mse_grad writes (y - t)·scale and the partials of Σ(y - t)² in their documented order", "[ops]") {
  // one workgroup per partial, and several (the second pass folds them)
  for (const std::uint32_t n : {100003u, 1000003u, 5000000u}) {
    INFO("n = " << n);
    const auto y = vkt::random_floats(n, 1, 2.0f), t = vkt::random_floats(n, 2, 2.0f);
    Buffer by = ctx.upload(y), bt = ctx.upload(t), dy = ctx.buffer(std::uint64_t{n} * 4),
           partials = ctx.buffer(64 * 4);
    dy.fill(vkt::kPoison32);
    partials.fill(vkt::kPoison32);
    Recorder rec(ctx);
    rec.add(ops::mse_grad(ctx, by, bt, dy, n, 0.25f, partials));
    rec.run();
    const auto g = dy.download<float>();
    std::size_t bad = 0;
    double want = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const float d = y[i] - t[i];
      bad += g[i] != d * 0.25f;
      want += double(d) * d;
    }
    CHECK(bad == 0);
    const auto p = partials.download<float>();
    double got = 0;
    for (float v : p) got += v;
    CHECK(std::abs(got - want) / want < 1e-5);
    CHECK(vkt::count_bit_diffs(p, host_mse_partials(y, t)) == 0);
  }
}

GPU_TEST("finite_guard flags NaN and Inf and clears the flag otherwise", "[ops]") {
  const std::uint32_t count = 640;
  auto values = vkt::random_floats(count, 3);
  Buffer flag = ctx.host_buffer(4 * 4);
  flag.fill(7);
  for (const float bad : {0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    auto v = values;
    if (bad != 0.0f || std::isnan(bad)) v[count - 1] = bad;
    Buffer bv = ctx.upload(v);
    Recorder rec(ctx);
    rec.add(ops::finite_guard(ctx, bv, count, flag, 2));
    rec.run();
    const auto f = flag.download<std::uint32_t>();
    INFO("planted " << bad);
    CHECK(f[2] == ((std::isnan(bad) || std::isinf(bad)) ? 1u : 0u));
    CHECK(f[0] == 7u);
  }
  CHECK_THROWS_AS(ops::finite_guard(ctx, flag, 4, flag, 0), Error);
  CHECK_THROWS_AS(ops::mse_grad(ctx, flag, flag, flag, 4, 1.0f, flag), Error);
}
