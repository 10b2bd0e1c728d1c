// model_bench.hpp — `vkblr-bench model`: whole-model distillation steps
// (vkblr::model::LlamaTrainer) on a random Llama of a named shape, every
// projection of its blocks a blr layer at a given bpw: tokens per second of
// wall time (one submit and wait per step: what a training loop sees), the
// device memory the trainer holds, and the weights'.
//
// Models: `ref` (the reference model: hidden 512, 8 blocks, 8 heads of 64 on
// 4 KV heads, MLP 1536, vocabulary 272, 1024 positions), `qwen0.5b`
// (Qwen2.5-0.5B's shapes as a Llama: hidden 896, 24 blocks, 14 heads of 64
// on 2 KV heads, MLP 4864, vocabulary 151936, tied embeddings), `llama8b`
// (hidden 4096, 32 blocks, 32 heads of 128 on 8, MLP 14336, vocabulary
// 128256). The teacher is a dense random model of the same shape; its
// final hidden states come from a cache (the peer's teacher pass is done
// once up front too) or its forward runs in every step (`live`).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <vkblr/io/llama_config.hpp>
#include <vkblr/model/llama_trainer.hpp>
#include <vkblr/vkblr.hpp>

#include "timing.hpp"

namespace bench {

struct ModelCase {
  std::string model;  // ref, qwen0.5b, llama8b
  vkblr::model::LlamaBatch batch;
  vkblr::model::MemoryPlan memory = vkblr::model::MemoryPlan::keep;
  vkblr::model::BlrRoute route = vkblr::model::BlrRoute::dense;
};

struct ModelBenchOptions {
  std::vector<ModelCase> cases;
  double bpw = 1.0;
  std::uint32_t paths = 2;
  bool live_teacher = false;
  std::uint32_t warmup = 3;
  std::uint32_t steps = 20;  // timed
  bool profile = false;      // then GPU time per dispatch name, from a second trainer
  std::string trace;         // --profile: the profiled steps as a Chrome trace here ("" none)
  bool quiet = false;
};

struct ModelResult {
  ModelCase c;
  bool live_teacher = false;
  std::string error;
  Stats step_wall;  // ms per step
  double tokens_per_s = 0;
  double first_loss = 0, last_loss = 0;  // the KL of the first and last timed steps
  std::uint64_t trainer_bytes = 0, activation_bytes = 0;
  double weights_bytes = 0;  // student and teacher, as uploaded
  std::uint32_t blr_layers = 0;
  std::map<std::string, double> per_name_ms;  // --profile: GPU ms per step by dispatch name ("tag/name" too)
  // --profile: each instant of a step's submit shared equally by the
  // dispatches running then, summed per name (ms per step; they add up to
  // the submit's busy time), the busy time and the gaps with none running.
  std::map<std::string, double> exclusive_ms;
  double busy_ms = 0, idle_ms = 0;
};

// The config of a named model shape; throws std::invalid_argument for
// another name.
vkblr::io::LlamaConfig model_config(const std::string& name);
// "MODEL,SEQUENCESxSEQ[,keep|recompute]"; throws std::invalid_argument.
ModelCase parse_model_case(const std::string& text);

std::vector<ModelResult> run_model_bench(vkblr::Context& ctx, const ModelBenchOptions& options);
inline bool failed(const ModelResult& r) { return !r.error.empty(); }
std::string format_model_result(const ModelResult& r);
nlohmann::json to_json(const ModelResult& r);

}  // namespace bench
