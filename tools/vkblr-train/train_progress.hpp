// train_progress.hpp — what a vkblr-train run has measured so far: the
// held-out figures, the curve, the per-step losses and counters. The
// report is made from it, and a checkpoint stores it (as JSON: numbers
// round-trip exactly, so a resumed run reports the uninterrupted run's).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "vkblr/model/held_out.hpp"

namespace vkblr::train {

// evaluate.py's figures of one model on the held-out stream.
struct HeldOut {
  std::uint64_t tokens_scored = 0, windows = 0, bytes = 0;
  double loss_nats = 0, perplexity = 0, bits_per_token = 0, bits_per_byte = 0;
};
HeldOut held_out_figures(const model::HeldOutResult& r, std::uint64_t text_bytes);
nlohmann::json to_json(const HeldOut& h);
// Throws vkblr::Error naming `where` and the field for a malformed object.
HeldOut held_out_from_json(const nlohmann::json& j, const std::string& where);

struct CurvePoint {
  std::uint32_t step = 0;     // steps run (applied or skipped) when measured
  std::uint64_t tokens = 0;   // training tokens of those steps
  double train_s = 0;         // training wall time so far, evaluations and checkpoints excluded
  HeldOut held_out;
};

struct TrainProgress {
  std::uint32_t next_step = 0;  // steps run so far (the next one's index from 0)
  std::uint32_t applied = 0, skipped = 0;
  // the trainer's dynamic loss scale and its applied steps in a row
  // (LlamaTrainer::gscale); 0 in checkpoints written before it was kept:
  // the trainer's own start
  float gscale = 0;
  std::uint32_t gscale_clean = 0;
  double train_s = 0;
  HeldOut teacher, init;
  std::vector<CurvePoint> curve;
  std::vector<double> losses;  // mean τ²·KL per token of every step run
};

nlohmann::json to_json(const TrainProgress& p);
// Throws vkblr::Error naming `where` and the field: a missing or mistyped
// field, counters that do not add up (applied + skipped ≠ next_step, as
// many losses as steps), curve steps not increasing within (0, next_step].
TrainProgress progress_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace vkblr::train
