#include "vkblr-fit/manifest/rank_allocation.hpp"

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
    require(curves[i].size() == budget.rank_limits[i] / kRankStep,
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
      const double gain = static_cast<double>(std::uint64_t{l.shape.m} * l.shape.n) *
                          (curves[i][k] - curves[i][k + 1]) / static_cast<double>(added);
      if (best == layers.size() || gain > best_gain) {
        best = i;
        best_gain = gain;
        best_bits = added;
      }
    }
    if (best == layers.size()) break;
    a.ranks[best] += kRankStep;
    a.bits += best_bits;
    ++a.steps;
  }
  a.bpw = per_weight(a.bits, budget.weights);
  return a;
}

}  // namespace vkblr::fit
