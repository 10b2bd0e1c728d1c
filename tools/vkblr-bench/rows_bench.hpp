// rows_bench.hpp — `vkblr-bench rows`: median GPU time and achieved GB/s of
// the row-wise transformer ops (RMSNorm, SwiGLU, token embedding, RoPE on
// q and k) at the
// shapes of three Llama-architecture models, each beside a plain copy
// (ops::copy) of its largest tensor: the bandwidth these memory-bound ops
// can reach on the device. The target is of_copy >= 0.7.
//
// An op of several dispatches (RMSNorm's and the embedding's backward) is
// timed as the sum of their GPU times; per_name_ms gives each dispatch name's
// mean, and --stats adds each kernel's compiler statistics (registers,
// shared memory: what decides how many workgroups share a multiprocessor).
//
// Bytes are the op's compulsory traffic: every tensor it must read or
// write, once (an RMSNorm's weight and inv_rms included; its backward's
// block partials, a few percent at most, not). tools/lab/rows_torch.py
// times the same cases in PyTorch.
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

#include "kernel_stats_report.hpp"
#include "timing.hpp"

namespace bench {

// The dimensions of a model the cases take their shapes from.
struct RowsModel {
  std::string name;
  std::uint32_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, inter = 0, vocab = 0;
  std::uint32_t tokens = 0;    // the default batch: tokens of all its sequences together
  std::uint32_t sequence = 0;  // tokens of one sequence: RoPE's positions run 0..sequence−1, then again
  double rope_base = 0;
};

// ref (the reference model: hidden 512, 8 heads of 64, 4 KV heads, MLP
// 1536, vocab 272, RoPE base 10^4; 4 sequences of 1024), qwen-0.5b (896,
// 14 heads of 64, 2 KV, 4864, 151936, 10^6; one sequence of 4096), llama-8b
// (4096, 32 heads of 128, 8 KV, 14336, 128256, 5·10^5; one sequence of
// 4096).
const std::vector<RowsModel>& rows_models();
// The ops `rows` times, in order.
const std::vector<std::string>& rows_ops();

struct RowsBenchOptions {
  std::vector<std::string> models;  // names from rows_models(); empty: all
  std::vector<std::string> ops;     // names from rows_ops(); empty: all
  std::uint32_t tokens = 0;         // 0: each model's default
  std::uint32_t warmup = 5;
  std::uint32_t reps = 30;
  bool quiet = false;
  bool stats = false;  // kernel statistics (the context must keep them)
};

struct RowsResult {
  std::string model, op, shape, error;
  std::uint32_t tokens = 0;
  double bytes = 0;             // compulsory traffic of one run
  Stats stats;
  double gbps = 0;              // bytes / median time
  double copy_elements = 0;     // the copy it is compared with: this many f32 read and written
  double copy_gbps = 0;
  double of_copy = 0;           // gbps / copy_gbps
  std::map<std::string, double> per_name_ms;  // mean GPU time per rep of each dispatch name, over the timed run
  // with stats: per dispatch name, the driver's statistics
  KernelStatsByName kernel_stats;
};

bool failed(const RowsResult& r);
std::vector<RowsResult> run_rows_bench(vkblr::Context& ctx, const RowsBenchOptions& options);
std::string format_rows_result(const RowsResult& r);
nlohmann::json to_json(const RowsResult& r);

}  // namespace bench
