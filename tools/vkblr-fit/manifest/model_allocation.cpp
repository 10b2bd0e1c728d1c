#include "vkblr-fit/manifest/model_allocation.hpp"

#include <cstdio>
#include <format>

#include "vkblr-fit/bpw.hpp"
#include "vkblr-fit/io/excerpt.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/io/device_data.hpp"
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
  const DeviceData data = load_device_data(ctx, fit_data_spec(o, 0));
  return measure_rank_curve(ctx, data, {l.shape.m, l.shape.n, max_rank, l.shape.paths}, o.scale_dtype, o.seed);
}

// The stderr table: the budget, then a line per fitted layer.
std::vector<std::string> allocation_table(const std::vector<PlannedLayer>& layers, const ModelRanks& r) {
  const ModelBudget& b = r.summary.budget;
  const auto bpw = [&](std::uint64_t bits) { return static_cast<double>(bits) / static_cast<double>(b.weights); };
  std::vector<std::string> lines{
      std::format("vkblr-fit: --model-bpw {}: {:.4f} bpw ({} of {} bits; the smallest ranks take {:.4f} bpw, the "
                  "largest {:.4f}); {} layer(s) sized by the budget, {} by the manifest:",
                  b.model_bpw, r.summary.allocation.bpw, r.summary.allocation.bits, b.budget_bits,
                  bpw(b.least_bits), bpw(b.most_bits), r.summary.by_budget, r.summary.by_manifest),
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
                                bool quiet) {
  const BudgetView view = budget_view(layers);
  require(view.layers.size() == budget.rank_limits.size(), "--model-bpw: a budget of {} layers for {}",
          budget.rank_limits.size(), view.layers.size());
  StageProgress stages(ctx, stderr, progress_style_for(stderr, quiet));
  ModelRanks r;
  r.summary.budget = budget;
  std::vector<std::vector<double>> curves(view.layers.size());
  for (const BudgetLayer& l : view.layers) ++(l.fixed ? r.summary.by_manifest : r.summary.by_budget);
  stages.begin(Stage::allocate, r.summary.by_budget, "layers");
  std::uint64_t measured = 0;
  for (std::size_t k = 0; k < view.layers.size(); ++k) {
    if (view.layers[k].fixed) continue;
    const PlannedLayer& l = layers[view.planned[k]];
    try {
      curves[k] = layer_curve(ctx, l, budget.rank_limits[k]);
    } catch (const Error& e) {
      fail("layer '{}' ({}): its rank curve for --model-bpw: {}", excerpt(l.name), l.entry, e.what());
    }
    stages.update(++measured);
  }
  r.summary.allocation = allocate_ranks(view.layers, budget, curves);
  stages.end();
  r.stages = stages.to_json();

  r.layers.resize(layers.size());
  for (std::size_t k = 0; k < view.layers.size(); ++k) {
    PlannedLayer& l = layers[view.planned[k]];
    if (!view.layers[k].fixed) {
      l.shape.rank = r.summary.allocation.ranks[k];
      l.options.rank = l.shape.rank;
    }
    r.layers[view.planned[k]] = LayerAllocation{view.layers[k].fixed, std::move(curves[k])};
  }
  for (const std::string& line : allocation_table(layers, r)) stages.say(line);
  return r;
}

}  // namespace vkblr::fit
