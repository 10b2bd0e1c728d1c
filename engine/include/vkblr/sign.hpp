// vkblr/sign.hpp — the sign optimizer: ±1 matrices that learn.
//
// Each sign matrix S (rows × r, a bitmap u32 [rows][r/32] shared with the
// blr layer and updated in place on the GPU) gets state chosen by `opt`:
//
//   adam  latent w, moments m, v           12 B/sign (f32), 6 B/sign (bf16)
//   fact  latent w, moment m, and a second moment factored per row R[rows]
//         and per rank column C[r] (Adafactor): v̂_ij = R_i·C_j / Σ_i R_i
//                                           ~8 B/sign (f32), ~4 B (bf16)
//   bop   no latent: m = EMA of G; a sign flips where s·m > τ (flipping s
//         lowers the loss by ≈ 2·s·G to first order)    4 B/sign, 2 B (bf16)
//
// adam/fact step, per sign, with gradient G (G_U or G_V of blr_backward):
//   g = G·grad_scale; m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²  (fact: R, C)
//   w = clamp(w − lr·m̂/(√v̂ + ε), −clamp, +clamp)   (m̂, v̂ bias-corrected)
//   s = +1 if w > +hyst, −1 if w < −hyst, else unchanged (hysteresis)
// fact's v̂_ij = (R_i·C_j / Σ_i R_i) / (1 − β2^t) with R_i, C_j EMAs of the
// row and column sums of g² (0 while Σ_i R_i = 0); bop uses grad_scale, β1
// and τ only.
// Latents start at w = s·τ from the current bits. With bf16 state, every
// stored value (latent, moments; fact's R and C stay f32) is rounded
// stochastically from a counter-based generator of (seed, matrix id, step,
// element, field): deterministic for a given seed. Decisions read the
// values as stored; with bf16, |w| <= clamp rounded up to a bf16.
// docs/sign-optimizer.md has the details.
//
// Flip budget: at most K = ceil(budget · rows · r) signs flip in a step —
// the candidates with the largest scores (adam/fact: |w| of a latent past
// the band on the other side; bop: s·m), ties broken by lower element index
// — found by a deterministic threshold search on the GPU (a radix select
// over the scores' bits, integer histograms; no host sort, no readback).
// Candidates that do not flip keep their sign, and their latent stays as
// the update left it (past the band): the evidence is kept, so a deferred
// flip competes again, with its score, in the next step. A budget with
// K >= rows·r is no limit.
//
// Telemetry per step (read back only when asked): flips, oscillations
// (flips of signs that had flipped before), latents inside the hysteresis
// band, and with keep_bits0 the Hamming distance to the initial bits.
// Everything a step does is integer-exact or in a fixed order: the same
// inputs give the same bits, whether recorded once and replayed or not.
//
// Deferred mode: blr_backward accumulates G into the matrix's kept gradient
// (micro-batches, or an all-reduce across ranks before the step); the step
// consumes it and zeroes it. Immediate mode: the step runs in the backward's
// batch right after G is formed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr {

enum class SignOpt : std::uint8_t { adam, fact, bop };
enum class StateType : std::uint8_t { f32, bf16 };
const char* to_string(SignOpt opt) noexcept;
SignOpt sign_opt_from_string(const std::string& name);  // "adam", "fact", "bop"; throws Error otherwise

// How a sign matrix's state starts (the seed's SignInit).
struct SignInit {
  SignOpt opt = SignOpt::adam;
  float tau = 0.25f;           // latents start at s·tau; bop: the flip threshold
  StateType state = StateType::f32;
  std::uint64_t seed = 1;      // stochastic rounding stream (bf16 state)
  bool keep_bits0 = false;     // keep the initial bits (Hamming distance)
  bool deferred = false;       // keep an f32 [rows][r] gradient for micro-batches
};

// One step's hyperparameters (the seed's SignStepCfg).
struct SignStep {
  float lr = 0.01f;          // η (ignored when live)
  std::uint32_t step = 1;    // t from 1, for the bias corrections (ignored when live)
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float clamp = 1.0f;        // |w| <= clamp (adam, fact)
  float hyst = 0.0f;         // hysteresis half-width (adam, fact)
  float flip_budget = 0.0f;  // at most this fraction of the signs flips per step; 0 = no limit
  float grad_scale = 1.0f;   // G is multiplied by it first
  ops::LiveScalars live{};   // lr, t and the skip word read from a buffer when the batch runs (replays)
};

struct SignTelemetry {
  std::uint64_t flips = 0;         // in the last step
  std::uint64_t oscillations = 0;  // of those, signs that had flipped before
  std::uint64_t in_band = 0;       // latents with |w| <= hyst after the last step (adam, fact)
  std::uint64_t hamming = 0;       // signs differing from the initial bits (keep_bits0), else 0
  std::uint64_t total_flips = 0;   // since init, the last step's included
};

// The optimizer state of one sign matrix. Owns its state buffers; borrows
// the bitmap, which must outlive it.
class SignMatrix {
 public:
  // bits u32 [rows][r/32] (r a multiple of 32); matrix_id distinguishes the
  // random streams of different matrices. Allocates the state and runs one
  // batch that initializes it (latents s·tau, moments and counters 0, bits0
  // a copy of bits, the kept gradient 0); waits for it. Throws Error
  // ("sign_init") for r = 0 or not a multiple of 32, rows = 0, a small
  // bitmap, or tau negative or not finite.
  SignMatrix(Context& ctx, const Buffer& bits, std::uint32_t rows, std::uint32_t r, const SignInit& init,
             std::uint32_t matrix_id);

  // Starts the state again from the bitmap as it is now, as the
  // constructor does (latents s·tau, moments, counters, telemetry bitmaps
  // and the kept gradient zero, bits0 a copy of the bits): for bits that
  // changed outside the optimizer (vkblr-fit's host refit). Waits for it.
  void reinit(Context& ctx);

  // Sets the latents to w = s·magnitude (s the sign of each bit as it is
  // now; magnitudes f32 [rows][r], finite, in [0, clamp]; bf16 state:
  // rounded to the nearest bf16), in place of reinit's w = s·τ, so that a
  // caller that knows which signs are doubtful (vkblr-fit's init) starts
  // them near zero. The moments and counters are left as they are. Waits
  // for the device. Throws Error ("sign_latents", naming the value) for bop
  // (no latents), a size other than rows·r, or a magnitude that is negative,
  // not finite, or above `clamp`.
  void set_latent_magnitudes(Context& ctx, std::span<const float> magnitudes, float clamp);

  std::uint32_t rows() const noexcept { return rows_; }
  std::uint32_t r() const noexcept { return r_; }
  const SignInit& init() const noexcept { return init_; }

  // Records one step with gradient g f32 [rows][r] (deferred: pass
  // kept_gradient(); it is zeroed after use, inside the batch). Updates the
  // bitmap in place. 2 dispatches (+3 for fact, +11 with a flip budget), no
  // host readback. Throws Error (naming "sign_step" and the value) for a
  // small g, g aliasing the state, beta1/beta2 outside [0, 1), eps < 0,
  // clamp <= 0, hyst outside [0, clamp), flip_budget outside [0, 1], a
  // non-finite lr or grad_scale, step 0, or live scalars out of range.
  void record_step(Recorder& rec, Context& ctx, const Buffer& g, const SignStep& step);

  // Deferred mode's accumulated gradient (empty otherwise).
  const Buffer& kept_gradient() const noexcept { return kept_; }

  // Reads the counters back; with keep_bits0 first counts the Hamming
  // distance on the device. Waits for the device: call it when no batch
  // that steps this matrix is pending.
  SignTelemetry telemetry(Context& ctx) const;

  // Bytes of optimizer state per sign (the table above: latent, moments,
  // fact's R and C spread over the signs; not the bitmaps).
  double bytes_per_sign() const;
  // Bytes of every device buffer the matrix owns (state, telemetry
  // bitmaps and counters, flip-budget scratch once made, kept gradient).
  std::uint64_t state_bytes() const;
  // Named state buffers, for checkpoints (save and restore them all): "w",
  // "m", "v", "row_v", "col_v", "bits0", "flipped", "counters", "kept", those
  // the configuration has, in that order. The bitmap is the layer's.
  std::vector<std::pair<std::string, Buffer*>> state();

 private:
  // record_step's dispatches in phases: each phase depends on the ones
  // before it and on nothing after it (the kept gradient's zeroing is left
  // to the caller).
  std::vector<Ops> step_phases(Context& ctx, const Buffer& g, const SignStep& step);
  friend void record_sign_steps(Recorder&, Context&, std::span<SignMatrix* const>, std::span<const Buffer* const>,
                                const SignStep&);

  std::uint32_t rows_, r_, id_;
  std::uint32_t key_;              // stochastic-rounding stream of (seed, id)
  SignInit init_;
  const Buffer* bits_;
  Buffer w_, m_, v_;               // latent, first and second moments (by opt), f32 or bf16
  Buffer row_v_, col_v_;           // fact: R f32 [rows], C f32 [r]
  Buffer sums_;                    // fact: column partials of g², then Σ R
  Buffer bits0_, flipped_;         // initial bits (keep_bits0); signs that flipped before
  Buffer counters_;                // u32 telemetry counters (glsl/sign.h)
  Buffer scores_, select_, ties_;  // flip budget: made by the first step with one
  Buffer kept_;                    // deferred gradient
};

// The steps of several sign matrices (distinct, each with its gradient
// gradients[i], as record_step takes it), side by side: one branch of
// Recorder::parallel per matrix, a step per phase of its dispatches. The
// dispatches and their results are record_step's for each matrix, bit for
// bit; the barriers between phases are shared, so the small dispatches of
// the flip budget's selection run side by side instead of one matrix after
// another.
// Throws Error as record_step, or for sizes that differ or a null entry.
void record_sign_steps(Recorder& rec, Context& ctx, std::span<SignMatrix* const> matrices,
                       std::span<const Buffer* const> gradients, const SignStep& step);

// record_sign_steps of deferred matrices, each on its own kept gradient
// (kept_gradient(), zeroed by the step), under the profiler tag "sign" (the
// recorder's tag is "" afterwards): what a trainer records once the
// gradients are summed. No matrices: nothing is recorded.
void record_kept_sign_steps(Recorder& rec, Context& ctx, std::span<SignMatrix> matrices, const SignStep& step);

}  // namespace vkblr
