// Which rank of a layer-parallel manifest run fits which layers
// (manifest/layer_schedule.hpp): the LPT rule, largest first, ties in
// manifest order and to the lowest rank; every layer once; within 4/3 of
// the best balance (brute force on small cases); the same schedule every
// time; ranks beyond the layers idle; bad costs refused. (The runs
// themselves: tests/mpi/fit_layers.cmake.)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "support/fit_files.hpp"
#include "support/host.hpp"
#include "vkblr-fit/manifest/layer_schedule.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using Schedule = std::vector<std::vector<std::size_t>>;

namespace {

// The least largest load over every assignment of the layers to `ranks`.
double best_makespan(const std::vector<double>& costs, int ranks) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> to(costs.size(), 0);
  for (;;) {
    std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
    for (std::size_t i = 0; i < costs.size(); ++i) load[static_cast<std::size_t>(to[i])] += costs[i];
    best = std::min(best, *std::ranges::max_element(load));
    std::size_t k = 0;
    while (k < to.size() && ++to[k] == ranks) to[k++] = 0;
    if (k == to.size()) return best;
  }
}

}  // namespace

TEST_CASE("layer schedule: largest first, each to the least loaded rank", "[fit]") {
  // 9 → r0; 7 → r1; 6 → r2; 5 → r2 (6 < 7 < 9); 4 → r1 (7 < 9 < 11); 2 → r0 (9 < 11)
  const std::vector<double> costs = {4, 9, 2, 6, 7, 5};
  const Schedule s = fit::schedule_layers(costs, 3);
  CHECK(s == Schedule{{1, 2}, {0, 4}, {3, 5}});
  CHECK(fit::schedule_loads(costs, s) == std::vector<double>{11, 11, 11});
  // the largest layer goes to rank 0
  CHECK(fit::schedule_layers(std::vector<double>{1, 9, 2}, 2) == Schedule{{1}, {0, 2}});
}

TEST_CASE("layer schedule: ties in manifest order, to the lowest rank", "[fit]") {
  CHECK(fit::schedule_layers(std::vector<double>{1, 1, 1, 1, 1}, 2) == Schedule{{0, 2, 4}, {1, 3}});
  // equal costs after a larger one: rank 1 and 2 tie at 0, then at 3
  CHECK(fit::schedule_layers(std::vector<double>{3, 5, 3, 3, 3}, 3) == Schedule{{1}, {0, 3}, {2, 4}});
  // a layer that costs nothing leaves rank 0 the least loaded
  CHECK(fit::schedule_layers(std::vector<double>{0, 0, 0}, 2) == Schedule{{0, 1, 2}, {}});
}

TEST_CASE("layer schedule: more ranks than layers leaves the last ranks idle; one rank fits all in order", "[fit]") {
  CHECK(fit::schedule_layers(std::vector<double>{3, 1}, 4) == Schedule{{0}, {1}, {}, {}});
  CHECK(fit::schedule_layers(std::vector<double>{}, 2) == Schedule{{}, {}});
  CHECK(fit::schedule_layers(std::vector<double>{2, 8, 5, 1}, 1) == Schedule{{0, 1, 2, 3}});
}

TEST_CASE("layer schedule: every layer once, balanced within LPT's bounds, the same every time", "[fit][determinism]") {
  vkt::Rng rng(41);
  for (int trial = 0; trial < 60; ++trial) {
    const int ranks = 1 + trial % 4;
    const std::size_t layers = 1 + static_cast<std::size_t>(trial % 9);
    std::vector<double> costs(layers);
    // whole numbers from a few values: ties are common
    for (double& c : costs) c = std::floor(1 + 6 * (0.5 + 0.5 * rng.uniform()));
    INFO("trial " << trial << ": " << layers << " layers over " << ranks << " ranks");
    const Schedule s = fit::schedule_layers(costs, ranks);
    REQUIRE(s.size() == static_cast<std::size_t>(ranks));
    std::vector<int> seen(layers, 0);
    for (const std::vector<std::size_t>& mine : s) {
      CHECK(std::ranges::is_sorted(mine));
      for (const std::size_t i : mine) ++seen[i];
    }
    CHECK(std::ranges::all_of(seen, [](int n) { return n == 1; }));
    const std::vector<double> loads = fit::schedule_loads(costs, s);
    const double most = *std::ranges::max_element(loads), least = *std::ranges::min_element(loads);
    CHECK(most - least <= *std::ranges::max_element(costs));
    CHECK(most <= 4.0 / 3.0 * best_makespan(costs, ranks) + 1e-9);
    CHECK(fit::schedule_layers(costs, ranks) == s);
  }
}

TEST_CASE("layer schedule: bad rank counts and costs are refused", "[fit][errors]") {
  CHECK_THAT(vkt::error_of([] { fit::schedule_layers(std::vector<double>{1}, 0); }), ContainsSubstring("0 ranks"));
  CHECK_THAT(vkt::error_of([] { fit::schedule_layers(std::vector<double>{1, -2}, 2); }),
             ContainsSubstring("layer 1 costs -2"));
  CHECK_THAT(vkt::error_of([] { fit::schedule_layers(std::vector<double>{std::nan("")}, 2); }),
             ContainsSubstring("layer 0 costs nan"));
}

TEST_CASE("layer schedule: a layer's cost is its training steps' work, or the reading of its inputs", "[fit]") {
  fit::FitOptions o;
  o.steps = 8;
  o.batch = 64;
  o.tokens = 256;
  o.held_out = 64;
  const fit::LayerShape shape{128, 64, 32, 2};
  const double read = 128.0 * 64 + 320.0 * 64;
  CHECK(fit::layer_cost(shape, o, false) == read);
  CHECK(fit::layer_cost(shape, o, true) == read + 8.0 * 64 * (128 + 64) * 32 * 2);
  // twice the steps or the rank: about twice the work
  o.steps = 16;
  CHECK(fit::layer_cost(shape, o, true) == read + 16.0 * 64 * (128 + 64) * 32 * 2);
}
