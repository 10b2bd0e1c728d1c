#include "vkblr/model/held_out.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "vkblr/error.hpp"
#include "vkblr/ops/logit_loss.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::model {

std::vector<Window> window_plan(std::uint64_t total, std::uint32_t context, std::uint32_t stride) {
  if (total < 2) fail("held-out measure: a stream of {} tokens has nothing to predict", total);
  if (stride < 1 || stride > context) fail("held-out measure: stride {}: want 1 to context {}", stride, context);
  const std::uint64_t length = std::min<std::uint64_t>(context, total - 1);
  std::vector<Window> plan;
  std::uint64_t begin = 0, scored = 0;  // scored: the last target scored so far
  while (scored < total - 1) {
    plan.push_back({begin, scored + 1});
    scored = begin + length;
    begin = std::min(begin + stride, total - 1 - length);
  }
  return plan;
}

HeldOutResult evaluate_held_out(Context& ctx, const io::LlamaConfig& config, const LlamaWeights& weights,
                                std::span<const std::uint32_t> tokens, const HeldOutOptions& options) {
  const std::uint32_t context = options.context ? options.context : config.max_position_embeddings;
  const std::uint32_t stride = options.stride ? options.stride : std::max(1u, context / 2);
  if (options.batch == 0) fail("held-out measure: batch of 0 windows");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= config.vocab_size) {
      fail("held-out measure: token {} is {}, outside the vocabulary of {}", i, tokens[i], config.vocab_size);
    }
  }
  const std::vector<Window> plan = window_plan(tokens.size(), context, stride);
  const auto length = static_cast<std::uint32_t>(std::min<std::uint64_t>(context, tokens.size() - 1));
  const std::uint32_t batch = static_cast<std::uint32_t>(std::min<std::size_t>(options.batch, plan.size()));
  const std::uint32_t capacity = batch * length;

  LlamaForward forward(ctx, config, {batch, length});
  const ops::LogitLossShape shape{capacity, config.hidden_size, config.vocab_size, 0, 0};
  const ops::LogitLossScratch scratch = ops::make_logit_loss_scratch(ctx, shape, false);
  Buffer ids = ctx.buffer(std::uint64_t{capacity} * 4, "held_out.ids");
  Buffer targets = ctx.buffer(std::uint64_t{capacity} * 4, "held_out.targets");
  Buffer hidden = ctx.buffer(std::uint64_t{capacity} * config.hidden_size * 4, "held_out.hidden");
  Buffer loss = ctx.buffer(16, "held_out.loss");
  Buffer token_loss = ctx.buffer(std::uint64_t{capacity} * 4, "held_out.token_loss");

  HeldOutResult r;
  r.windows = plan.size();
  std::vector<std::uint32_t> ids_host(capacity), targets_host(capacity);
  for (std::size_t at = 0; at < plan.size(); at += batch) {
    const auto count = static_cast<std::uint32_t>(std::min<std::size_t>(batch, plan.size() - at));
    for (std::uint32_t w = 0; w < count; ++w) {
      const Window& win = plan[at + w];
      for (std::uint32_t p = 0; p < length; ++p) {
        ids_host[w * length + p] = tokens[win.begin + p];
        // position p predicts target begin + p + 1, scored when not scored before
        const std::uint64_t target = win.begin + p + 1;
        targets_host[w * length + p] = target >= win.first ? tokens[target] : ops::kIgnoreToken;
      }
    }
    const std::uint32_t n = count * length;
    ids.upload(std::span<const std::uint32_t>(ids_host).first(n));
    targets.upload(std::span<const std::uint32_t>(targets_host).first(n));
    Recorder rec(ctx);
    forward.record(rec, weights, ids, hidden, {count, length});
    ops::CrossEntropyOptions ce;
    ce.token_loss = &token_loss;
    rec.add(ops::cross_entropy(ctx, {n, config.hidden_size, config.vocab_size, 0, 0}, hidden,
                               weights.head_weight(), targets, loss, {}, scratch, ce));
    rec.run();
    const std::vector<float> losses = token_loss.download<float>(n);
    for (std::uint32_t w = 0; w < count; ++w) {
      double sum = 0;  // a window's sum, then the windows in order (evaluate.py's order)
      for (std::uint32_t p = 0; p < length; ++p) {
        if (targets_host[w * length + p] == ops::kIgnoreToken) continue;
        sum += losses[w * length + p];
        ++r.tokens_scored;
      }
      r.loss_nats += sum;
    }
  }
  if (r.tokens_scored != tokens.size() - 1) {
    fail("held-out measure: scored {} of {} targets (a bug)", r.tokens_scored, tokens.size() - 1);
  }
  r.perplexity = std::exp(r.loss_nats / double(r.tokens_scored));
  r.bits_per_token = r.loss_nats / double(r.tokens_scored) / std::numbers::ln2;
  return r;
}

}  // namespace vkblr::model
