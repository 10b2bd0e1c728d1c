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

#include <cstdint>
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
};

// The greedy above. curves[i] is sized layer i's error at ranks 32, 64,
// ..., budget.rank_limits[i] (rank_limits[i] / 32 finite values); a fixed
// layer's is not read. Throws vkblr::Error (naming the layer's index) for
// a curve of another length or with a value that is not finite, and for
// layers and curves of different counts.
RankAllocation allocate_ranks(std::span<const BudgetLayer> layers, const ModelBudget& budget,
                              std::span<const std::vector<double>> curves);

}  // namespace vkblr::fit
