// loss_bench.hpp — `vkblr-bench loss`: one training step's loss over a
// large vocabulary (vkblr/ops/logit_loss.hpp: cross_entropy, or kl_distill
// with --kl), value and both gradients, per (tokens, hidden, vocab) and
// slice size. Reports the step's time, the effective rate (the model's
// FLOPs, 6·tokens·vocab·hidden for the cross-entropy, over the time), the
// GEMMs' own rate, and the memory-bound dispatches' bandwidth against a
// plain copy kernel's on the same device (the op's target: >= 0.7× of it).
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

#include "memory_need.hpp"
#include "timing.hpp"

namespace bench {

// tokens (batch · sequence), hidden, vocab.
struct LossCase {
  std::uint32_t tokens = 0, hidden = 0, vocab = 0;
};

// "tokens,hidden,vocab" with the op's rules: each >= 1, hidden a multiple of
// 16; throws std::invalid_argument naming the text and the rule.
LossCase parse_loss_case(const std::string& text);
// A slice size: a multiple of 32, or 0 (the whole vocabulary in one slice).
std::uint32_t parse_loss_slice(const std::string& text);

struct LossBenchOptions {
  std::vector<LossCase> cases;
  std::vector<std::uint32_t> slices;  // 0: the whole vocabulary
  bool kl = false;                    // kl_distill instead of cross_entropy
  std::uint32_t teacher_hidden = 0;   // kl: the teacher's width (0: the student's)
  std::uint32_t warmup = 3;
  std::uint32_t reps = 10;
  bool quiet = false;
};

struct LossResult {
  LossCase c{};
  std::uint32_t slice = 0;   // as asked (0: whole)
  std::uint32_t slices = 0;  // slices the vocabulary was cut into
  bool kl = false;
  std::uint32_t teacher_hidden = 0;
  std::string error;
  Stats span;            // per step: first dispatch start to last dispatch end (profiled)
  Stats busy;            // per step: sum of dispatch times (profiled)
  double replay_ms = 0;  // per step: wall time of an unprofiled replay of `reps` steps / reps
  double model_tflops = 0;  // 6·N·V·H (+ 2·N·V·H_T for the KL's teacher) / replay time
  double gemm_ms = 0, gemm_tflops = 0;  // per step: the GEMMs' time, the FLOPs they execute over it
  double memory_ms = 0, memory_bytes = 0, memory_gbs = 0;  // the memory-bound dispatches
  double copy_gbs = 0;                                      // the plain copy kernel's bandwidth
  std::uint64_t scratch_bytes = 0;
  std::uint32_t dispatches = 0, barriers = 0;
  float loss = 0;  // the step's mean loss (a sanity figure)
  std::map<std::string, double> per_name_ms;  // per step: GPU time of each dispatch name
};

// What one case allocates (memory_need.hpp).
MemoryNeed loss_memory(const LossCase& c, std::uint32_t slice, bool kl, std::uint32_t teacher_hidden);

// The bandwidth of a plain f32 copy (scale_acc: out = a · col, one read and
// one write per element) over `floats` elements, in GB/s.
double copy_bandwidth(vkblr::Context& ctx, std::uint64_t floats, std::uint32_t warmup, std::uint32_t reps);
// The loss and AdamW benches' baseline: copy_bandwidth over 256 MiB each
// way (64 MiB on a CPU device), well past a GPU's last-level cache, at
// least 20 reps; printed unless quiet; 0 when it fails (the message
// printed unless quiet).
double copy_baseline(vkblr::Context& ctx, std::uint32_t warmup, std::uint32_t reps, bool quiet);

std::vector<LossResult> run_loss_bench(vkblr::Context& ctx, const LossBenchOptions& options);
inline bool failed(const LossResult& r) { return !r.error.empty(); }
std::string format_loss_result(const LossResult& r);
nlohmann::json to_json(const LossResult& r);

}  // namespace bench
