// attention_bench.hpp — `vkblr-bench attention`: median GPU time and
// TFLOP/s of causal self-attention (vkblr/ops/attention.hpp), forward and
// forward + backward, per case (batch, seq, heads, kv_heads, head_dim).
//
// FLOPs are counted as FlashAttention's and PyTorch's benchmarks count
// causal attention: the forward's two products over half the square,
// 4·B·heads·T²·head_dim / 2; the backward 2.5 times that (its five
// products); forward + backward 3.5 times. vkblr's backward recomputes S
// and dP in the dq pass (seven products, not five): the rate is the
// reference count over vkblr's time, comparable with
// tools/lab/attention-sdpa.py's.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "kernel_stats_report.hpp"
#include "memory_need.hpp"
#include "timing.hpp"

namespace bench {

struct AttentionCase {
  std::uint32_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
};

// "B,T,H,KVH,D" with the op's rules (sizes ≥ 1, heads a multiple of
// kv_heads, head_dim 32, 64, 96 or 128); std::invalid_argument otherwise.
AttentionCase parse_attention_case(std::string_view text);
std::string to_string(const AttentionCase& c);

struct AttentionBenchOptions {
  std::vector<AttentionCase> cases;
  vkblr::ops::AttentionKernel kernel = vkblr::ops::AttentionKernel::automatic;
  std::uint32_t warmup = 3;
  std::uint32_t reps = 20;
  bool quiet = false;
  bool check = false;  // o, lse and dq of sampled rows against an f64 host reference
  // Coopmat tile blocks to run each case with (AttentionOptions::block; 0:
  // the library's choice); empty: {0}.
  std::vector<std::uint32_t> blocks;
  // Coopmat prefetch settings to run each case and block with
  // (AttentionOptions::prefetch); empty: {automatic}.
  std::vector<vkblr::ops::AttentionPrefetch> prefetches;
  bool stats = false;  // each attention kernel's compiler statistics (where Caps::kernel_statistics)
};

struct AttentionResult {
  AttentionCase c{};
  std::string kernel, error;
  std::uint32_t block = 0;  // AttentionOptions::block asked (0: the library's choice)
  vkblr::ops::AttentionPrefetch prefetch = vkblr::ops::AttentionPrefetch::automatic;  // ... and its prefetch
  Stats forward, step;  // forward; forward + backward (sums of dispatch times per rep)
  double forward_tflops = 0, step_tflops = 0;
  std::map<std::string, double> per_name_ms;  // forward + backward: GPU time per dispatch name
  double check_error = -1;  // largest sampled error / largest value over o, lse, dq; -1 = not checked
  // with --stats: per attention kernel (dispatch name), the driver's statistics
  KernelStatsByName kernel_stats;
};

// The reference FLOPs of the forward (see above).
double attention_forward_flops(const AttentionCase& c);

MemoryNeed attention_memory(const AttentionCase& c);

std::vector<AttentionResult> run_attention_bench(vkblr::Context& ctx, const AttentionBenchOptions& options);
// A case that did not run, or whose --check failed.
bool failed(const AttentionResult& r);
std::string format_attention_result(const AttentionResult& r);
nlohmann::json to_json(const AttentionResult& r);

}  // namespace bench
