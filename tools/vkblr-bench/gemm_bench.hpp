// gemm_bench.hpp — `vkblr-bench gemm`: median GPU time and TFLOPS of the GEMM
// per shape (m×n×k), B mode (plane, bits_n, bits_t, or "plain": the plane
// mode on the shared-memory kernel) and tile.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <vkblr/vkblr.hpp>

#include "timing.hpp"

namespace bench {

struct GemmBenchOptions {
  std::vector<std::array<std::uint32_t, 3>> shapes;
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
  double check_error = -1;  // sampled max |out - ref| / rms(ref); -1 = not checked
  std::vector<vkblr::KernelStatistic> kernel_stats;  // of the main GEMM dispatch, with --stats
};

std::vector<GemmResult> run_gemm_bench(vkblr::Context& ctx, const GemmBenchOptions& options);
std::string format_gemm_result(const GemmResult& r);
nlohmann::json to_json(const GemmResult& r);

}  // namespace bench
