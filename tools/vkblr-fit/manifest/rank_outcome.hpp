// rank_outcome.hpp — what each process of a manifest run (run_manifest.hpp)
// has done once its layers are: the rows of the layers it fitted or took
// from the work directory, or where it stopped; gathered by every process,
// so that every rank knows every row and every failure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"

namespace vkblr::fit {

struct RankOutcome {
  std::vector<std::pair<std::size_t, LayerRow>> rows;  // (layer index, its row), in the order done
  std::string error;                                   // the layer that failed, named, and why (empty: none)
  bool stopped = false;                                // stopped by ManifestOptions::after_layer
  double fitted_cost = 0, fitted_s = 0;                // of the layers fitted here (not those resumed)
};

// Collective: every rank's outcome, exchanged as JSON (FitRanks::gather,
// waiting up to `wait_s` seconds beyond the usual deadline). Returns the
// row of each of the job's `layers` layers that a rank did (nullopt for the
// others), each with the rank that did it; sets `stopped` when a rank
// stopped. Throws vkblr::Error on every rank when a layer failed, naming
// each failure (one per rank at most) and, with several ranks, that the
// layers finished are in `work_dir` for --resume.
std::vector<std::optional<LayerRow>> gather_outcomes(FitRanks& ranks, const RankOutcome& mine, std::size_t layers,
                                                     double wait_s, const std::string& work_dir, bool& stopped);

}  // namespace vkblr::fit
