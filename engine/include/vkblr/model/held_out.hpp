// vkblr/model/held_out.hpp — a dense Llama model's held-out loss on the
// engine: the measure of tools/model/evaluate.py (docs/models.md), so that
// a native trainer can report perplexity as the project's Python tools do.
//
// The measure: a stream of tokens, every token after the first scored
// once, predicted from windows of `context` tokens that start `stride`
// apart (window_plan: each window scores the targets the windows before it
// did not; the last window ends at the stream's end). Windows run in
// order, `batch` at a time, through LlamaForward and the cross-entropy over
// the vocabulary in slices (vkblr/ops/logit_loss.hpp: the hidden states and
// the head staged to f16, f32 sums); each window's per-token losses summed
// in f64 on the host in order. Deterministic: the same model, stream and
// device give the same numbers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vkblr/context.hpp"
#include "vkblr/model/llama_forward.hpp"

namespace vkblr::model {

// Window k reads tokens[begin, begin + length) and scores the targets j in
// [first, begin + length] (each from the logits at j − 1).
struct Window {
  std::uint64_t begin = 0, first = 0;
};

// The windows of a stream of `total` tokens, length min(context, total − 1)
// (evaluate.py's window_plan). Throws vkblr::Error for total < 2 or a
// stride outside [1, context].
std::vector<Window> window_plan(std::uint64_t total, std::uint32_t context, std::uint32_t stride);

struct HeldOutResult {
  std::uint64_t tokens_scored = 0;
  std::uint64_t windows = 0;
  double loss_nats = 0;     // Σ −log p(target), f64
  double perplexity = 0;    // exp(loss / tokens_scored)
  double bits_per_token = 0;
};

struct HeldOutOptions {
  std::uint32_t context = 0;  // window length; 0: the config's max_position_embeddings
  std::uint32_t stride = 0;   // 0: context / 2
  std::uint32_t batch = 8;    // windows per forward
};

// The measure of `weights` (config `config`) on `tokens` (ids < vocab;
// Error naming the position otherwise).
HeldOutResult evaluate_held_out(Context& ctx, const io::LlamaConfig& config, const LlamaWeights& weights,
                                std::span<const std::uint32_t> tokens, const HeldOutOptions& options = {});

}  // namespace vkblr::model
