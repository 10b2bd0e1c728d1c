// adamw_bench.hpp — `vkblr-bench adamw`: one AdamW step (ops::adam with
// weight decay, vkblr/ops/optim.hpp) over n f32 dense parameters, with an
// optional f16/bf16 storage copy, per n. Reports the GPU time and the
// bandwidth it achieves: 28 bytes per entry (w, g, m1, m2 read; w, m1, m2
// written) + 2 for the copy, against a plain copy kernel's on the same
// device (a memory-bound op's target: >= 0.7× of it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "memory_need.hpp"
#include "timing.hpp"

namespace bench {

struct AdamwBenchOptions {
  std::vector<std::uint32_t> sizes;            // entries per case
  std::optional<vkblr::ops::CopyType> copy{};  // the storage copy written beside the master
  float weight_decay = 0.1f;
  bool concat = false;  // adam_cat (per-entry mask and floor) instead of adam
  std::uint32_t warmup = 3;
  std::uint32_t reps = 20;
  bool quiet = false;
};

struct AdamwResult {
  std::uint32_t n = 0;
  std::string copy;  // "none", "f16", "bf16"
  bool concat = false;
  std::string error;
  Stats stats;
  double bytes = 0, gbs = 0, copy_gbs = 0;
};

// An entry count >= 1 (decimal); throws std::invalid_argument otherwise.
std::uint32_t parse_adamw_size(const std::string& text);
MemoryNeed adamw_memory(std::uint32_t n, bool copy, bool concat);
std::vector<AdamwResult> run_adamw_bench(vkblr::Context& ctx, const AdamwBenchOptions& options);
inline bool failed(const AdamwResult& r) { return !r.error.empty(); }
std::string format_adamw_result(const AdamwResult& r);
nlohmann::json to_json(const AdamwResult& r);

}  // namespace bench
