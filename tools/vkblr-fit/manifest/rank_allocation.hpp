// rank_allocation.hpp — vkblr-fit --model-bpw B: the ranks of a model's
// layers under one bit budget for the whole model, from each layer's
// error-vs-rank curve (rank_curve.hpp). Pure host arithmetic: the same
// inputs give the same ranks.
//
// The model's bits are bpw.hpp's honest count (signs, scales, metadata)
// summed over its layers, its weights Σ m·n; the budget is the most bits
// whose bpw (bits / weights, in f64) is at most B: floor(B · weights), but
// for the rounding of B. A fixed layer (one with its own rank) keeps its
// rank and its bits are taken out of the budget. Every other layer (a
// sized one) starts at rank 32; then one rank step (+32) at a time goes to
// the sized layer whose step lowers the model's weighted error the most
// per bit it adds, among the steps that still fit the budget, a tie going
// to the earlier layer, until no step of any layer fits (or every sized
// layer is at its largest useful rank).
//
// The model's weighted error is Σ_l m_l·n_l·e_l / Σ_l m_l·n_l, e_l the
// layer's relative held-out output error. Layer l's step from rank r to
// r + 32 lowers it by m_l·n_l·(e_l(r) − e_l(r+32)) / Σ m·n and adds
// bits_l(r+32) − bits_l(r) = 32·P·(m+n) + s·P·32 bits (s = 16 or 32, the
// scale dtype's). A step whose error rises (a curve need not fall
// everywhere) has a negative gain: it is taken only when nothing better fits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {

// How the ranks are chosen, as the report names it.
inline constexpr std::string_view kAllocationMethod =
    "greedy: one rank step (32) at a time to the largest decrease of the weighted held-out output error per bit";

struct BudgetLayer {
  LayerShape shape;  // m, n, paths; rank: a fixed layer's (ignored for a sized one)
  ScaleDtype scale_dtype = ScaleDtype::f16;
  bool fixed = false;
};

struct ModelBudget {
  double model_bpw = 0;           // B
  std::uint64_t weights = 0;      // Σ m·n
  std::uint64_t budget_bits = 0;  // the most bits with budget_bits / weights ≤ B
  std::uint64_t least_bits = 0;   // the sized layers at rank 32, the fixed ones at theirs
  std::uint64_t most_bits = 0;    // the sized layers at max_useful_rank, the fixed ones at theirs
  // per layer, the largest rank the budget can give it (the others at
  // their least): at most max_useful_rank; a fixed layer's own rank
  std::vector<std::uint32_t> rank_limits;
};

// The budget of `layers` for `model_bpw`. Throws vkblr::Error naming
// --model-bpw, its value and the bounds when B is not a positive number,
// when no layer is sized, when budget_bits would be below least_bits
// (rank 32 everywhere does not fit) or above most_bits (more than the
// layers can use); and for a bad shape (check_layer_shape).
ModelBudget model_budget(std::span<const BudgetLayer> layers, double model_bpw);

struct RankAllocation {
  std::vector<std::uint32_t> ranks;  // per layer; a fixed layer's own
  std::uint64_t bits = 0;            // the model's at these ranks (≤ budget_bits)
  double bpw = 0;                    // bits / weights
  std::uint64_t steps = 0;           // rank steps given
  // Sized layers whose curve ends at their rank while their next step
  // still fits the budget: the greedy cannot weigh that step, so it
  // stopped there. Empty when the ranks are final.
  std::vector<std::size_t> short_curves;
};

// The greedy above. curves[i] is sized layer i's error at ranks 32, 64,
// ..., c_i (c_i / 32 finite values, c_i ≤ budget.rank_limits[i]); a fixed
// layer's is not read. A curve that stops short of its limit is enough
// until the greedy needs its next point (short_curves). Throws
// vkblr::Error (naming the layer's index) for an empty curve, one longer
// than its limit or with a value that is not finite, and for layers and
// curves of different counts.
RankAllocation allocate_ranks(std::span<const BudgetLayer> layers, const ModelBudget& budget,
                              std::span<const std::vector<double>> curves);

// Which curve to measure: sized layer `layer`'s at ranks 32 to `rank`.
struct CurveRequest {
  std::size_t layer = 0;
  std::uint32_t rank = 0;
};
// Measures the requested curves (rank_curve.hpp), one per request, in order.
using MeasureCurves = std::function<std::vector<std::vector<double>>(std::span<const CurveRequest>)>;

struct RoundsAllocation {
  RankAllocation allocation;                // short_curves empty
  std::vector<std::vector<double>> curves;  // per layer, as far as measured; empty for a fixed one
  std::uint32_t rounds = 0;                 // calls to `measure`
};

// allocate_ranks on curves measured only as far as the greedy reads them.
// Round 1 asks for every sized layer's curve to first_curve_rank; after
// each round the greedy runs on the curves so far, and while it stops at
// short curves, those are asked for again at twice their length (at most
// their limit). A layer's curve to a larger rank starts with its curve to
// a smaller one (rank_curve.hpp), so the ranks are those of allocate_ranks
// on curves to the rank limits: the greedy reads the same values. (A
// layer's limit is what the budget could give it alone, often several
// times the rank it gets; a curve's cost grows with its rank.)
// Throws what allocate_ranks and `measure` throw, and vkblr::Error when
// `measure` returns curves of other counts or lengths than asked.
RoundsAllocation allocate_ranks_in_rounds(std::span<const BudgetLayer> layers, const ModelBudget& budget,
                                          const MeasureCurves& measure);

// The rank sized layer `layer`'s first curve goes to: 1.5 times the rank
// at which it would take the sized layers' share of the budget per weight,
// rounded up to a step, at least 64 (one step to weigh), at most its limit.
std::uint32_t first_curve_rank(std::span<const BudgetLayer> layers, const ModelBudget& budget, std::size_t layer);

}  // namespace vkblr::fit
