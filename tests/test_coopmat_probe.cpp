// One cooperative-matrix fragment product with the device's own fragment
// shape, exact on small integers.
#include <catch2/catch_test_macros.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;

GPU_TEST("coopmat fragment product is exact on small integers", "[gemm][coopmat]") {
  if (!ctx.caps().coopmat) SKIP("device has no cooperative matrices");
  const auto f = *ctx.caps().f16_fragment();
  INFO("fragment " << f.m << "x" << f.n << "x" << f.k << ", subgroup " << ctx.caps().subgroup_size);
  const auto a = vkt::random_small_ints(f.m * f.k, 1, 8);
  const auto b = vkt::random_small_ints(f.k * f.n, 2, 8);
  Buffer ba = ctx.upload(to_f16(a)), bb = ctx.upload(to_f16(b)), bc = ctx.buffer(f.m * f.n * 4);
  bc.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::coopmat_probe(ctx, ba, bb, bc));
  rec.run();
  const auto c = bc.download<float>();
  std::size_t bad = 0;
  for (std::uint32_t i = 0; i < f.m; ++i) {
    for (std::uint32_t j = 0; j < f.n; ++j) {
      double want = 0;
      for (std::uint32_t p = 0; p < f.k; ++p) want += double(a[i * f.k + p]) * b[p * f.n + j];
      bad += c[i * f.n + j] != static_cast<float>(want);
    }
  }
  CHECK(bad == 0);
}
