// gemm_f32_bench.hpp — `vkblr-bench gemm-f32`: median GPU time and TFLOP/s
// of the f32 GEMM (vkblr/ops/gemm_f32.hpp) per shape (m×n×k), transposes
// and tile.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "timing.hpp"

namespace bench {

struct GemmF32BenchOptions {
  std::vector<std::array<std::uint32_t, 3>> shapes;  // m, n, k (bench_args.hpp)
  bool trans_a = false, trans_b = false;
  std::vector<vkblr::ops::GemmF32Tile> tiles;  // empty: the library's choice
  std::uint32_t warmup = 5;
  std::uint32_t reps = 30;
  bool quiet = false;
  bool check = false;  // compare sampled outputs with an f64 host product
};

struct GemmF32Result {
  std::uint32_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string tile, error;
  Stats stats;
  double tflops = 0;
  double check_error = -1;  // sampled max |out - ref| / Σ|a·b|, in f32 epsilons; -1 = not checked
};

// A case that did not run, or whose --check failed.
bool failed(const GemmF32Result& r);

// A case that cannot run (too large for the device, a tile the device
// refuses) is a result with `error` set.
std::vector<GemmF32Result> run_gemm_f32_bench(vkblr::Context& ctx, const GemmF32BenchOptions& options);
std::string format_gemm_f32_result(const GemmF32Result& r);
nlohmann::json to_json(const GemmF32Result& r);

}  // namespace bench
