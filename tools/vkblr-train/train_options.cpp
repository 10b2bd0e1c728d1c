#include "vkblr-train/train_options.hpp"

#include <cmath>

#include "vkblr/error.hpp"

namespace vkblr::train {

const char* to_string(TeacherMode mode) noexcept {
  switch (mode) {
    case TeacherMode::automatic: return "auto";
    case TeacherMode::cache: return "cache";
    case TeacherMode::live: return "live";
  }
  return "?";
}

void check_train_options(const TrainOptions& o) {
  require(!o.model.empty(), "--model: name the checkpoint directory (config.json + safetensors), the teacher");
  require(!o.blr.empty() || !o.init.empty(),
          "--blr: name the initial blr layers (a vkblr-fit --manifest model file), or make them with --init dual-svid");
  require(o.blr.empty() || o.init.empty(), "--blr and --init: give one of them (the layers to start from)");
  require(o.init.empty() || o.bpw.has_value() != o.rank.has_value(),
          "--init {}: give the layers' size, --bpw B or --rank R (one of them)", o.init);
  require(!o.init.empty() || (!o.bpw && !o.rank), "--bpw and --rank go with --init (a --blr file has its ranks)");
  require(o.latent_init == "magnitude" || o.latent_init == "uniform", "--latent-init {}: want magnitude or uniform",
          o.latent_init);
  require(std::isfinite(o.latent_rms) && o.latent_rms >= 0 && o.latent_rms <= 1,
          "--latent-rms {}: want a number in [0, 1]", o.latent_rms);
  require(o.blr.empty() || o.latent_rms > 0, "--latent-rms {}: --blr's latents start at ±this; want it above 0",
          o.latent_rms);
  require(!o.bpw || (std::isfinite(*o.bpw) && *o.bpw > 0), "--bpw {}: want a positive number of bits per weight",
          o.bpw.value_or(0));
  require(!o.rank || (*o.rank >= 32 && *o.rank % 32 == 0), "--rank {}: want a positive multiple of 32",
          o.rank.value_or(0));
  require(!o.train.empty(), "--train: name the training token ids (.npy, 1-D stream or 2-D windows)");
  require(!o.held_out.empty(), "--held-out: name the held-out token stream (.npy, 1-D)");
  require(!o.out.empty(), "--out: name the output directory");
  require(o.batch % o.micro_batches == 0, "--batch {}: not a multiple of --micro-batches {} (every micro-batch "
          "takes the same number of windows)", o.batch, o.micro_batches);
  require(o.warmup < o.steps, "--warmup {}: want fewer warm-up steps than --steps {}", o.warmup, o.steps);
  const auto rate = [](const char* flag, float v) {
    require(std::isfinite(v) && v >= 0 && v <= 1, "{} {}: want a learning rate in [0, 1]", flag, v);
  };
  rate("--lr", o.lr);
  if (o.sign_lr) rate("--sign-lr", *o.sign_lr);
  if (o.scale_lr) rate("--scale-lr", *o.scale_lr);
  require(std::isfinite(o.temperature) && o.temperature > 0 && o.temperature <= 100,
          "--temperature {}: want a number in (0, 100]", o.temperature);
  require(std::isfinite(o.teacher_cache_fraction) && o.teacher_cache_fraction > 0 && o.teacher_cache_fraction <= 1,
          "--teacher-cache-fraction {}: want a fraction of device memory in (0, 1]", o.teacher_cache_fraction);
  require(o.eval_every <= o.steps, "--eval-every {}: more than --steps {} (the run ends before the first point)",
          o.eval_every, o.steps);
  require(o.checkpoint_every <= o.steps, "--checkpoint-every {}: more than --steps {} (no checkpoint would be written)",
          o.checkpoint_every, o.steps);
  require(o.prompt.empty() || o.prompt_ids.empty(), "--prompt and --prompt-ids: give one of them");
  require(o.sample > 0 || (o.prompt.empty() && o.prompt_ids.empty() && o.sample_seed == 0),
          "--prompt, --prompt-ids and --sample-seed go with --sample N");
}

}  // namespace vkblr::train
