// blr_bench.hpp — `vkblr-bench blr`: one blr layer's training step (forward
// + backward + sign gradients, one recorded batch) per (m, n, r, ntok, P).
#pragma once

#include <array>
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

using BlrCase = LayerCase;

struct BlrBenchOptions {
  std::vector<BlrCase> cases;
  bool sign_grads = true;
  std::uint32_t lanes = 2;  // ops::BlrShared lanes: paths recorded side by side
  std::uint32_t warmup = 5;
  std::uint32_t reps = 30;
  bool quiet = false;
};

struct BlrResult {
  BlrCase c{};
  std::string error;
  Stats span;            // per step: first dispatch start to last dispatch end (profiled)
  Stats busy;            // per step: sum of dispatch times (profiled)
  double replay_ms = 0;  // per step: wall time of an unprofiled replay of `reps` steps / reps
  std::map<std::string, double> share;  // fraction of busy time per class: gemm, sign gemm, reductions, elementwise
  std::uint32_t dispatches = 0, barriers = 0;
  std::uint32_t lanes = 0;      // ops::BlrShared lanes the step ran with
  // memory per lane: the ops::BlrShared buffers of one lane; and the Recorder's
  // transients of the step (all its lanes together)
  std::uint64_t lane_bytes = 0, transient_bytes = 0;
  double torch_compile_ms = 0;  // PyTorch 2.11 torch.compile on the H200 (issue 5)
  std::map<std::string, double> per_name_ms;  // per step: GPU time of each dispatch name
};

// What one case allocates (memory_need.hpp); run_blr_bench refuses a case
// that does not fit before allocating anything.
MemoryNeed blr_memory(const vkblr::Context& ctx, const BlrCase& c, const BlrBenchOptions& options);

std::vector<BlrResult> run_blr_bench(vkblr::Context& ctx, const BlrBenchOptions& options);
// A case that did not run.
inline bool failed(const BlrResult& r) { return !r.error.empty(); }
std::string format_blr_result(const BlrResult& r);
nlohmann::json to_json(const BlrResult& r);

}  // namespace bench
