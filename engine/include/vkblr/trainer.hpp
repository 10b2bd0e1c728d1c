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
// Split steps (BlrTrainerConfig::split): a step's two halves are separate
// graphs, with the gradients in a host-visible GradientBlock between them,
// for data-parallel training (vkblr/mpi.hpp all-reduces the block across
// ranks) and micro-batches:
//
//   accumulate(batch)  graph A (one per batch): forward, loss, backward; the
//                      gradients ADD to the pending ones (zero after the
//                      last apply) and are copied into the block
//   (the caller may change the block: an all-reduce, say)
//   apply(lrs)         graph B (one): copies the block back into the
//                      gradient buffers, then the guard, the sign steps and
//                      Adam; zeroes the pending gradients
//
// k accumulate() calls then apply() train on the sum of k batches'
// gradients, accumulated on the device in call order: (0 + G₁) + G₂ + ...
// A step is two submits; accumulate(b) then apply() is bit for bit what
// step(b) of an unsplit trainer does.
//
// Ownership: the trainer borrows the layer and the batch buffers (they must
// outlive it and stay where they are) and owns the optimizer state, the
// graphs, the scratch and the sign gradients: the sign matrices' kept
// gradients, which it hands to blr_backward explicitly (BlrSignGrads). It
// takes the layer as const: it never changes the BlrLayer object (its
// buffers, views and fields stay as they were, the paths' g_u/g_v included,
// unused by the trainer: make the layer without sign_grads), and its graphs
// write only the device contents of the layer's bits, scales and
// scale_grads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/recorder.hpp"
#include "vkblr/sign.hpp"

namespace vkblr {

struct BlrTrainerConfig {
  SignInit sign_init;              // per sign matrix (deferred is implied)
  // Hyperparameters. lr and step are set per step; grad_scale is the
  // trainer's: it sets it to loss_norm, so the sign optimizer sees the
  // gradient of ½‖y − target‖² whatever the normalisation (eps, and bop's
  // tau, are in those units). Leave grad_scale at 1: any other value is
  // refused (Error naming sign_step.grad_scale and the value).
  SignStep sign_step;
  ops::AdamOptions scale_adam;     // Adam of h, ℓ, g; lr and step are set per step
  float scale_rel_floor = 0.0f;    // > 0: relative Adam steps on the scales
  bool train_h = true, train_l = true, train_g = true;  // false freezes that kind of scale
  // false: the signs stay as they are: no sign matrices, no sign
  // gradients, no sign steps (a step is then forward, backward and Adam)
  bool train_signs = true;
  float gscale = 1024.0f;          // power of two (BlrBackward)
  // paths recorded side by side (BlrScratch's lanes; 1: path after path,
  // the least memory); the bits are the same for every value
  std::uint32_t path_lanes = 2;
  float loss_norm = 1.0f;          // L = ½‖y − target‖² / loss_norm; > 0, finite
  // Debugging: record a batch's step anew for every step instead of
  // replaying its Graph (the same work, fresh command buffers).
  bool record_every_step = false;
  // Split steps: accumulate() and apply() instead of one graph per step.
  bool split = false;
};

// A split trainer's gradients in one contiguous host_buffer (f32; offsets
// and lengths in elements), in this order:
//   loss      [kLossPartials]  partials of ‖y − target‖² (sumsq's order), summed
//                              in f32 over the accumulate() calls of the step
//   scales    [scale_count]    layer.scale_grads (same layout, padding zero)
//   signs[i]  [rows·r]         sign matrix i's kept gradient G (order of signs())
// Every entry is a sum over tokens, so blocks of disjoint token sets add up
// to the block of their union.
struct GradientBlock {
  static constexpr std::uint32_t kLossPartials = 64;
  Buffer* buffer = nullptr;  // what accumulate() writes: floats × 4 bytes, mapped
  Buffer* summed = nullptr;  // what apply() reads: `buffer` unless use_external_blocks
  std::uint32_t floats = 0;
  std::uint32_t loss = 0;    // offset of the loss partials (0)
  std::uint32_t scales = 0;  // offset of the scale gradients
  std::vector<std::uint32_t> signs;  // offset of each sign matrix's G
};

// The element type of a batch's inputs x.
enum class BatchInput { f32, f16 };

struct StepResult {
  bool applied = true;       // false: non-finite gradients, nothing changed
  std::uint32_t step = 0;    // the step number used (counts applied steps from 1)
  double sq_error = 0;       // ‖y − target‖² before the update
  double loss = 0;           // ½·sq_error / loss_norm
};

class BlrTrainer {
 public:
  BlrTrainer(Context& ctx, const BlrLayer& layer, std::uint32_t ntok, const BlrTrainerConfig& config);
  ~BlrTrainer();
  BlrTrainer(const BlrTrainer&) = delete;
  BlrTrainer& operator=(const BlrTrainer&) = delete;

  // A training batch: x [ntok][n] (f32, or f16 with BatchInput::f16),
  // target f32 [ntok][m] (read each time the step runs). Records its step
  // graph; returns its index. f16 inputs are widened exactly into a
  // trainer-owned f32 buffer as the graph's first dispatch: the step is bit
  // for bit the step on an f32 batch of the same values (half the memory
  // for data kept on the device as f16).
  std::size_t add_batch(const Buffer& x, const Buffer& target, BatchInput input = BatchInput::f32);
  // An evaluation batch (forward and squared error only).
  std::size_t add_eval_batch(const Buffer& x, const Buffer& target, BatchInput input = BatchInput::f32);

  // One step on training batch `batch` with these learning rates: one
  // submit (split: accumulate(batch) then apply(), two submits).
  StepResult step(std::size_t batch, float sign_lr, float scale_lr);

  // Split steps only (Error otherwise). accumulate: graph A of training
  // batch `batch`; returns that batch's ‖y − target‖². On return the
  // block's device writes are visible through its mapped pointer.
  double accumulate(std::size_t batch);
  // Graph B on the block as it is now (flushes it first): the step's loss
  // is read from the block's loss partials. Error when no accumulate()
  // preceded it since the last apply().
  StepResult apply(float sign_lr, float scale_lr);
  // The block (split only; Error otherwise). Change it only between
  // accumulate() and apply().
  const GradientBlock& gradient_block() const;
  // Split only: graph A's copies and accumulate()'s loss partials go to
  // `out`, graph B's copies and apply()'s loss come from `in`, instead of
  // the trainer's own block (freed): host-visible buffers of
  // gradient_block().floats × 4 bytes, borrowed (they must outlive the
  // trainer), e.g. Context::import_host_memory over memory that MPI ranks
  // share. Between accumulate() and apply() the caller fills `in` (the sum
  // of every rank's `out`, say). Throws Error after add_batch(), for a
  // buffer of another size or one that is not host-visible.
  void use_external_blocks(Buffer& out, Buffer& in);
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
