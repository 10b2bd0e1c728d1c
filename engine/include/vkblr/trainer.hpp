// vkblr/trainer.hpp — one training step of a blr layer as one replayed Graph.
//
// BlrTrainer distils a layer towards target outputs: per step it records
//
//   y = blr_forward(x)                       dy = (y − target) / loss_norm
//   blr_backward(x, dy): dh, dℓ, dg, and G_U, G_V of every path
//   the non-finite guard over every gradient (sumsq partials → finite_guard)
//   one SignMatrix step per sign matrix, then Adam over all scales (adam_cat)
//
// once per batch into a Graph, and replays it: a step is one submit. The
// step number and the learning rates live in a small host-visible buffer
// the trainer writes before each replay (ops::LiveScalars), so nothing is
// re-recorded. A step whose gradients hold NaN or Inf changes nothing — the
// guard sets the skip word every optimizer dispatch of the step reads — and
// is reported (StepResult::applied = false); its step number is reused.
//
// The sign gradients are formed completely before any sign moves (the
// guard must see them all), so the sign matrices run in deferred mode with
// one micro-batch: bit for bit what an immediate step gives.
//
// Ownership: the trainer borrows the layer and the batch buffers (they must
// outlive it) and owns the optimizer state, the graphs and the scratch.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/recorder.hpp"
#include "vkblr/sign.hpp"

namespace vkblr {

struct BlrTrainerConfig {
  SignInit sign_init;              // per sign matrix (deferred is implied)
  SignStep sign_step;              // hyperparameters; lr and step are set per step
  ops::AdamOptions scale_adam;     // Adam of h, ℓ, g; lr and step are set per step
  float scale_rel_floor = 0.0f;    // > 0: relative Adam steps on the scales
  bool train_h = true, train_l = true, train_g = true;  // false freezes that kind of scale
  float gscale = 1024.0f;          // power of two (BlrBackward)
  float loss_norm = 1.0f;          // L = ½‖y − target‖² / loss_norm
  // Debugging: record a batch's step anew for every step instead of
  // replaying its Graph (the same work, fresh command buffers).
  bool record_every_step = false;
};

struct StepResult {
  bool applied = true;       // false: non-finite gradients, nothing changed
  std::uint32_t step = 0;    // the step number used (counts applied steps from 1)
  double sq_error = 0;       // ‖y − target‖² before the update
  double loss = 0;           // ½·sq_error / loss_norm
};

class BlrTrainer {
 public:
  BlrTrainer(Context& ctx, BlrLayer& layer, std::uint32_t ntok, const BlrTrainerConfig& config);
  ~BlrTrainer();
  BlrTrainer(const BlrTrainer&) = delete;
  BlrTrainer& operator=(const BlrTrainer&) = delete;

  // A training batch: x f32 [ntok][n], target f32 [ntok][m] (read each time
  // the step runs). Records its step graph; returns its index.
  std::size_t add_batch(const Buffer& x, const Buffer& target);
  // An evaluation batch (forward and squared error only).
  std::size_t add_eval_batch(const Buffer& x, const Buffer& target);

  // One step on training batch `batch` with these learning rates: one submit.
  StepResult step(std::size_t batch, float sign_lr, float scale_lr);
  // ‖y − target‖² of evaluation batch `batch` with the current layer.
  double eval(std::size_t batch);

  std::uint32_t steps() const noexcept;  // applied steps so far
  std::uint32_t skipped() const noexcept;
  // Sign matrices in the order U0, V0, U1, V1, ...
  std::vector<SignMatrix>& signs() noexcept;
  // Named optimizer state (scale moments, every sign matrix's state), for
  // checkpoints; with steps() and the layer's bits and scales it is
  // everything a resumed run needs.
  std::vector<std::pair<std::string, Buffer*>> state();
  // Restores the step counter (checkpoint resume).
  void set_steps(std::uint32_t applied, std::uint32_t skipped);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkblr
