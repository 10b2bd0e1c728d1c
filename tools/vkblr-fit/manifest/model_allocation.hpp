// model_allocation.hpp — vkblr-fit --manifest job.json --model-bpw B: one
// bit budget for the whole model, spread over its layers by how fast each
// layer's error falls with its rank (rank_curve.hpp, rank_allocation.hpp).
//
// Which layers the budget sizes: every fitted layer whose manifest entry
// gives neither "rank" nor "bpw". A layer whose entry gives one keeps the
// rank that gives (its bits are taken out of the budget; the report says
// allocation.by "manifest"). "rank" or "bpw" in the manifest's "defaults"
// is refused: it would size every layer, and the budget would have
// nothing to size or be silently overruled. Skipped (bad) layers are not
// part of the model.
//
// In a manifest run: size_by_model_bpw before the layers are planned;
// check_model_budget once they are (its refusals come before anything is
// written); allocate_model_ranks before the first layer is fitted.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/manifest/layer_plan.hpp"
#include "vkblr-fit/manifest/manifest.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"
#include "vkblr-fit/manifest/rank_allocation.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// Refuses "rank" or "bpw" in the manifest's "defaults" (vkblr::Error
// naming --model-bpw and the manifest); gives every entry that sizes
// nothing itself rank 32, the smallest, which planning checks its layers'
// shapes with until the allocation replaces it.
void size_by_model_bpw(Manifest& manifest, double model_bpw);

// The budget over the fitted layers of `layers` (rank_allocation.hpp's
// model_budget: its refusals, naming --model-bpw and the bounds).
ModelBudget check_model_budget(const std::vector<PlannedLayer>& layers, double model_bpw);

struct ModelRanks {
  ModelAllocationSummary summary;
  std::vector<std::optional<LayerAllocation>> layers;  // per planned layer; nullopt for a skipped one
  nlohmann::json stages;                               // {"allocate": {wall_s, device_s}}
};

// Measures the curves of the layers the budget sizes (each W and X loaded
// as its fit loads them) in the rounds of allocate_ranks_in_rounds, as far
// as its greedy reads them, allocates, and sets those layers' ranks
// (shape.rank and options.rank). Collective: each round's curves are
// spread over `ranks` by layer_schedule.hpp's rule (costs m·n·R·P, the
// dense-residual init's products), each rank measures its own, and every
// rank gets all of them (FitRanks::gather, the values bit for bit), so
// every rank takes the same rounds and allocates the same ranks. Progress
// (the stage "allocate", this rank's curves) and a table of the ranks go
// to stderr unless `quiet`. Throws vkblr::Error on every rank, naming the
// layer and the rank, when a layer's inputs cannot be read or its curve
// not measured. Deterministic on devices of one kind.
ModelRanks allocate_model_ranks(Context& ctx, std::vector<PlannedLayer>& layers, const ModelBudget& budget,
                                FitRanks& ranks, bool quiet);

}  // namespace vkblr::fit
