// vkblr/model/llama_trainer.hpp — whole-model distillation of a Llama-family
// student with blr projections from a dense teacher, one step recorded
// into a Graph and replayed.
//
// A step, on a batch of `sequences` windows of `seq` token ids:
//
//   student forward (LlamaForward's ops, keeping what the backward needs:
//     MemoryPlan below) → final hidden states h
//   teacher final hidden states h_T: gathered from a cache (rows of a
//     buffer the caller filled, e.g. with LlamaForward on the teacher once
//     per training window), or the teacher's forward run in the step
//   loss  Σ_t τ²·KL(softmax(z_T/τ) ‖ softmax(z/τ)) over the batch's tokens,
//     z = h·W_headᵀ (ops::kl_distill, vocabulary in slices)
//   backward through the final norm and every block in reverse: each blr
//     projection's backward (scale gradients dh, dℓ, dg; sign gradients
//     G_U, G_V into its sign matrices' kept buffers; BlrRoute below), the
//     dense ones' input gradient by the f16 GEMM on a transposed copy of
//     their plane
//   the non-finite guard over every gradient, then the sign optimizer on
//     every sign matrix (vkblr/sign.hpp, deferred) and Adam on every blr
//     layer's scales — or, in split mode, the gradients copied into a
//     host-visible GradientBlock for micro-batches and data parallelism.
//
// What is trained: the signs and scales of the student's blr projections.
// Embeddings, norms, the head and dense projections are frozen (their
// input gradients flow, no weight gradient is formed).
//
// Gradient scaling: the backward runs on the token-summed loss (each
// token's ∂ℓ/∂z = τ·(p_s − p_T)); blr and attention gradients are staged to
// f16 times a power of two, the loss scale; the optimizers multiply the
// summed gradients by 1 / tokens_per_step, so a step follows the gradient
// of the mean loss over the step's tokens (all micro-batches, all ranks).
// The loss scale is dynamic: it starts at `gscale`, halves after every step
// the guard skips (an f16 staging that overflowed leaves Inf/NaN, and the
// step changes nothing), and doubles back, to `gscale` at most, after
// `gscale_growth` applied steps in a row. Powers of two scale exactly, so
// the scale changes bits only where it keeps a value out of f16's range;
// it follows from the steps' outcomes alone: the same on every rank.
//
// Memory plan (MemoryPlan):
//   keep       every block's activations (inputs of its norms, q, k, v,
//              attention output and statistics, gate, up, SwiGLU output) and,
//              on the factored route, every blr layer's forward
//              intermediates (a, c per path) are kept from the forward: one
//              forward per step;
//   recompute  only each block's input is kept; the block's forward runs
//              again just before its backward, into one set of block
//              buffers and one blr scratch per layer shape: a second
//              forward of the blocks per step, activations of one block.
// Both give the same bits (the recomputed forward is the same dispatches
// on the same inputs).
//
// Determinism: every op is deterministic (fixed-order reductions, no float
// atomics); the same weights, batches and settings give the same bits, step
// after step, and a run resumed from state() gives the bits of the
// uninterrupted run. Split steps: k accumulate() calls then apply() train on
// (((0 + G₁) + G₂) + …) in call order, which is what N ranks summing their
// blocks in rank order with vkblr::mpi's allreduce give: N ranks with one
// micro-batch each ≡ one rank with N micro-batches, bit for bit.
//
// Ownership: the trainer borrows the student's and teacher's weights (they
// must outlive it; the student's blr layers are trained in place) and owns
// its activations, scratch, optimizer state and graphs. Dense student
// projections get a transposed f16 plane (Projection::plane_t) made here.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vkblr/context.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/sign.hpp"

namespace vkblr::model {

enum class MemoryPlan : std::uint8_t { keep, recompute };
const char* to_string(MemoryPlan plan) noexcept;
MemoryPlan memory_plan_from_string(const std::string& name);  // "keep", "recompute"; Error otherwise

// How the student's blr projections run (the same gradients to f16
// rounding, not the same bits):
//   dense     each use forms the layer's weight Ŵ and runs dense GEMMs, the
//             scale and sign gradients taken from dŴ = dyᵀ·x
//             (vkblr/blr_dense.hpp): far less data than the factored
//             passes at a step's many tokens. Layers whose m or n is not a
//             multiple of 32 run factored.
//   factored  blr_forward / blr_backward, path by path through the rank.
enum class BlrRoute : std::uint8_t { dense, factored };
const char* to_string(BlrRoute route) noexcept;
BlrRoute blr_route_from_string(const std::string& name);  // "dense", "factored"; Error otherwise

// The smallest dynamic loss scale (Gradient scaling above): a step skipped
// at it is not helped by a smaller one.
inline constexpr float kMinGscale = 0x1p-24f;

struct LlamaTrainConfig {
  MemoryPlan memory = MemoryPlan::keep;
  BlrRoute blr_route = BlrRoute::dense;
  float temperature = 1.0f;  // τ of the KL, finite > 0
  // The sign matrices (adam/fact/bop state; deferred is implied) and their
  // step. lr and step are set per step; grad_scale must stay 1 (the trainer
  // sets 1 / tokens_per_step).
  SignInit sign_init{.opt = SignOpt::adam, .tau = 0.1f};
  SignStep sign_step{.clamp = 1.0f};
  bool train_signs = true;
  // Adam on every blr layer's scales (lr and step set per step; grad_scale
  // is the trainer's, leave it at 1); train_h/l/g false freezes that kind.
  ops::AdamOptions scale_adam;
  bool train_h = true, train_l = true, train_g = true;
  float gscale = 64.0f;  // power of two: the first and largest loss scale (f16 staging of the backward)
  std::uint32_t gscale_growth = 200;  // applied steps in a row before the scale doubles; 0: it never halves either
  std::uint32_t logit_slice = 0;  // ops::LogitLossShape::slice (0: its default)
  // The tokens a step's mean is over: 0 = one batch's (sequences · seq);
  // split steps over k micro-batches (or ranks) of b tokens: k · b.
  std::uint32_t tokens_per_step = 0;
  // BlrShared lanes per projection slot, at least every layer's paths (so
  // that the projections of one input run side by side); the same bits for
  // any value
  std::uint32_t path_lanes = 2;
  bool split = false;            // accumulate()/apply() instead of step()
};

// What a step did.
struct LlamaStepResult {
  bool applied = true;     // false: a gradient held NaN/Inf; nothing changed
  std::uint32_t step = 0;  // the step number used (applied steps count from 1)
  double loss = 0;         // mean τ²·KL per token of the step's tokens
  std::uint32_t tokens = 0;
  float gscale = 0;        // the loss scale the step's backward ran at
};

// A split trainer's gradients in one host-visible f32 buffer, in this
// order: the loss sum (1 float, f32 sum of the micro-batches' token-summed
// losses), then every blr layer's scale_grads (layer order), then every
// sign matrix's kept gradient (sign_matrices() order). Sums over tokens:
// blocks of disjoint token sets add up to the block of their union.
struct LlamaGradientBlock {
  Buffer* buffer = nullptr;  // written by accumulate(), read by apply()
  std::uint64_t floats = 0;
};

class LlamaTrainer {
 public:
  // `student` (config `student_config`) has blr layers in place of the
  // projections to train (use_blr_layers), made with scale buffers
  // (make_blr_layer); `teacher` is a dense model with the same vocabulary
  // (its head gives the teacher's logits; its forward runs in every step
  // unless set_teacher_cache is given). `batch` is the shape of every step.
  // Throws vkblr::Error naming the value for a student without blr layers,
  // a vocabulary mismatch, a bad batch or setting.
  LlamaTrainer(Context& ctx, const io::LlamaConfig& student_config, LlamaWeights& student,
               const io::LlamaConfig& teacher_config, const LlamaWeights& teacher, const LlamaBatch& batch,
               const LlamaTrainConfig& config);
  ~LlamaTrainer();
  LlamaTrainer(const LlamaTrainer&) = delete;
  LlamaTrainer& operator=(const LlamaTrainer&) = delete;

  // The teacher's final hidden states come from rows of `hidden` f32
  // [rows][teacher hidden] (borrowed; it must outlive the trainer; rows ·
  // teacher hidden below 2^32): a step gathers row rows[t] for token t
  // instead of running the teacher's forward. The graphs are recorded anew.
  void set_teacher_cache(const Buffer& hidden, std::uint64_t rows);

  // Records the graphs of step (or accumulate/apply) and loss now, with
  // their pipelines and transient buffers, instead of at the first call
  // that needs them: a caller that times its steps calls it first, as
  // PyTorch's peer compiles before its clock starts. Recording again after
  // set_teacher_cache is automatic.
  void prepare();

  // One step on ids (u32 [tokens], sequence after sequence; each < vocab,
  // Error naming the position otherwise) and, with a cache, the cache row of
  // each token (Error for a row past the cache). One submit. Not split.
  LlamaStepResult step(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows,
                       float sign_lr, float scale_lr);

  // Split steps. accumulate: forward, loss and backward of one micro-batch,
  // its gradients added to the pending ones and the pending sum copied into
  // the block; returns the micro-batch's token-summed loss. apply: the
  // block as it is now (an all-reduce may have changed it) back into the
  // gradient buffers, the guard, the optimizer steps; the pending
  // gradients zeroed. Error when not split, or apply without accumulate.
  double accumulate(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows);
  LlamaStepResult apply(float sign_lr, float scale_lr);
  const LlamaGradientBlock& gradient_block() const;

  // The mean τ²·KL per token of a batch with the current weights (forward
  // and loss only; nothing changes).
  double loss(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows);

  std::uint32_t steps() const noexcept;    // applied steps
  std::uint32_t skipped() const noexcept;  // steps the guard skipped
  void set_steps(std::uint32_t applied, std::uint32_t skipped);  // resume

  // The dynamic loss scale (see Gradient scaling) the next step runs at, and
  // the applied steps in a row since it last changed. set_gscale (resume)
  // throws Error for a scale that is not a power of two in [kMinGscale, gscale],
  // or a count of gscale_growth or more (when gscale_growth is not 0).
  float gscale() const noexcept;
  std::uint32_t gscale_clean_steps() const noexcept;
  void set_gscale(float gscale, std::uint32_t clean_steps);

  // The trained layers' projection names, in the student's projection order
  // (blocks, then q k v o gate up down).
  std::vector<std::string> layer_names() const;
  // Every sign matrix, layer by layer in the student's projection order
  // (blocks, then q k v o gate up down), U0 V0 U1 V1 ... per layer.
  std::vector<SignMatrix*> sign_matrices();
  // Named state for checkpoints: every trained layer's bits and scales
  // ("<projection name>.path{p}.bits_u", ...) and the optimizer state (Adam
  // moments of the scales, every sign matrix's state). Restoring every
  // buffer, set_steps() and set_gscale() resumes bit for bit.
  std::vector<std::pair<std::string, Buffer*>> state();
  // Device bytes the trainer owns (activations, scratch, optimizer state,
  // graphs' transients), and of those the activations kept for the backward.
  std::uint64_t device_bytes() const;
  std::uint64_t activation_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkblr::model
