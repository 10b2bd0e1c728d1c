// train_run.hpp — one vkblr-train run, from the checkpoint, the initial blr
// layers and the token data to OUT/ (the model file, report.json,
// curve.svg; checkpoints): README.md describes it.
//
// Stages (each on the progress display, its wall and device time in the
// report): load (the checkpoint, the blr file, the tokens; the teacher's
// and the student's weights uploaded, the student's frozen parts views of
// the teacher's buffers), teacher (its held-out figures, then its final
// hidden states of every training window into one device buffer when that
// fits the budget), init-eval (the student as the blr file has it), prepare
// (the step's graphs and pipelines, outside the training clock), train
// (steps of LlamaTrainer, with eval every --eval-every steps and at the
// end; checkpoints), sample (--sample), write.
//
// Every held-out figure of the student is that of the model file it would
// write: its scales rounded to f16 in place for the measure, restored
// after it.
#pragma once

#include <nlohmann/json.hpp>

#include "vkblr-train/train_options.hpp"
#include "vkblr-train/train_ranks.hpp"
#include "vkblr/context.hpp"

namespace vkblr::train {

// Runs the training and writes the outputs (rank 0); returns the report.
// Throws vkblr::Error naming the file or field for bad inputs, and the
// engine's errors.
nlohmann::json run_train(Context& ctx, const TrainOptions& options, TrainRanks& ranks);

// The schedule's factor of step `step` (from 0) of `steps`: linear warm-up
// (step + 1) / warmup over the first `warmup` steps, then cosine decay
// ½(1 + cos(π (step − warmup) / max(1, steps − warmup))), as
// tools/lab/qat_peer.py (in f64, then rounded to f32 with the rate).
double lr_factor(std::uint32_t step, std::uint32_t steps, std::uint32_t warmup);

}  // namespace vkblr::train
