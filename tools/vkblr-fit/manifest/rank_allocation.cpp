#include "vkblr-fit/manifest/rank_allocation.hpp"

#include <algorithm>
#include <cmath>
#include <format>

#include "vkblr/io/bpw.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

constexpr std::uint32_t kRankStep = 32;

std::uint64_t layer_bits(const BudgetLayer& layer, std::uint32_t rank) {
  return bits_per_weight({layer.shape.m, layer.shape.n, rank, layer.shape.paths}, layer.scale_dtype).bits();
}

double per_weight(std::uint64_t bits, std::uint64_t weights) {
  return static_cast<double>(bits) / static_cast<double>(weights);
}

}  // namespace

ModelBudget model_budget(std::span<const BudgetLayer> layers, double model_bpw) {
  require(std::isfinite(model_bpw) && model_bpw > 0, "--model-bpw {}: want a positive number of bits per weight",
          model_bpw);
  ModelBudget b;
  b.model_bpw = model_bpw;
  std::size_t sized = 0;
  for (const BudgetLayer& l : layers) {
    check_layer_shape(l.fixed ? l.shape : LayerShape{l.shape.m, l.shape.n, kRankStep, l.shape.paths}, "--model-bpw");
    b.weights += std::uint64_t{l.shape.m} * l.shape.n;
    b.least_bits += layer_bits(l, l.fixed ? l.shape.rank : kRankStep);
    b.most_bits += layer_bits(l, l.fixed ? l.shape.rank : max_useful_rank(l.shape.m, l.shape.n));
    sized += l.fixed ? 0 : 1;
  }
  require(sized > 0, "--model-bpw {}: every layer has its own 'rank' or 'bpw' in the manifest: none is left for the "
          "budget to size", model_bpw);
  const std::size_t fixed = layers.size() - sized;
  // the most bits whose bpw, bits / weights in f64, is at most B: so a B
  // printed from a bpw allows that bpw's bits. floor(B · weights) is within
  // one of it; capped past most_bits (refused below), where every count is
  // an exact integer in f64.
  const double weights = static_cast<double>(b.weights), most = static_cast<double>(b.most_bits);
  double budget = std::floor(std::min(model_bpw * weights, most + 2));
  while (budget <= most && (budget + 1) / weights <= model_bpw) ++budget;
  while (budget > 0 && budget / weights > model_bpw) --budget;
  require(budget >= static_cast<double>(b.least_bits), "--model-bpw {}: too low: the smallest ranks take {:.4f} bpw "
          "({} bits over {} weights: rank 32 for each of the {} layer(s) the budget sizes{})", model_bpw,
          per_weight(b.least_bits, b.weights), b.least_bits, b.weights, sized,
          fixed ? std::format(", the {} of their own rank or bpw at theirs", fixed) : "");
  require(budget <= static_cast<double>(b.most_bits), "--model-bpw {}: too high: every layer at the largest rank it "
          "can use (min(m, n) rounded up to 32) takes {:.4f} bpw ({} bits over {} weights); give at most that",
          model_bpw, per_weight(b.most_bits, b.weights), b.most_bits, b.weights);
  b.budget_bits = static_cast<std::uint64_t>(budget);
  for (const BudgetLayer& l : layers) {
    if (l.fixed) {
      b.rank_limits.push_back(l.shape.rank);
      continue;
    }
    const std::uint64_t others = b.least_bits - layer_bits(l, kRankStep);
    std::uint32_t rank = kRankStep;
    while (rank < max_useful_rank(l.shape.m, l.shape.n) && others + layer_bits(l, rank + kRankStep) <= b.budget_bits) {
      rank += kRankStep;
    }
    b.rank_limits.push_back(rank);
  }
  return b;
}

RankAllocation allocate_ranks(std::span<const BudgetLayer> layers, const ModelBudget& budget,
                              std::span<const std::vector<double>> curves) {
  require(curves.size() == layers.size() && budget.rank_limits.size() == layers.size(),
          "rank allocation: {} layers, {} curves, {} rank limits", layers.size(), curves.size(),
          budget.rank_limits.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].fixed) continue;
    require(!curves[i].empty() && curves[i].size() <= budget.rank_limits[i] / kRankStep,
            "rank allocation: layer {}'s curve has {} points; ranks 32 to {} are {}", i, curves[i].size(),
            budget.rank_limits[i], budget.rank_limits[i] / kRankStep);
    for (const double e : curves[i]) require(std::isfinite(e), "rank allocation: layer {}'s curve has {}", i, e);
  }
  RankAllocation a;
  a.bits = budget.least_bits;
  for (const BudgetLayer& l : layers) a.ranks.push_back(l.fixed ? l.shape.rank : kRankStep);
  while (true) {
    // the best step that fits: the largest gain per bit, the first of equals
    std::size_t best = layers.size();
    double best_gain = 0;
    std::uint64_t best_bits = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const BudgetLayer& l = layers[i];
      const std::uint32_t rank = a.ranks[i];
      if (l.fixed || rank >= budget.rank_limits[i]) continue;
      const std::uint64_t added = layer_bits(l, rank + kRankStep) - layer_bits(l, rank);
      if (a.bits + added > budget.budget_bits) continue;
      const std::size_t k = rank / kRankStep - 1;  // curves[i][k] is the error at `rank`
      if (k + 1 >= curves[i].size()) {  // a step that fits, its error not measured
        a.short_curves.push_back(i);
        continue;
      }
      const double gain = static_cast<double>(std::uint64_t{l.shape.m} * l.shape.n) *
                          (curves[i][k] - curves[i][k + 1]) / static_cast<double>(added);
      if (best == layers.size() || gain > best_gain) {
        best = i;
        best_gain = gain;
        best_bits = added;
      }
    }
    if (best == layers.size() || !a.short_curves.empty()) break;
    a.ranks[best] += kRankStep;
    a.bits += best_bits;
    ++a.steps;
  }
  a.bpw = per_weight(a.bits, budget.weights);
  return a;
}

std::uint32_t first_curve_rank(std::span<const BudgetLayer> layers, const ModelBudget& budget, std::size_t layer) {
  require(layer < layers.size() && !layers[layer].fixed && budget.rank_limits.size() == layers.size(),
          "first_curve_rank: layer {} of {} is not one the budget sizes", layer, layers.size());
  // the sized layers' share: the budget less the fixed layers' bits, over their weights
  std::uint64_t fixed_bits = 0, sized_weights = 0;
  for (const BudgetLayer& l : layers) {
    if (l.fixed) {
      fixed_bits += layer_bits(l, l.shape.rank);
    } else {
      sized_weights += std::uint64_t{l.shape.m} * l.shape.n;
    }
  }
  const double share = per_weight(budget.budget_bits - fixed_bits, sized_weights);
  const BudgetLayer& l = layers[layer];
  const double own = share * static_cast<double>(std::uint64_t{l.shape.m} * l.shape.n);
  std::uint32_t rank = kRankStep;  // the largest rank within the share
  while (rank < budget.rank_limits[layer] && static_cast<double>(layer_bits(l, rank + kRankStep)) <= own) {
    rank += kRankStep;
  }
  const std::uint32_t wanted = (rank * 3 / 2 + kRankStep - 1) / kRankStep * kRankStep;
  return std::min(budget.rank_limits[layer], std::max(wanted, 2 * kRankStep));
}

RoundsAllocation allocate_ranks_in_rounds(std::span<const BudgetLayer> layers, const ModelBudget& budget,
                                          const MeasureCurves& measure) {
  RoundsAllocation r;
  r.curves.resize(layers.size());
  std::vector<CurveRequest> requests;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].fixed) requests.push_back({i, first_curve_rank(layers, budget, i)});
  }
  while (true) {
    const std::vector<std::vector<double>> measured = measure(requests);
    ++r.rounds;
    require(measured.size() == requests.size(), "rank allocation: {} curves measured for {} asked", measured.size(),
            requests.size());
    for (std::size_t q = 0; q < requests.size(); ++q) {
      require(measured[q].size() == requests[q].rank / kRankStep,
              "rank allocation: layer {}'s curve to rank {} has {} points", requests[q].layer, requests[q].rank,
              measured[q].size());
      r.curves[requests[q].layer] = measured[q];
    }
    r.allocation = allocate_ranks(layers, budget, r.curves);
    if (r.allocation.short_curves.empty()) return r;
    requests.clear();
    for (const std::size_t i : r.allocation.short_curves) {
      const std::uint32_t measured_to = static_cast<std::uint32_t>(r.curves[i].size()) * kRankStep;
      requests.push_back({i, std::min(budget.rank_limits[i], 2 * measured_to)});
    }
  }
}

}  // namespace vkblr::fit
