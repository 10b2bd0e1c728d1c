// vkblr/ops/optim.hpp — the optimizer step of f32 parameters (Adam) and the
// partial sums of squares of gradient norms (glsl/adam.comp, sumsq.comp).
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

// Adam's hyperparameters and the step being taken.
struct AdamOptions {
  float lr = 1e-3f;         // learning rate (ignored when live)
  std::uint32_t step = 1;   // t, counted from 1: bias correction 1 − β^t (ignored when live)
  float beta1 = 0.9f;       // [0, 1)
  float beta2 = 0.999f;     // [0, 1)
  float eps = 1e-8f;        // >= 0
  float grad_scale = 1.0f;  // the gradient is multiplied by it first (e.g. 1 / loss scale)
  LiveScalars live{};       // set: lr and t are read from live.buffer when the dispatch runs
};

// One Adam step without weight decay over n f32 entries, in place on w, m1
// (first moment) and m2 (second moment); g is the gradient. Per entry i:
//   g' = g[i]·grad_scale;  m1[i] = β1·m1[i] + (1−β1)·g';  m2[i] = β2·m2[i] + (1−β2)·g'·g'
//   s  = lr · (m1[i] / (1 − β1^t)) / (sqrt(m2[i] / (1 − β2^t)) + eps)
//   w[i] −= s · max(|w[i]|, rel_floor) if rel_floor > 0 (relative steps), else w[i] −= s
// each operation rounded in f32 in that order. mask (optional, f32 [n]):
// entries where it is 0 are frozen (w, m1, m2 untouched). w, g, m1 and m2
// are four different buffers.
Dispatch adam(Context& ctx, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2, const Buffer* mask,
              std::uint32_t n, const AdamOptions& options, float rel_floor = 0.0f);

// adam over a concatenation of parameters in one dispatch: mask f32 [n] per
// entry (0 = frozen) and rel_floor f32 [n] per entry (> 0: relative steps
// with that floor; 0: plain steps). Every entry gets the bits adam gives it
// with the same mask and floor.
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
