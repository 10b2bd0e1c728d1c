// fit_batches.hpp — the batches a vkblr-fit run trains and evaluates on:
// this rank's parts (fit_ranks.hpp) of every batch of tokens, as views of
// the f16 tokens already on the device (io/device_data.hpp), and their
// dense targets y* = X·Wᵀ (f32, one f16 GEMM per part with the f16 W,
// computed once).
//
// Batch b's parts are entries [b·parts, (b+1)·parts) of each list. The
// training batches cover tokens [0, T) in order, the held-out ones
// [T, T + H). The squared norms of the targets are summed per batch over
// this rank's parts in order, then over the ranks (FitRanks::sum), in f64.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct FitBatches {
  std::size_t parts = 1;
  std::vector<Buffer> x, target;            // training: f16 [part][n] views, f32 [part][m]
  std::vector<Buffer> x_eval, target_eval;  // held out
  double train_target_sq = 0;               // mean over training batches of ‖y*‖² (every rank's parts)
  double eval_target_sq = 0;                // Σ over held-out batches of ‖y*‖² (every rank's parts)
  std::size_t batches() const { return x.size() / parts; }
  std::size_t eval_batches() const { return x_eval.size() / parts; }
};

// Collective (FitRanks::sum once per batch). `batch` divides the data's
// training and held-out token counts. Throws vkblr::Error (naming the
// inputs) when the targets are zero or too small to measure an error
// against (input_range.hpp's check_target_norm).
FitBatches make_fit_batches(Context& ctx, FitRanks& ranks, const DeviceData& data, std::uint32_t batch,
                            std::span<const FitSlice> parts);

// Adds every batch to `trainer` (f16 inputs), training then held-out.
void add_fit_batches(FitTrainer& trainer, const FitBatches& batches);

}  // namespace vkblr::fit
