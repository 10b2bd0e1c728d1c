// vkblr/ops/optim.hpp — the optimizer step of f32 parameters (Adam, AdamW
// with an optional f16/bf16 storage copy) and the partial sums of squares
// of gradient norms (glsl/adam.comp, sumsq.comp).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// Where an optimizer dispatch reads its per-replay scalars when it runs: a
// Graph recorded once is replayed with a new step number and learning rate
// by rewriting two words of a buffer before each replay (no re-recording).
// Word `word` of `buffer` holds the learning rate (f32 bits), word `word + 1`
// the step t (u32, counted from 1), word `word + 2` a skip flag: nonzero =
// the dispatch changes nothing (a trainer's non-finite guard sets it on the
// GPU when a step's gradients hold NaN/Inf). The buffer is usually a
// Context::host_buffer written with write_live_scalars while no submitted
// work that reads it is pending; a device buffer written inside the batch
// (Recorder::fill / copy) works too. `buffer` null: not live.
struct LiveScalars {
  const Buffer* buffer = nullptr;
  std::uint32_t word = 0;
};

// Words of one live-scalars block: lr, step, skip.
inline constexpr std::uint32_t kLiveScalarWords = 3;

// Stores lr, step and skip = 0 in `scalars` at `word` (the layout above)
// with Buffer::write: a memcpy for a host buffer. Throws Error for step 0 or
// a range outside the buffer.
void write_live_scalars(Buffer& scalars, std::uint32_t word, float lr, std::uint32_t step);

// The 16-bit storage copy an Adam step may write beside the f32 master
// weights (what the forward pass reads, e.g. bf16 norms and embeddings).
enum class CopyType : std::uint8_t { f16, bf16 };
struct AdamCopy {
  const Buffer* buffer = nullptr;  // u16 [n] (IEEE half or bfloat16 bit patterns); null: no copy
  CopyType type = CopyType::bf16;
};

// Adam's hyperparameters and the step being taken.
struct AdamOptions {
  float lr = 1e-3f;         // learning rate (ignored when live)
  std::uint32_t step = 1;   // t, counted from 1: bias correction 1 − β^t (ignored when live)
  float beta1 = 0.9f;       // [0, 1)
  float beta2 = 0.999f;     // [0, 1)
  float eps = 1e-8f;        // >= 0
  float grad_scale = 1.0f;  // the gradient is multiplied by it first (e.g. 1 / loss scale)
  float weight_decay = 0.0f;  // λ >= 0, finite: AdamW's decoupled decay w·(1 − lr·λ) (0: plain Adam)
  LiveScalars live{};       // set: lr and t are read from live.buffer when the dispatch runs
  AdamCopy copy{};          // set: the new weights rounded to f16/bf16 are written there too
};

// One Adam step over n f32 entries, in place on w (the f32 master values),
// m1 (first moment) and m2 (second moment); g is the gradient. Per entry i:
//   g' = g[i]·grad_scale;  m1[i] = β1·m1[i] + (1−β1)·g';  m2[i] = β2·m2[i] + (1−β2)·g'·g'
//   s  = lr · (m1[i] / (1 − β1^t)) / (sqrt(m2[i] / (1 − β2^t)) + eps)
//   w' = w[i] · (1 − lr·weight_decay) if weight_decay > 0 (AdamW, decoupled), else w' = w[i]
//   w[i] = w' − s · max(|w'|, rel_floor) if rel_floor > 0 (relative steps), else w[i] = w' − s
// each operation rounded in f32 in that order (weight_decay 0 gives plain
// Adam's bits). mask (optional, f32 [n]): entries where it is 0 are frozen
// (w, m1, m2 untouched). options.copy: copy[i] = f16/bf16(w[i]) after the
// step, rounded to nearest even (vkblr/half.hpp's f32_to_f16/f32_to_bf16
// bit for bit), frozen entries included; a skipped live step writes
// nothing. w, g, m1, m2 and the copy are different buffers.
Dispatch adam(Context& ctx, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2, const Buffer* mask,
              std::uint32_t n, const AdamOptions& options, float rel_floor = 0.0f);

// adam over a concatenation of parameters in one dispatch: mask f32 [n] per
// entry (0 = frozen) and rel_floor f32 [n] per entry (> 0: relative steps
// with that floor; 0: plain steps); weight decay and the copy as in adam.
// Every entry gets the bits adam gives it with the same mask and floor.
Dispatch adam_cat(Context& ctx, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2,
                  const Buffer& mask, const Buffer& rel_floor, std::uint32_t n, const AdamOptions& options);

// Partial sums per vector: the host adds them (in f64) for a norm.
inline constexpr std::uint32_t kSumsqPartials = 64;

// partials f32 [64] = partial sums of squares of a f32 [n]: partial x sums
// the elements i with (i / 256) % 64 == x, in a fixed order (deterministic).
// NaN and Inf propagate into the partials, so the host can detect them.
Dispatch sumsq(Context& ctx, const Buffer& a, std::uint32_t n, const Buffer& partials);

// sumsq of every parameter of a concatenation a f32 [n]: table u32
// [params][2] = (offset, length) in elements; partials f32 [params][64],
// row p bit for bit what sumsq gives for the vector a[offset, offset +
// length). Table entries are read on the device: a range past n is cut at n.
Dispatch sumsq_cat(Context& ctx, const Buffer& a, std::uint32_t n, const Buffer& table, std::uint32_t params,
                   const Buffer& partials);

}  // namespace vkblr::ops
