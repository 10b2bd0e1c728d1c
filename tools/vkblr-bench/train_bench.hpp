// train_bench.hpp — `vkblr-bench train`: whole training steps of one blr
// layer as BlrTrainer replays them (forward, loss gradient, backward with
// sign gradients, sign step, Adam on the scales; one submit per step), the
// loop vkblr-fit runs. Reports steps per second of wall time (submit and
// wait included: what a trainer sees) and, from a second trainer recorded
// with GPU timestamps, the GPU time per step and per dispatch name.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "layer_case.hpp"
#include "memory_need.hpp"
#include "timing.hpp"

namespace bench {

using TrainCase = LayerCase;

struct TrainBenchOptions {
  std::vector<TrainCase> cases;
  vkblr::SignOpt sign_opt = vkblr::SignOpt::adam;  // vkblr-fit's defaults (fit_options.hpp)
  float flip_budget = 0.0f;
  bool train_signs = true;  // false: vkblr-fit's --sign-lr 0 (scales only)
  std::uint32_t warmup = 20;
  std::uint32_t steps = 200;  // timed steps
  bool quiet = false;
};

struct TrainResult {
  TrainCase c{};
  bool train_signs = true;
  std::string error;
  double steps_per_s = 0;  // wall clock, `steps` replayed steps
  Stats step_wall;         // per step wall time (ms)
  Stats gpu;               // per step: sum of dispatch times (profiled trainer)
  std::uint32_t dispatches = 0;
  std::map<std::string, double> per_name_ms;  // per step: GPU time of each dispatch name
};

// What one case allocates (memory_need.hpp); run_train_bench refuses a
// case that does not fit before allocating anything.
MemoryNeed train_memory(const vkblr::Context& ctx, const TrainCase& c, const TrainBenchOptions& options);

std::vector<TrainResult> run_train_bench(vkblr::Context& ctx, const TrainBenchOptions& options);
// A case that did not run.
inline bool failed(const TrainResult& r) { return !r.error.empty(); }
std::string format_train_result(const TrainResult& r);
nlohmann::json to_json(const TrainResult& r);

}  // namespace bench
