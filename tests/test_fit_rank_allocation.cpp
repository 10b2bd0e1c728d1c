// vkblr-fit --model-bpw's allocation on given curves (rank_allocation.hpp):
// the budget is met and no further step fits; the greedy gives a step to
// the layer whose error falls most per bit, ties to the earlier layer;
// with equal steps and convex curves it finds the optimum of an exhaustive
// search; fixed layers keep their ranks; bounds and bad curves are refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <format>
#include <limits>
#include <random>

#include "support/fit_files.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/rank_allocation.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

std::uint64_t bits_at(const fit::BudgetLayer& l, std::uint32_t rank) {
  return fit::bits_per_weight({l.shape.m, l.shape.n, rank, l.shape.paths}, l.scale_dtype).bits();
}

fit::BudgetLayer sized(std::uint32_t m, std::uint32_t n, std::uint32_t paths = 2,
                       fit::ScaleDtype dtype = fit::ScaleDtype::f16) {
  return {{m, n, 0, paths}, dtype, false};
}

// The bpw of `layers` at `ranks`, and a B between two bit counts.
double bpw_of(const std::vector<fit::BudgetLayer>& layers, const std::vector<std::uint32_t>& ranks) {
  std::uint64_t bits = 0, weights = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    bits += bits_at(layers[i], ranks[i]);
    weights += std::uint64_t{layers[i].shape.m} * layers[i].shape.n;
  }
  return static_cast<double>(bits) / static_cast<double>(weights);
}

// Falling curves with noise (not monotone everywhere), ranks 32 to `limit`.
std::vector<double> random_curve(std::mt19937_64& rng, std::uint32_t limit) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> c;
  double e = 0.5 + 0.5 * u(rng);
  for (std::uint32_t r = 32; r <= limit; r += 32) {
    c.push_back(e);
    e *= 0.6 + 0.45 * u(rng);
  }
  return c;
}

// Checks the allocation's contract: bits counted right and within the
// budget, no step of a sized layer fits, fixed layers unchanged.
void check_budget_met(const std::vector<fit::BudgetLayer>& layers, const fit::ModelBudget& budget,
                      const fit::RankAllocation& a) {
  REQUIRE(a.ranks.size() == layers.size());
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    INFO("layer " << i << " rank " << a.ranks[i]);
    CHECK(a.ranks[i] % 32 == 0);
    CHECK(a.ranks[i] >= 32);
    CHECK(a.ranks[i] <= fit::max_useful_rank(layers[i].shape.m, layers[i].shape.n));
    if (layers[i].fixed) CHECK(a.ranks[i] == layers[i].shape.rank);
    bits += bits_at(layers[i], a.ranks[i]);
  }
  CHECK(a.bits == bits);
  CHECK(a.bits <= budget.budget_bits);
  CHECK(a.bpw == static_cast<double>(bits) / static_cast<double>(budget.weights));
  CHECK(a.bpw <= budget.model_bpw);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const fit::BudgetLayer& l = layers[i];
    if (l.fixed || a.ranks[i] == fit::max_useful_rank(l.shape.m, l.shape.n)) continue;
    INFO("layer " << i << ": a step of " << bits_at(l, a.ranks[i] + 32) - bits_at(l, a.ranks[i]) << " bits");
    CHECK(a.bits - bits_at(l, a.ranks[i]) + bits_at(l, a.ranks[i] + 32) > budget.budget_bits);
  }
}

}  // namespace

TEST_CASE("rank allocation: the budget is met and no step fits, on random curves", "[fit][allocation]") {
  std::mt19937_64 rng(11);
  const std::vector<fit::BudgetLayer> layers = {sized(256, 128),
                                                sized(128, 256),
                                                sized(256, 256),
                                                sized(512, 128, 1),
                                                sized(192, 320, 3, fit::ScaleDtype::f32),
                                                {{256, 256, 96, 2}, fit::ScaleDtype::f16, true},  // fixed
                                                sized(96, 64)};
  const std::vector<std::uint32_t> least = {32, 32, 32, 32, 32, 96, 32};
  const std::vector<std::uint32_t> most = {128, 128, 256, 128, 192, 96, 64};
  for (int trial = 0; trial < 40; ++trial) {
    // B anywhere between the bounds, the bounds themselves included
    const double lo = bpw_of(layers, least), hi = bpw_of(layers, most);
    const double b = trial == 0 ? lo : trial == 1 ? hi : lo + (hi - lo) * std::uniform_real_distribution<>(0, 1)(rng);
    INFO("trial " << trial << " B " << b);
    const fit::ModelBudget budget = fit::model_budget(layers, b);
    const double weights = static_cast<double>(budget.weights);
    CHECK(static_cast<double>(budget.budget_bits) / weights <= b);
    CHECK(static_cast<double>(budget.budget_bits + 1) / weights > b);
    std::vector<std::vector<double>> curves;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      curves.push_back(layers[i].fixed ? std::vector<double>{} : random_curve(rng, budget.rank_limits[i]));
    }
    const fit::RankAllocation a = fit::allocate_ranks(layers, budget, curves);
    check_budget_met(layers, budget, a);
    if (trial == 1) CHECK(a.ranks == most);
    if (trial == 0) CHECK(a.ranks == least);
    // deterministic
    const fit::RankAllocation again = fit::allocate_ranks(layers, fit::model_budget(layers, b), curves);
    CHECK(again.ranks == a.ranks);
    CHECK(again.bits == a.bits);
    CHECK(again.steps == a.steps);
  }
}

TEST_CASE("rank allocation: rank limits are what the budget can give each layer", "[fit][allocation]") {
  const std::vector<fit::BudgetLayer> layers = {sized(256, 256), sized(256, 128)};
  const fit::BudgetLayer& big = layers[0];
  const fit::BudgetLayer& small = layers[1];
  // room for the big layer at rank 160 and the small one at 32, plus a bit
  const std::uint64_t bits = bits_at(big, 160) + bits_at(small, 32) + 1;
  const double b = (static_cast<double>(bits) + 0.5) / (256.0 * 256 + 256.0 * 128);
  const fit::ModelBudget budget = fit::model_budget(layers, b);
  CHECK(budget.budget_bits == bits);
  CHECK(budget.least_bits == bits_at(big, 32) + bits_at(small, 32));
  CHECK(budget.most_bits == bits_at(big, 256) + bits_at(small, 128));
  CHECK(budget.rank_limits[0] == 160);
  // the small layer's steps are smaller: 160 - 32 ranks of the big one pay for this many of its own
  std::uint32_t small_limit = 32;
  while (small_limit < 128 && bits_at(big, 32) + bits_at(small, small_limit + 32) <= bits) small_limit += 32;
  CHECK(budget.rank_limits[1] == small_limit);
  CHECK(small_limit == 128);
}

TEST_CASE("rank allocation: the layer whose error falls most per bit gets the step", "[fit][allocation]") {
  // two layers of one shape: the steeper curve gets the only step that fits
  const std::vector<fit::BudgetLayer> same = {sized(256, 256), sized(256, 256)};
  const double one_step =
      (static_cast<double>(bits_at(same[0], 64) + bits_at(same[1], 32)) + 0.5) / (2.0 * 256 * 256);
  fit::ModelBudget budget = fit::model_budget(same, one_step);
  REQUIRE(budget.rank_limits == std::vector<std::uint32_t>{64, 64});
  fit::RankAllocation a = fit::allocate_ranks(same, budget, std::vector<std::vector<double>>{{0.5, 0.45}, {0.5, 0.40}});
  CHECK(a.ranks == std::vector<std::uint32_t>{32, 64});
  CHECK(a.steps == 1);
  a = fit::allocate_ranks(same, budget, std::vector<std::vector<double>>{{0.5, 0.39}, {0.5, 0.40}});
  CHECK(a.ranks == std::vector<std::uint32_t>{64, 32});

  // per bit and weighted by m·n: a 256×256 step (33792 bits, weight 65536)
  // against a 256×128 step (25600 bits, weight 32768); errors 0.1 and 0.14
  // lower: 65536·0.1/33792 = 0.194 beats 32768·0.14/25600 = 0.179
  const std::vector<fit::BudgetLayer> mixed = {sized(256, 128), sized(256, 256)};
  CHECK(bits_at(mixed[0], 64) - bits_at(mixed[0], 32) == 25600);
  CHECK(bits_at(mixed[1], 64) - bits_at(mixed[1], 32) == 33792);
  // room for the larger step and not for both
  const std::uint64_t least = bits_at(mixed[0], 32) + bits_at(mixed[1], 32);
  const double b = (static_cast<double>(least + 33792) + 0.5) / (256.0 * 128 + 256.0 * 256);
  budget = fit::model_budget(mixed, b);
  a = fit::allocate_ranks(mixed, budget,
                          std::vector<std::vector<double>>{{0.60, 0.46}, {0.60, 0.50}});
  CHECK(a.ranks == std::vector<std::uint32_t>{32, 64});
  // 0.13 for the smaller layer: 32768·0.15/25600 = 0.192 < 0.194, still the big one
  a = fit::allocate_ranks(mixed, budget, std::vector<std::vector<double>>{{0.60, 0.45}, {0.60, 0.50}});
  CHECK(a.ranks == std::vector<std::uint32_t>{32, 64});
  // 0.16 lower: 0.205 > 0.194, the small layer's step; then the big one's no longer fits
  a = fit::allocate_ranks(mixed, budget, std::vector<std::vector<double>>{{0.60, 0.44}, {0.60, 0.50}});
  CHECK(a.ranks == std::vector<std::uint32_t>{64, 32});
  check_budget_met(mixed, budget, a);

  // after the small layer's steep first step, the big layer's step (the
  // better of the two left) no longer fits and the small one's second does:
  // that one is taken
  const double two_steps = (static_cast<double>(least + 25600 + 30000) + 0.5) / (256.0 * 128 + 256.0 * 256);
  budget = fit::model_budget(mixed, two_steps);
  REQUIRE(budget.rank_limits == std::vector<std::uint32_t>{96, 64});
  a = fit::allocate_ranks(mixed, budget, std::vector<std::vector<double>>{{0.60, 0.10, 0.09}, {0.60, 0.40}});
  CHECK(a.ranks == std::vector<std::uint32_t>{96, 32});
  check_budget_met(mixed, budget, a);
  // so is a step that raises the error, when it is all that fits
  a = fit::allocate_ranks(mixed, budget, std::vector<std::vector<double>>{{0.60, 0.10, 0.20}, {0.60, 0.40}});
  CHECK(a.ranks == std::vector<std::uint32_t>{96, 32});
}

TEST_CASE("rank allocation: ties go to the earlier layer", "[fit][allocation]") {
  const std::vector<fit::BudgetLayer> layers = {sized(256, 256), sized(256, 256), sized(256, 256)};
  const std::uint64_t step = bits_at(layers[0], 64) - bits_at(layers[0], 32);
  const std::uint64_t least = 3 * bits_at(layers[0], 32);
  for (std::uint64_t steps = 1; steps <= 4; ++steps) {
    const double b = (static_cast<double>(least + steps * step) + 0.5) / (3.0 * 256 * 256);
    const fit::ModelBudget budget = fit::model_budget(layers, b);
    // equal curves falling by equal amounts: every step is a tie
    std::vector<std::vector<double>> curves(3);
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::uint32_t r = 32; r <= budget.rank_limits[i]; r += 32) curves[i].push_back(1.0 - r / 1024.0);
    }
    const fit::RankAllocation a = fit::allocate_ranks(layers, budget, curves);
    INFO(steps << " steps");
    CHECK(a.ranks == std::vector<std::uint32_t>{static_cast<std::uint32_t>(32 + 32 * steps), 32, 32});
    // convex and equal: the first, then the second (its first step now beats
    // the first layer's second), then the third
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t k = 0; k < curves[i].size(); ++k) curves[i][k] = 1.0 / static_cast<double>(k + 1);
    }
    const fit::RankAllocation convex = fit::allocate_ranks(layers, budget, curves);
    const std::vector<std::vector<std::uint32_t>> want = {
        {64, 32, 32}, {64, 64, 32}, {64, 64, 64}, {96, 64, 64}};
    CHECK(convex.ranks == want[steps - 1]);
  }
}

TEST_CASE("rank allocation: with equal steps and convex curves, the optimum of an exhaustive search",
          "[fit][allocation]") {
  // one shape (every step the same bits): the greedy on convex curves is
  // exact; the reference tries every combination of ranks
  std::mt19937_64 rng(5);
  const std::vector<fit::BudgetLayer> layers = {sized(256, 256), sized(256, 256), sized(256, 256)};
  for (int trial = 0; trial < 12; ++trial) {
    std::uniform_real_distribution<double> u(0.05, 1.0);
    std::vector<std::vector<double>> full(3);  // ranks 32..256, convex falling
    for (auto& c : full) {
      double e = 1.0, drop = 0.3 * u(rng);
      for (int k = 0; k < 8; ++k) {
        c.push_back(e);
        e -= drop;
        drop *= u(rng);
      }
    }
    const std::uint64_t step = bits_at(layers[0], 64) - bits_at(layers[0], 32);
    const std::uint64_t steps = 1 + static_cast<std::uint64_t>(trial) * 17 % 20;
    const std::uint64_t least = 3 * bits_at(layers[0], 32);
    const double b = (static_cast<double>(least + steps * step) + 0.5) / (3.0 * 256 * 256);
    const fit::ModelBudget budget = fit::model_budget(layers, b);
    std::vector<std::vector<double>> curves(3);
    for (std::size_t i = 0; i < 3; ++i) curves[i].assign(full[i].begin(), full[i].begin() + budget.rank_limits[i] / 32);
    const fit::RankAllocation a = fit::allocate_ranks(layers, budget, curves);
    check_budget_met(layers, budget, a);
    double best = 1e300;
    for (int x = 0; x < 8; ++x) {
      for (int y = 0; y < 8; ++y) {
        for (int z = 0; z < 8; ++z) {
          if (static_cast<std::uint64_t>(x + y + z) > steps) continue;
          best = std::min(best, full[0][x] + full[1][y] + full[2][z]);
        }
      }
    }
    const double got = full[0][a.ranks[0] / 32 - 1] + full[1][a.ranks[1] / 32 - 1] + full[2][a.ranks[2] / 32 - 1];
    INFO("trial " << trial << ", " << steps << " steps");
    CHECK(std::abs(got - best) <= 1e-12);
  }
}

TEST_CASE("rank allocation: bounds and bad curves are refused, naming the values", "[fit][allocation][errors]") {
  const std::vector<fit::BudgetLayer> layers = {sized(256, 128), {{256, 256, 64, 2}, fit::ScaleDtype::f16, true}};
  const double least = bpw_of(layers, {32, 64}), most = bpw_of(layers, {128, 64});
  const std::string low = vkt::error_of([&] { fit::model_budget(layers, least * 0.999); });
  CHECK_THAT(low, ContainsSubstring("--model-bpw " + std::format("{}", least * 0.999) + ": too low"));
  CHECK_THAT(low, ContainsSubstring(std::format("{:.4f} bpw", least)));
  CHECK_THAT(low, ContainsSubstring("the 1 of their own rank or bpw"));
  const std::string high = vkt::error_of([&] { fit::model_budget(layers, most * 1.001); });
  CHECK_THAT(high, ContainsSubstring("too high"));
  CHECK_THAT(high, ContainsSubstring(std::format("{:.4f} bpw", most)));
  CHECK_NOTHROW(fit::model_budget(layers, least));
  CHECK_NOTHROW(fit::model_budget(layers, most));
  for (const double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THAT(vkt::error_of([&] { fit::model_budget(layers, bad); }), ContainsSubstring("want a positive number"));
  }
  const std::vector<fit::BudgetLayer> all_fixed = {layers[1]};
  CHECK_THAT(vkt::error_of([&] { fit::model_budget(all_fixed, 2.0); }), ContainsSubstring("none is left"));
  const std::vector<fit::BudgetLayer> bad_shape = {sized(256, 128), {{256, 256, 40, 2}, fit::ScaleDtype::f16, true}};
  CHECK_THAT(vkt::error_of([&] { fit::model_budget(bad_shape, 2.0); }), ContainsSubstring("rank 40"));

  const fit::ModelBudget budget = fit::model_budget(layers, most);
  REQUIRE(budget.rank_limits[0] == 128);
  using Curves = std::vector<std::vector<double>>;
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks(layers, budget, Curves{{0.5, 0.4, 0.3, 0.2, 0.1}, {}}); }),
             ContainsSubstring("layer 0's curve has 5 points; ranks 32 to 128 are 4"));
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks(layers, budget, Curves{{}, {}}); }),
             ContainsSubstring("layer 0's curve has 0 points"));
  // measure must give what it is asked for: one curve per request, to its rank
  const auto one_point_too_many = [](std::span<const fit::CurveRequest> requests) {
    Curves out;
    for (const fit::CurveRequest& q : requests) out.emplace_back(q.rank / 32 + 1, 0.5);
    return out;
  };
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks_in_rounds(layers, budget, one_point_too_many); }),
             ContainsSubstring("layer 0's curve to rank 128 has 5 points"));
  const auto none = [](std::span<const fit::CurveRequest>) { return Curves{}; };
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks_in_rounds(layers, budget, none); }),
             ContainsSubstring("0 curves measured for 1 asked"));
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks(layers, budget, Curves{{0.5, 0.4, std::nan(""), 0.3}, {}}); }),
             ContainsSubstring("layer 0's curve has nan"));
  CHECK_THAT(vkt::error_of([&] { fit::allocate_ranks(layers, budget, Curves{{0.5, 0.4, 0.3, 0.2}}); }),
             ContainsSubstring("2 layers, 1 curves"));
}

TEST_CASE("rank allocation in rounds: curves measured as far as the greedy reads them give the same ranks",
          "[fit][allocation]") {
  std::mt19937_64 rng(23);
  const std::vector<fit::BudgetLayer> layers = {sized(1024, 512),
                                                sized(512, 1024),
                                                sized(768, 768),
                                                sized(2048, 256, 1),
                                                sized(640, 384, 3, fit::ScaleDtype::f32),
                                                {{512, 512, 96, 2}, fit::ScaleDtype::f16, true},  // fixed
                                                sized(256, 192)};
  std::vector<std::uint32_t> least, most;
  for (const fit::BudgetLayer& l : layers) {
    least.push_back(l.fixed ? l.shape.rank : 32);
    most.push_back(l.fixed ? l.shape.rank : fit::max_useful_rank(l.shape.m, l.shape.n));
  }
  std::uint32_t extended = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const double lo = bpw_of(layers, least), hi = bpw_of(layers, most);
    const double b = trial == 0 ? lo : trial == 1 ? hi : lo + (hi - lo) * std::uniform_real_distribution<>(0, 0.5)(rng);
    INFO("trial " << trial << " B " << b);
    const fit::ModelBudget budget = fit::model_budget(layers, b);
    // whole curves to the limits, some of them flat or rising in places
    std::vector<std::vector<double>> whole;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      whole.push_back(layers[i].fixed ? std::vector<double>{} : random_curve(rng, budget.rank_limits[i]));
    }
    const fit::RankAllocation want = fit::allocate_ranks(layers, budget, whole);
    REQUIRE(want.short_curves.empty());

    std::vector<std::uint32_t> asked_to(layers.size(), 0);
    const fit::RoundsAllocation got =
        fit::allocate_ranks_in_rounds(layers, budget, [&](std::span<const fit::CurveRequest> requests) {
          std::vector<std::vector<double>> out;
          for (const fit::CurveRequest& q : requests) {
            INFO("layer " << q.layer << " to rank " << q.rank);
            REQUIRE(!layers[q.layer].fixed);
            REQUIRE(q.rank % 32 == 0);
            REQUIRE(q.rank <= budget.rank_limits[q.layer]);
            CHECK(q.rank > asked_to[q.layer]);  // each curve asked for once at each length, longer each time
            if (asked_to[q.layer] == 0) CHECK(q.rank == fit::first_curve_rank(layers, budget, q.layer));
            asked_to[q.layer] = q.rank;
            out.emplace_back(whole[q.layer].begin(), whole[q.layer].begin() + q.rank / 32);
          }
          return out;
        });
    CHECK(got.allocation.ranks == want.ranks);
    CHECK(got.allocation.bits == want.bits);
    CHECK(got.allocation.steps == want.steps);
    CHECK(got.allocation.short_curves.empty());
    check_budget_met(layers, budget, got.allocation);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      INFO("layer " << i);
      if (layers[i].fixed) {
        CHECK(got.curves[i].empty());
        continue;
      }
      // what the report holds: a prefix of the whole curve, to the rank given or past it
      CHECK(got.curves[i].size() * 32 == asked_to[i]);
      CHECK(std::equal(got.curves[i].begin(), got.curves[i].end(), whole[i].begin()));
      CHECK(got.allocation.ranks[i] <= asked_to[i]);
    }
    extended += got.rounds > 1 ? 1 : 0;
  }
  CHECK(extended > 0);  // some trials needed longer curves
}

TEST_CASE("rank allocation: a curve that ends where a step fits stops the greedy; the first curve's rank",
          "[fit][allocation]") {
  const std::vector<fit::BudgetLayer> layers = {sized(256, 256), sized(256, 256)};
  // room for rank 96 + rank 96
  const fit::ModelBudget budget = fit::model_budget(layers, bpw_of(layers, {96, 96}));
  REQUIRE(budget.rank_limits == std::vector<std::uint32_t>{160, 160});
  // each layer's share is rank 96: its first curve goes to 1.5·96 = 144, rounded up to 160
  CHECK(fit::first_curve_rank(layers, budget, 0) == 160);
  // layer 0 falls fast, layer 1 slowly: layer 0 takes steps until its curve ends at 64
  using Curves = std::vector<std::vector<double>>;
  const fit::RankAllocation a = fit::allocate_ranks(layers, budget, Curves{{0.9, 0.5}, {0.9, 0.85, 0.8}});
  CHECK(a.short_curves == std::vector<std::size_t>{0});
  CHECK(a.ranks == std::vector<std::uint32_t>{64, 32});
  // both at the ends of their curves: both named
  const fit::RankAllocation both = fit::allocate_ranks(layers, budget, Curves{{0.9}, {0.9}});
  CHECK(both.short_curves == std::vector<std::size_t>{0, 1});
  CHECK(both.steps == 0);
  // a small share: at least one step to weigh (rank 32 fits the share, 1.5·32 is rounded up)
  const fit::ModelBudget low = fit::model_budget(layers, bpw_of(layers, {32, 64}));
  REQUIRE(low.rank_limits[1] == 64);
  CHECK(fit::first_curve_rank(layers, low, 1) == 64);
  // the fixed layers' bits are not the sized layers' share: each of four
  // gets rank 64's bits, 1.5·64 = 96 (with the fixed layer's bits in the
  // mean, rank 96's, 144 → 160)
  std::vector<fit::BudgetLayer> with_fixed(4, sized(256, 256));
  with_fixed.push_back({{256, 256, 256, 2}, fit::ScaleDtype::f16, true});
  const fit::ModelBudget fixed_budget = fit::model_budget(with_fixed, bpw_of(with_fixed, {64, 64, 64, 64, 256}));
  REQUIRE(fixed_budget.rank_limits[0] == 160);
  CHECK(fit::first_curve_rank(with_fixed, fixed_budget, 0) == 96);
  CHECK_THAT(vkt::error_of([&] { fit::first_curve_rank(with_fixed, fixed_budget, 4); }),
             ContainsSubstring("layer 4 of 5 is not one the budget sizes"));
}
