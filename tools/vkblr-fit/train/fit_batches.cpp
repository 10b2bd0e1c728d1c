#include "vkblr-fit/train/fit_batches.hpp"

#include <format>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/io/input_range.hpp"
#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
FitBatches make_fit_batches(Context& ctx, FitRanks& ranks, const DeviceData& data, std::uint32_t batch,
                            std::span<const FitSlice> parts) {
  require(batch > 0 && data.train_tokens % batch == 0 && data.held_out_tokens % batch == 0,
          "fit batches: {} training and {} held-out tokens are not whole batches of {}", data.train_tokens,
          data.held_out_tokens, batch);
  FitBatches d;
  d.parts = parts.size();
  // tokens [first, first + count) in batches; returns Σ over batches of ‖y*‖²
  auto add = [&](std::uint32_t first, std::uint32_t count, std::vector<Buffer>& xs, std::vector<Buffer>& ts) {
    double sq = 0;
    for (std::uint32_t b = first; b < first + count; b += batch) {
      double batch_sq = 0;  // this rank's parts, in order
      for (const FitSlice& part : parts) {
        xs.push_back(data.tokens(b + part.first, part.count));
        ts.push_back(ctx.buffer(std::uint64_t{part.count} * data.m * 4, "fit.target"));
        Recorder rec(ctx);
        rec.add(gemm(ctx, xs.back(), data.w16, GemmB::plane, ts.back(), {part.count, data.m, data.n}));
        rec.run();
        batch_sq += sum_of_squares(ctx, ts.back(), part.count * data.m);
      }
      sq += ranks.sum(batch_sq, "the targets' squared norm");
    }
    return sq;
  };
  d.train_target_sq = add(0, data.train_tokens, d.x, d.target) / static_cast<double>(data.train_tokens / batch);
  d.eval_target_sq = add(data.train_tokens, data.held_out_tokens, d.x_eval, d.target_eval);
  const std::string inputs = std::format("W {}, X {}", data.weight_source, data.activation_source);
  check_target_norm(d.train_target_sq, "training", inputs);
  check_target_norm(d.eval_target_sq, "held-out", inputs);
  return d;
}

void add_fit_batches(FitTrainer& trainer, const FitBatches& batches) {
  for (std::size_t b = 0; b < batches.batches(); ++b) {
    trainer.add_batch(std::span(batches.x).subspan(b * batches.parts, batches.parts),
                      std::span(batches.target).subspan(b * batches.parts, batches.parts), BatchInput::f16);
  }
  for (std::size_t b = 0; b < batches.eval_batches(); ++b) {
    trainer.add_eval_batch(std::span(batches.x_eval).subspan(b * batches.parts, batches.parts),
                           std::span(batches.target_eval).subspan(b * batches.parts, batches.parts),
                           BatchInput::f16);
  }
}

}  // namespace vkblr::fit
