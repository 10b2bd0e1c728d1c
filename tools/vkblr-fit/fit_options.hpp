// fit_options.hpp — what a vkblr-fit run is asked to do (the command line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkblr-fit/init/init_paths.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/sign.hpp"

namespace vkblr::fit {

struct FitOptions {
  // inputs
  std::string weight_path;        // .safetensors or .npy; empty: synthetic
  std::string tensor;             // tensor name in a safetensors weight file
  std::string activations_path;   // .safetensors or .npy [T][n]; empty: synthetic
  std::string activations_tensor;
  // synthetic X: power-law decay of its covariance spectrum. 1 by default:
  // LLM activations are strongly correlated (covariance eigenvalues decay
  // like a power law; low effective rank) — with λ_i ∝ 1/i over n = 512
  // channels the participation ratio (Σλ)²/Σλ² is about 28. 0: independent
  // channels (isotropic but for the outlier channels). docs/sign-optimizer.md.
  double activation_decay = 1.0;
  std::uint32_t synthetic_m = 0, synthetic_n = 0;  // 0: chosen by device (lavapipe 512×512, GPUs 3584×1024)
  // the synthetic family (io/device_data.hpp's DataSpec::Family): "standard"
  // (power-law W, correlated X), "exponential" (an exponentially decaying
  // spectrum, independent X with outlier channels), "planted" (a blr layer
  // plus 1 % noise); synthetic_rank: the family's rank (0: the layer's)
  std::string synthetic = "standard";
  std::uint32_t synthetic_rank = 0;
  // where the tokens of X live (io/device_data.hpp): "auto" (device memory
  // when they take at most half of it), "device", "host" (read by the
  // device over the bus at every step)
  std::string x_memory = "auto";
  std::uint32_t tokens = 0;        // calibration tokens used for training; 0: 8 batches
  std::uint32_t held_out = 0;      // held-out tokens; 0: one batch
  std::uint32_t batch = 0;         // tokens per step; 0: by device (512 on a CPU device, 4096 on a GPU)
  std::uint32_t micro_batches = 1;  // parts of each rank's slice, accumulated before a step (fit_ranks.hpp)
  std::uint64_t seed = 1;

  // layer size: rank, or bits per weight (the rank is derived)
  std::uint32_t rank = 0;
  double bpw = 1.0;
  std::uint32_t paths = 2;
  ScaleDtype scale_dtype = ScaleDtype::f16;

  // init (init_paths.hpp): dual-svid, subspace, or best of both on the
  // training tokens
  InitMethod init = InitMethod::dual_svid;

  // training
  std::uint32_t steps = 0;  // 0: by device (300 on a CPU device, 2000 on a GPU)
  // warm-up steps of the cosine schedules (0: none); unset: 5% of the
  // steps, rounded down
  std::optional<std::uint32_t> warmup;
  // The defaults (Adam on the sign latents at 0.02 with no flip budget, no
  // refit) are the best overall of the recipe table in CHANGELOG.md, 2026-12-04
  // (three layer families, each optimizer, learning rates, budgets, refit).
  SignOpt sign_opt = SignOpt::adam;
  float sign_lr = 0.02f;  // 0: the signs stay as the init (and refit) left them
  float sign_beta1 = 0.9f, sign_beta2 = 0.999f, sign_eps = 1e-8f;
  float sign_clamp = 1.0f, sign_hyst = 0.0f, sign_tau = 0.25f;
  // where adam/fact latents start: "magnitude", s·min(latent_rms·a, clamp)
  // with a the Dual-SVID sign magnitude of dual_svid.hpp (s·tau after a
  // refit or another init); or "uniform", s·tau
  std::string latent_init = "magnitude";
  float latent_rms = 0.1f;
  float flip_budget = 0.0f;  // at most this fraction of signs flips per step (0: no cap)
  bool bf16_state = false;
  float scale_lr = 2e-3f;
  float scale_rel_floor = 0.0f;
  std::uint32_t eval_every = 0;  // held-out error every this many steps; 0: 20 points
  float gscale = 1024.0f;
  std::uint32_t refit_sweeps = 0;  // GPU refit sweeps after the init (refit/gpu_refit.hpp); 0: none

  // outputs
  std::string out = "vkblr-fit-out";  // prefix: <out>.safetensors, <out>.json, <out>.svg
  std::uint32_t checkpoint_every = 0;  // 0: no checkpoints; else <out>.ckpt every N steps
  std::string resume;                  // a checkpoint to continue from
  std::string eval;                    // a result file to re-evaluate (no training)
  bool quiet = false;
  bool json = false;  // the report on stdout

  // process
  bool validate = false;        // Khronos validation on; any message fails the run
  bool timing_barrier = false;  // under mpirun: a barrier before each gradient exchange (timing)
  std::vector<std::string> command_line;
};

}  // namespace vkblr::fit
