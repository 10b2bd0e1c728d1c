// train_checkpoint.hpp — vkblr-train's checkpoints (--checkpoint-every N:
// OUT/checkpoint.safetensors, written atomically; --resume FILE).
//
// A checkpoint (vkblr/io/checkpoint.hpp's file: arrays and metadata under
// checksums) holds every buffer of LlamaTrainer::state() as u32 words, bit
// for bit (the student's bits and scales, the Adam moments of the scales,
// every sign matrix's latents, moments and counters), and as metadata:
// "tool" "vkblr-train", the resume key (every setting and input the result
// depends on, train_run.cpp's resume_key), the progress (train_progress.hpp:
// steps run, applied and skipped, the curve, the losses) and the data
// order's position (pass and window, a function of the step: token_windows.hpp).
// Restoring every buffer and the counters resumes the uninterrupted run
// bit for bit.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "vkblr-train/train_progress.hpp"
#include "vkblr/buffer.hpp"

namespace vkblr::train {

using StateBuffers = std::vector<std::pair<std::string, Buffer*>>;

// Downloads every state buffer and writes the checkpoint atomically.
void write_train_checkpoint(const std::string& path, const nlohmann::json& key, const nlohmann::json& data_order,
                            const TrainProgress& progress, const StateBuffers& state);

// Reads `path`, checks it, and only then uploads every state buffer;
// returns the progress. Throws vkblr::Error naming the file and what is
// wrong, before changing anything: not a checkpoint (or not vkblr-train's),
// checksums, a resume key other than `key` (naming each field that
// differs, with both values), progress that does not fit (next_step not in
// [1, steps)), a state buffer missing or of another size, an array the run
// does not have.
TrainProgress restore_train_checkpoint(const std::string& path, const nlohmann::json& key, std::uint32_t steps,
                                       const StateBuffers& state);

}  // namespace vkblr::train
