// fit_checkpoint.hpp — vkblr-fit's training checkpoints (<out>.ckpt): what
// they hold, the key a resumed run must match, and the checks of their
// content.
//
// A checkpoint (checkpoint.hpp's file, every array and the metadata under
// checksums) holds the layer's bits and scales, every optimizer state
// buffer of the trainer, the best layer seen so far (best_layer.hpp), and
// as metadata the resume key, the next step, the applied and skipped step
// counts, the held-out curve so far, the init's errors, the training time
// and where the best layer comes from.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/report/curve.hpp"
#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/report/report.hpp"
#include "vkblr/trainer.hpp"

namespace vkblr::fit {

// A fit's progress: what a checkpoint restores besides the device state.
struct FitProgress {
  std::uint32_t next_step = 0;  // the first step still to run
  std::vector<CurvePoint> curve;
  ErrorSummary init;
  double train_s = 0;
  BestLayer best;
};

// Everything a checkpoint must have been made with for `options` (resolved)
// to resume it: the layer's shape, the token counts, every option that
// changes the result (seeds, schedules, optimizer settings, init, refit,
// scale dtype, evaluation interval), the input file and tensor names, the
// synthetic data's parameters, and the checksums of W and X as read.
// Not the rank count or --micro-batches (a checkpoint resumes with any).
nlohmann::json resume_key(const FitOptions& options, const LayerShape& shape, const InputChecksums& inputs);

// "steps 300 (this run: 200); weight_xxh3 ... (this run: ...)": the
// entries of two keys (JSON objects) that differ, at most 12 of them.
std::string key_differences(const nlohmann::json& recorded, const nlohmann::json& wanted);

// Writes the checkpoint of `layer`, `trainer` and `progress` atomically.
void write_fit_checkpoint(const std::string& path, const nlohmann::json& key, BlrLayer& layer, BlrTrainer& trainer,
                          const FitProgress& progress);

// Reads the checkpoint `path` and restores `layer` and `trainer` from it;
// returns the progress. Throws vkblr::Error naming the file and what is
// wrong, before changing anything, when the file is not a checkpoint or
// does not match its checksums, when its key is not `key` (the message
// lists the entries that differ), or when its content is not what a run
// of `options` writes: next_step in [1, steps), applied + skipped =
// next_step, curve points in increasing step order within (0, next_step]
// with finite errors, every scale and floating-point optimizer state
// finite (second moments not negative), every array present with its
// size and no other, the best layer's step and origin consistent.
FitProgress restore_fit_checkpoint(const std::string& path, const nlohmann::json& key, const FitOptions& options,
                                   const LayerShape& shape, BlrLayer& layer, BlrTrainer& trainer);

}  // namespace vkblr::fit
