// gemm_bench.hpp — `vkblr-bench gemm`: median GPU time and TFLOPS of the GEMM
// per shape (m×n×k), B mode (plane, bits_n, bits_t, or "plain": the plane
// mode on the shared-memory kernel) and tile.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "bench_args.hpp"
#include "memory_need.hpp"
#include "timing.hpp"

namespace bench {

struct GemmBenchOptions {
  std::vector<GemmSize> shapes;
  std::vector<std::string> modes;
  std::vector<vkblr::GemmTile> tiles;  // empty: the library's choice
  std::uint32_t warmup = 5;
  std::uint32_t reps = 30;
  bool quiet = false;
  bool check = false;  // compare sampled outputs with an f64 host product
  bool stats = false;  // report the GEMM kernel's compiler statistics (needs Caps::kernel_statistics)
};

struct GemmResult {
  std::uint32_t m = 0, n = 0, k = 0;
  std::string mode, tile, error;
  Stats stats;
  double tflops = 0, cublas_tflops = 0;
  std::optional<double> check_error;  // --check: sampled max |out - ref| / rms(ref) (NaN: a NaN output)
  std::vector<vkblr::KernelStatistic> kernel_stats;  // of the main GEMM dispatch, with --stats
};

// --check passes where the sampled error stays below this.
inline constexpr double kCheckTolerance = 1e-4;

// A case that did not run, or whose --check failed.
bool failed(const GemmResult& r);

// What one shape allocates for all its modes and `tiles` (memory_need.hpp);
// run_gemm_bench refuses a shape that does not fit before allocating
// anything.
MemoryNeed gemm_memory(const vkblr::Context& ctx, const GemmSize& shape, std::span<const vkblr::GemmTile> tiles,
                       bool check);

// Runs every shape × mode × tile; a case that cannot run (a shape too large
// for the device, a tile the device refuses) is a result with `error` set.
std::vector<GemmResult> run_gemm_bench(vkblr::Context& ctx, const GemmBenchOptions& options);
std::string format_gemm_result(const GemmResult& r);
nlohmann::json to_json(const GemmResult& r);

}  // namespace bench
