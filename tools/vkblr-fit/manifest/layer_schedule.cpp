#include "vkblr-fit/manifest/layer_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "vkblr/error.hpp"

namespace vkblr::fit {

std::vector<std::vector<std::size_t>> schedule_layers(std::span<const double> costs, int ranks) {
  require(ranks >= 1, "schedule_layers: {} ranks", ranks);
  for (std::size_t i = 0; i < costs.size(); ++i) {
    require(std::isfinite(costs[i]) && costs[i] >= 0, "schedule_layers: layer {} costs {}", i, costs[i]);
  }
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<std::size_t>> schedule(static_cast<std::size_t>(ranks));
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  for (const std::size_t layer : order) {
    const auto least = static_cast<std::size_t>(std::ranges::min_element(load) - load.begin());  // first of equals
    load[least] += costs[layer];
    schedule[least].push_back(layer);
  }
  for (std::vector<std::size_t>& layers : schedule) std::ranges::sort(layers);
  return schedule;
}

std::vector<double> schedule_loads(std::span<const double> costs,
                                   const std::vector<std::vector<std::size_t>>& schedule) {
  std::vector<double> loads;
  for (const std::vector<std::size_t>& layers : schedule) {
    double sum = 0;
    for (const std::size_t layer : layers) sum += costs[layer];
    loads.push_back(sum);
  }
  return loads;
}

double wait_for_others_s(std::span<const double> costs, const std::vector<std::vector<std::size_t>>& schedule,
                         double done_cost, double done_s) {
  if (done_cost <= 0) return std::numeric_limits<double>::infinity();
  double max_load = 0;
  for (const double load : schedule_loads(costs, schedule)) max_load = std::max(max_load, load);
  return 2 * done_s / done_cost * max_load;
}

double layer_cost(const LayerShape& shape, const FitOptions& resolved, bool fit) {
  const double m = shape.m, n = shape.n;
  const double read = m * n + (static_cast<double>(resolved.tokens) + resolved.held_out) * n;
  if (!fit) return read;
  return read + static_cast<double>(resolved.steps) * resolved.batch * (m + n) * shape.rank * shape.paths;
}

}  // namespace vkblr::fit
