// Compiler statistics of kernels (vkblr/kernel_stats.hpp).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/kernel_stats.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// A GEMM's main dispatch on ctx (operands uninitialised: never run).
Dispatch gemm_dispatch(Context& ctx, const GemmTile& tile) {
  Buffer act = ctx.buffer(64 * 64 * 2), plane = ctx.buffer(64 * 64 * 2), out = ctx.buffer(64 * 64 * 4);
  return gemm(ctx, act, plane, GemmB::plane, out, {64, 64, 64}, &tile).front();
}

}  // namespace

GPU_TEST("kernel statistics are refused where the context does not keep them", "[kernel_stats][errors]") {
  // the suite's context is made without ContextOptions::kernel_statistics
  REQUIRE_FALSE(ctx.caps().kernel_statistics);
  const Dispatch d = gemm_dispatch(ctx, gemm_tile_for(ctx, 64, 64, 64));
  REQUIRE_THROWS_WITH(kernel_statistics(d), ContainsSubstring("kernel_statistics") &&
                                                ContainsSubstring("VKBLR_KERNEL_STATS=1"));
  REQUIRE_THROWS_WITH(kernel_statistics(Dispatch{}), ContainsSubstring("has no kernel"));
}

GPU_TEST("a context with kernel statistics reports them for every GEMM kernel where the device can", "[kernel_stats]") {
  ContextOptions options;
  options.validation = true;
  options.kernel_statistics = true;
  Context stats_ctx(options);
  // NVIDIA's driver has the extension; lavapipe (the CI device, Mesa 26.1)
  // does not advertise it: there the request is ignored and asking refused
  const bool has = stats_ctx.caps().kernel_statistics;
  if (stats_ctx.caps().vendor_id == 0x10de) REQUIRE(has);
  for (const GemmKernel k : {GemmKernel::coopmat2, GemmKernel::coopmat, GemmKernel::plain}) {
    if (!device_has_gemm_kernel(stats_ctx.caps(), k)) continue;
    const GemmTile tile = gemm_tile_for(stats_ctx, 64, 64, 64, k);
    INFO(tile.to_string());
    const Dispatch d = gemm_dispatch(stats_ctx, tile);
    if (!has) {
      REQUIRE_THROWS_WITH(kernel_statistics(d), ContainsSubstring("built without statistics"));
      continue;
    }
    const auto stats = kernel_statistics(d);
    REQUIRE(!stats.empty());
    for (const auto& e : stats) {
      CHECK(e.kernel.starts_with("gemm_"));
      CHECK(!e.executable.empty());
      REQUIRE(!e.values.empty());
      for (const auto& v : e.values) {
        INFO(v.name << " = " << v.value);
        CHECK(!v.name.empty());
        CHECK(!v.value.empty());
      }
    }
  }
  vkt::check_validation(stats_ctx);
}
