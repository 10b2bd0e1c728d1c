#include "vkblr-fit/manifest/model_allocation.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <format>
#include <nlohmann/json.hpp>
#include <optional>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/manifest/layer_schedule.hpp"
#include "vkblr-fit/manifest/rank_curve.hpp"
#include "vkblr-fit/report/progress.hpp"
#include "vkblr-fit/report/stages.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// The fitted layers of the plan as the budget sees them, and where each
// is in the plan.
struct BudgetView {
  std::vector<BudgetLayer> layers;
  std::vector<std::size_t> planned;  // index in the plan of layers[k]
};

BudgetView budget_view(const std::vector<PlannedLayer>& layers) {
  BudgetView v;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& l = layers[i];
    if (!l.bad.empty()) continue;
    v.layers.push_back({l.shape, l.options.scale_dtype, l.sized});
    v.planned.push_back(i);
  }
  return v;
}

// The curve of a layer the budget sizes, at ranks 32 to `max_rank`.
std::vector<double> layer_curve(Context& ctx, const PlannedLayer& l, std::uint32_t max_rank) {
  FitOptions o = l.options;
  resolve_fit_defaults(o, ctx.caps());
  DataSpec spec = fit_data_spec(o, 0);
  spec.held_out_only = true;
  const DeviceData data = load_device_data(ctx, spec);
  return measure_rank_curve(ctx, data, {l.shape.m, l.shape.n, max_rank, l.shape.paths}, o.scale_dtype, o.seed);
}

// The curves one rank measured (indices into BudgetView::layers), or what
// stopped it, as text for FitRanks::gather. The errors travel as the bits
// of their f64 (16 hex digits, checksum.hpp's form), so every rank
// allocates from the same values:
//   {"curves": [[k, ["3fe4...", ...]], ...], "error": "" or the message}
struct RankCurves {
  std::vector<std::pair<std::size_t, std::vector<double>>> curves;
  std::string error;
};

std::string encode(const RankCurves& c) {
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& [k, curve] : c.curves) {
    nlohmann::json bits = nlohmann::json::array();
    for (const double e : curve) bits.push_back(checksum_hex(std::bit_cast<std::uint64_t>(e)));
    curves.push_back({k, bits});
  }
  return nlohmann::json{{"curves", curves}, {"error", c.error}}.dump();
}

RankCurves decode(const std::string& text, int rank) {
  RankCurves c;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    c.error = j.at("error").get<std::string>();
    for (const nlohmann::json& entry : j.at("curves")) {
      std::vector<double> curve;
      for (const nlohmann::json& hex : entry.at(1)) {
        const std::string digits = hex.get<std::string>();
        const std::optional<std::uint64_t> bits = parse_checksum_hex(digits);
        require(bits.has_value(), "'{}' is not 16 hex digits", excerpt(digits));
        curve.push_back(std::bit_cast<double>(*bits));
      }
      c.curves.emplace_back(entry.at(0).get<std::size_t>(), std::move(curve));
    }
  } catch (const std::exception& e) {
    fail("--model-bpw: the rank curves rank {} sent are not readable: {}", rank, e.what());
  }
  return c;
}

// What measuring a layer's curve to rank R costs: the m·n products of the
// dense-residual init's R·P/32 blocks (rank_curve.hpp), up to a constant.
double curve_cost(const BudgetLayer& l, std::uint32_t max_rank) {
  return static_cast<double>(l.shape.m) * l.shape.n * max_rank * l.shape.paths;
}

// The stderr table: the budget, then a line per fitted layer.
std::vector<std::string> allocation_table(const std::vector<PlannedLayer>& layers, const ModelRanks& r, int ranks) {
  const ModelBudget& b = r.summary.budget;
  const auto bpw = [&](std::uint64_t bits) { return static_cast<double>(bits) / static_cast<double>(b.weights); };
  std::vector<std::string> lines{
      std::format("vkblr-fit: --model-bpw {}: {:.4f} bpw ({} of {} bits; the smallest ranks take {:.4f} bpw, the "
                  "largest {:.4f}); {} layer(s) sized by the budget, {} by the manifest; curves measured in {} "
                  "round(s){}:",
                  b.model_bpw, r.summary.allocation.bpw, r.summary.allocation.bits, b.budget_bits,
                  bpw(b.least_bits), bpw(b.most_bits), r.summary.by_budget, r.summary.by_manifest,
                  r.summary.curve_rounds, ranks > 1 ? std::format(" on {} ranks", ranks) : ""),
      "   rank     bpw  curve error  layer"};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!r.layers[i]) continue;
    const PlannedLayer& l = layers[i];
    const LayerAllocation& a = *r.layers[i];
    const std::string error = a.by_manifest ? "          -" : std::format("{:11.4f}", a.curve[l.shape.rank / 32 - 1]);
    lines.push_back(std::format("  {:5} {:7.4f}  {}  {} ({}x{}){}", l.shape.rank,
                                bits_per_weight(l.shape, l.options.scale_dtype).total, error, excerpt(l.name, 80),
                                l.shape.m, l.shape.n, a.by_manifest ? ": its own rank or bpw, " + l.entry : ""));
  }
  return lines;
}

}  // namespace

void size_by_model_bpw(Manifest& manifest, double model_bpw) {
  require(!manifest.defaults_sized, "--model-bpw {}: manifest {} gives 'rank' or 'bpw' in 'defaults', for every "
          "layer: leave the layers the budget sizes without one (an entry's own 'rank' or 'bpw' keeps its layers' "
          "size)", model_bpw, manifest.path);
  for (ManifestEntry& entry : manifest.entries) {
    if (!entry.sized) entry.settings.rank = 32;
  }
}

ModelBudget check_model_budget(const std::vector<PlannedLayer>& layers, double model_bpw) {
  return model_budget(budget_view(layers).layers, model_bpw);
}

ModelRanks allocate_model_ranks(Context& ctx, std::vector<PlannedLayer>& layers, const ModelBudget& budget,
                                FitRanks& ranks, bool quiet) {
  const BudgetView view = budget_view(layers);
  require(view.layers.size() == budget.rank_limits.size(), "--model-bpw: a budget of {} layers for {}",
          budget.rank_limits.size(), view.layers.size());
  ModelRanks r;
  r.summary.budget = budget;
  for (const BudgetLayer& l : view.layers) ++(l.fixed ? r.summary.by_manifest : r.summary.by_budget);

  StageProgress stages(ctx, stderr, progress_style_for(stderr, quiet));
  std::uint64_t my_curves = 0, my_done = 0;  // this rank's, over the rounds
  std::uint32_t round = 0;
  std::vector<int> measured_by(view.layers.size(), -1);
  // one round: the requests spread over the ranks, each rank measures its
  // share, and every rank gets every curve
  const MeasureCurves measure = [&](std::span<const CurveRequest> requests) {
    std::vector<double> costs;
    for (const CurveRequest& q : requests) costs.push_back(curve_cost(view.layers[q.layer], q.rank));
    const std::vector<std::vector<std::size_t>> schedule = schedule_layers(costs, ranks.size());
    const std::vector<std::size_t>& mine = schedule[static_cast<std::size_t>(ranks.rank())];
    my_curves += mine.size();
    if (++round == 1) {
      stages.begin(Stage::allocate, my_curves, "curves");
    } else {
      stages.set_total(my_curves);
    }
    const auto t0 = std::chrono::steady_clock::now();
    RankCurves measured;
    double my_cost = 0;
    for (const std::size_t s : mine) {
      const std::size_t k = requests[s].layer;
      const PlannedLayer& l = layers[view.planned[k]];
      try {
        measured.curves.emplace_back(k, layer_curve(ctx, l, requests[s].rank));
      } catch (const Error& e) {
        measured.error = std::format("layer '{}' ({}): its rank curve for --model-bpw{}: {}", excerpt(l.name),
                                     l.entry, ranks.size() > 1 ? std::format(" on rank {}", ranks.rank()) : "",
                                     e.what());
        break;
      }
      my_cost += costs[s];
      stages.update(++my_done);
    }
    const double my_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double wait_s = wait_for_others_s(costs, schedule, my_cost, my_s);
    const std::vector<std::string> sent = ranks.gather(encode(measured), "the rank curves of --model-bpw", wait_s);

    std::vector<std::vector<double>> curves(requests.size());
    std::vector<bool> received(requests.size(), false);
    for (std::size_t from = 0; from < sent.size(); ++from) {
      RankCurves c = decode(sent[from], static_cast<int>(from));
      if (!c.error.empty()) fail("{}", c.error);  // the first failing rank's, on every rank
      for (auto& [k, curve] : c.curves) {
        std::size_t q = 0;
        while (q < requests.size() && requests[q].layer != k) ++q;
        require(q < requests.size() && !received[q] &&
                    std::find(schedule[from].begin(), schedule[from].end(), q) != schedule[from].end(),
                "--model-bpw: rank {} sent a curve for layer {}, which is not its to measure", from, k);
        curves[q] = std::move(curve);
        received[q] = true;
        measured_by[k] = static_cast<int>(from);
      }
    }
    return curves;  // a missing one is refused by allocate_ranks_in_rounds
  };
  RoundsAllocation allocated = allocate_ranks_in_rounds(view.layers, budget, measure);
  r.summary.allocation = allocated.allocation;
  r.summary.curve_rounds = allocated.rounds;
  stages.end();
  r.stages = stages.to_json();

  r.layers.resize(layers.size());
  for (std::size_t k = 0; k < view.layers.size(); ++k) {
    PlannedLayer& l = layers[view.planned[k]];
    if (!view.layers[k].fixed) {
      l.shape.rank = r.summary.allocation.ranks[k];
      l.options.rank = l.shape.rank;
    }
    r.layers[view.planned[k]] =
        LayerAllocation{view.layers[k].fixed, std::move(allocated.curves[k]), measured_by[k]};
  }
  for (const std::string& line : allocation_table(layers, r, ranks.size())) stages.say(line);
  return r;
}

}  // namespace vkblr::fit
