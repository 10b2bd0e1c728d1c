// train_steps.hpp — the train stage of a vkblr-fit run: the steps, the
// held-out evaluations between them (the curve and the best layer seen),
// the progress line and the checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "vkblr-fit/train/fit_checkpoint.hpp"
#include "vkblr-fit/fit_options.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/report/stages.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct TrainSteps {
  const FitOptions& options;  // resolved: steps, warm-up, rates, eval_every, checkpoint_every, batch
  FitTrainer& trainer;        // with its batches added
  BlrLayer& layer;            // the trainer's
  std::size_t batches = 1;    // training batches; step s trains on batch s mod batches
  // the held-out error of the layer as stored (collective)
  std::function<double()> held_out;
  // checkpoints every options.checkpoint_every steps but the last, to
  // `checkpoint` with resume key `key`; only where `writer` (rank 0)
  bool writer = true;
  std::string checkpoint;
  nlohmann::json key;
};

// Runs steps progress.next_step .. options.steps − 1 in one stage of
// `stages`. Evaluates every eval_every steps and after the last: appends
// to progress.curve and offers the layer to progress.best. Returns the
// training seconds of the whole fit (progress.train_s, of the steps before
// a resume, plus this run's); progress.next_step is left as it was.
// Throws what the steps throw (the skip guard's refusal).
double run_train_steps(Context& ctx, const TrainSteps& run, FitProgress& progress, StageProgress& stages);

// The sign flips of every sign matrix of `trainer` so far (the last step's
// included) and, when `oscillations` is given, their oscillations.
std::uint64_t total_flips(Context& ctx, BlrTrainer& trainer, std::uint64_t* oscillations);

}  // namespace vkblr::fit
