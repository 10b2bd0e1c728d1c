// train_options.hpp — what a vkblr-train run is told on its command line,
// and the checks of those values that need no file (a failure is bad usage,
// exit 2). Checks against the model and the data (a context longer than the
// model's positions, windows of another length) come when those are read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkblr/model/llama_trainer.hpp"

namespace vkblr::train {

enum class TeacherMode : std::uint8_t { automatic, cache, live };
const char* to_string(TeacherMode mode) noexcept;

struct TrainOptions {
  // Inputs.
  std::string model;     // --model DIR: the teacher, and the student's dense parts
  std::string blr;       // --blr FILE: the initial blr layers (vkblr-fit model file), or
  std::string init;      // --init dual-svid: made from the checkpoint (dual_svid_start.hpp)
  std::optional<double> bpw;          // --init's rank: by bits per weight, or
  std::optional<std::uint32_t> rank;  // given
  std::uint32_t paths = 2;            // --init's paths
  // --init: where the sign latents start: "magnitude" (each at its
  // Dual-SVID factor entry's size, s·min(latent_rms·|U′_ij|/rms(U′), 1), as
  // vkblr-fit's --latent-init magnitude) or "uniform" (s·0.1)
  std::string latent_init = "magnitude";
  // --init magnitude: the latents' rms before the clamp; --blr: every
  // latent starts at s·latent_rms (> 0)
  float latent_rms = 0.1f;
  std::string train;     // --train FILE.npy: a 1-D stream or 2-D [windows][context]
  std::string held_out;  // --held-out FILE.npy: a 1-D stream
  std::optional<std::uint64_t> held_out_bytes;  // else tokens.json beside --held-out
  std::uint32_t windows = 0;  // --windows: drawn from a 1-D stream (0: not given)
  std::uint32_t context = 0;  // --context: 0 = the model's max_position_embeddings
  std::string out;            // --out DIR
  // Training.
  std::uint32_t steps = 100;
  std::uint32_t batch = 8;  // windows per step
  float lr = 1e-3f;
  std::optional<float> sign_lr, scale_lr;  // overrides of --lr
  std::uint32_t warmup = 0;
  float temperature = 1.0f;
  model::MemoryPlan memory = model::MemoryPlan::keep;
  model::BlrRoute blr_route = model::BlrRoute::dense;
  std::uint64_t seed = 1;
  std::uint32_t micro_batches = 1;
  TeacherMode teacher = TeacherMode::automatic;
  double teacher_cache_fraction = 0.25;  // automatic: the cache when it takes at most this of device memory
  // Measures and files.
  std::uint32_t eval_every = 0;  // 0: 10 points over the run
  std::uint32_t eval_batch = 8;  // windows per forward of the held-out measure (evaluate.py's 8)
  std::uint32_t checkpoint_every = 0;
  std::string resume;
  std::uint32_t sample = 0;  // tokens generated after training
  std::string prompt;
  std::vector<std::uint32_t> prompt_ids;
  std::uint64_t sample_seed = 0;  // 0: greedy; else sampled from softmax with this seed
  bool quiet = false;
  bool json = false;
  bool validate = false;
  std::vector<std::string> command_line;

  float sign_rate() const { return sign_lr.value_or(lr); }
  float scale_rate() const { return scale_lr.value_or(lr); }
};

// Throws vkblr::Error naming the flag for values no run can use: missing
// inputs, a batch not a multiple of --micro-batches, a warm-up longer than
// the run, a learning rate or temperature that is not finite and positive
// (a learning rate of 0 is allowed: that kind is frozen), --prompt with
// --prompt-ids, ...
void check_train_options(const TrainOptions& options);

}  // namespace vkblr::train
