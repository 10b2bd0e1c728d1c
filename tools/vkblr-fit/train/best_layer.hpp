// best_layer.hpp — the layer a fit saves: evaluated as the result file
// stores it, the best one seen on the held-out tokens.
//
// A fit evaluates its layer on the held-out tokens at the init, after the
// host refit and every --eval-every steps, each time with the scales as the
// result file stores them (F16 scales rounded to nearest even), so the
// numbers compare what would be saved. It saves the layer with the lowest
// of those errors (a later one wins a tie): training never saves a layer
// worse than one it has seen, the init included.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr-fit/report/curve.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

// Where a layer comes from: the init (--init), the host refit, or training.
enum class LayerStage : std::uint8_t { init, refit, training };
std::string_view layer_stage_name(LayerStage stage);  // "init", "refit", "training"
std::optional<LayerStage> parse_layer_stage(std::string_view name);

struct BestLayer {
  std::vector<BlrPathInit> paths;                                   // scales in f32, as trained (rounded when stored)
  double held_out_error = std::numeric_limits<double>::infinity();  // with the scales as stored
  std::uint32_t step = 0;  // training steps done when it was seen (0 for the init and the refit)
  LayerStage stage = LayerStage::init;

  // Keeps the layer `paths()` gives when `error` is at most the best so far
  // (never a NaN); returns whether it did.
  bool offer(double error, std::uint32_t step, LayerStage stage,
             const std::function<std::vector<BlrPathInit>()>& paths);
};

// When `best` is not the last evaluation's layer (the last of `curve`), a
// line saying which layer is saved and why: "warning: training did not
// improve on the refit's ..." (best from before training) or "note: the
// layer of step N is saved ..."; else empty.
std::string saved_layer_note(const BestLayer& best, std::span<const CurvePoint> curve);

// The layer's bits and scales back on the host, as a result's paths.
std::vector<BlrPathInit> download_paths(const BlrLayer& layer);

// Scales as stored in a result file of `dtype` (F16 rounds to nearest even).
std::vector<BlrPathInit> as_stored(std::vector<BlrPathInit> paths, ScaleDtype dtype);

// ‖XŴᵀ − XWᵀ‖ / ‖XWᵀ‖ on the `batches` held-out batches of `trainer`,
// whose ‖XWᵀ‖² is `target_sq` (collective).
double held_out_error(FitTrainer& trainer, std::size_t batches, double target_sq);

// held_out_error with `layer`'s scales rounded as a result of `dtype`
// stores them; the layer's f32 scales are put back after, bit for bit
// (collective).
double held_out_error_as_stored(FitTrainer& trainer, BlrLayer& layer, ScaleDtype dtype, std::size_t batches,
                                double target_sq);

}  // namespace vkblr::fit
