#include "vkblr-fit/manifest/rank_outcome.hpp"

#include <format>

#include "vkblr/io/json_input.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

std::string outcome_text(const RankOutcome& o) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [layer, row] : o.rows) {
    rows.push_back({{"layer", layer}, {"resumed", row.resumed}, {"row", to_json(row)}});
  }
  return nlohmann::json{{"rows", rows}, {"error", o.error}, {"stopped", o.stopped}}.dump();
}

// Rank `rank`'s outcome (outcome_text) for a job of `layers` layers.
RankOutcome read_outcome(const std::string& text, int rank, std::size_t layers) {
  const nlohmann::json j = nlohmann::json::parse(text);
  const JsonField outcome(j, std::format("rank {}'s layers", rank));
  RankOutcome o;
  for (std::size_t k = 0; k < outcome["rows"].size(); ++k) {
    const JsonField entry = outcome["rows"][k];
    const std::size_t layer = entry["layer"].u64();
    require(layer < layers, "{}: layer {} of {}", entry.label(), layer, layers);
    LayerRow row = layer_row_from_json(entry["row"]);
    row.resumed = entry["resumed"].value().get<bool>();
    row.mpi_rank = rank;
    o.rows.emplace_back(layer, std::move(row));
  }
  o.error = outcome["error"].string();
  o.stopped = outcome["stopped"].value().get<bool>();
  return o;
}

}  // namespace

std::vector<std::optional<LayerRow>> gather_outcomes(FitRanks& ranks, const RankOutcome& mine, std::size_t layers,
                                                     double wait_s, const std::string& work_dir, bool& stopped) {
  const std::vector<std::string> outcomes = ranks.gather(outcome_text(mine), "every rank's layers", wait_s);
  std::vector<std::optional<LayerRow>> rows(layers);
  std::string errors;
  stopped = false;
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    RankOutcome o = read_outcome(outcomes[r], static_cast<int>(r), layers);
    for (auto& [layer, row] : o.rows) rows[layer] = std::move(row);
    if (!o.error.empty()) errors += (errors.empty() ? "" : "\n") + o.error;
    stopped = stopped || o.stopped;
  }
  if (!errors.empty() && ranks.size() > 1) {
    fail("{}\nThe layers finished are in {}: --resume continues with them", errors, work_dir);
  }
  require(errors.empty(), "{}", errors);
  return rows;
}

}  // namespace vkblr::fit
