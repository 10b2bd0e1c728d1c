// manifest_report.hpp — the report of a manifest run (<out>.json): one row
// per layer of the manifest, in order, and the model's totals.
//
//   tool_version, command_line [..], device, manifest (its path),
//   manifest_xxh3, complete (false: the run stopped before the outputs),
//   layers [row, ...], totals {...}, and with --model-bpw stages
//   {allocate: {wall_s, device_s}} (the curves and the allocation)
// A row:
//   name, entry ("layers[2]"), weight ("file:tensor"), activations,
//   stored_shape ("[4096, 1024]"), skipped (null, or why the layer was
//   skipped: --on-bad-layer skip), and for a fitted layer
//   m, n, rank, paths, scale_dtype, bpw, bits (signs, scales, metadata),
//   errors {init {weight, output, activation_weighted}, trained {...}}
//   (report.hpp's, output errors on the held-out tokens), stages {load:
//   {wall_s, device_s}, ...} and wall_s (of the run that fitted it),
//   resumed (true: fitted by an earlier run, taken from the work
//   directory), result (the layer's result file), mpi_rank (the rank of
//   the process that fitted it or took it from the work directory; 0 in a
//   run of one process), and with --model-bpw allocation {by: "budget"
//   (the rank allocated) or "manifest" (the entry's own rank or bpw,
//   kept), rank, curve [{rank, bpw, error}, ...] (rank_curve.hpp's
//   held-out init errors; empty for "manifest"), curve_mpi_rank (the rank
//   of the process that measured the curve; null for "manifest")}
// totals:
//   layers, fitted, resumed, skipped (counts), weights (m·n of the fitted
//   layers), bits (theirs), bpw = bits / weights, wall_s (this run's),
//   fit_wall_s (the rows' wall_s, resumed layers included), mpi_ranks
//   (the processes of the run: run_manifest.hpp),
//   weighted_output_error {init, trained}: the model's weighted error
//   Σ m·n·e / Σ m·n over the fitted layers, e a row's held-out output
//   error (rank_allocation.hpp), and with --model-bpw
//   allocation {model_bpw (B), bpw (the allocation's: bits / weights),
//   bits, budget_bits (the most bits whose bpw is at most B), weights,
//   least_bpw, most_bpw (the bounds B must lie in), layers_by_budget,
//   layers_by_manifest, steps (rank steps given), method}
// Non-finite numbers are written as null.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vkblr/io/json_input.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/rank_allocation.hpp"
#include "vkblr-fit/report/report.hpp"

namespace vkblr::fit {

// How --model-bpw sized a layer (model_allocation.hpp).
struct LayerAllocation {
  bool by_manifest = false;   // the entry's own rank or bpw, kept
  std::vector<double> curve;  // held-out init error at ranks 32, 64, ...; empty when by_manifest
  int curve_mpi_rank = -1;    // the rank of the process that measured the curve (-1: none)
};

struct LayerRow {
  std::string name, entry, weight_source, activation_source, stored_shape;
  std::string skipped;  // why the layer was skipped; empty for a fitted layer
  // a fitted layer's:
  LayerShape shape;
  ScaleDtype scale_dtype = ScaleDtype::f16;
  ErrorSummary init, trained;
  nlohmann::json stages = nlohmann::json::object();
  double wall_s = 0;
  bool resumed = false;
  std::string result;
  int mpi_rank = -1;  // of the process that fitted it or took it from the work directory (-1: none yet)
  std::optional<LayerAllocation> allocation;  // with --model-bpw (not read from a layer record)
};

nlohmann::json to_json(const LayerRow& row);

// A row as to_json writes it (a fitted layer's), read back from a layer
// record (layer_record.hpp); throws vkblr::Error naming the field. Its
// resumed and mpi_rank are left at false and -1: they are the run's.
LayerRow layer_row_from_json(const JsonField& row);

struct ManifestTotals {
  std::uint64_t layers = 0, fitted = 0, resumed = 0, skipped = 0;
  std::uint64_t weights = 0, bits = 0;
  double bpw = 0, fit_wall_s = 0;
  // the model's weighted held-out output error Σ m·n·e / Σ m·n of the
  // rows' init and trained errors (0 without fitted layers)
  double weighted_init_error = 0, weighted_trained_error = 0;
};
ManifestTotals manifest_totals(std::span<const LayerRow> rows);

// --model-bpw: the budget and the allocation over the layers.
struct ModelAllocationSummary {
  ModelBudget budget;
  RankAllocation allocation;
  std::uint64_t by_budget = 0, by_manifest = 0;  // layers
  std::uint32_t curve_rounds = 0;                 // allocate_ranks_in_rounds' rounds
};

struct ManifestReport {
  std::string tool_version;
  std::vector<std::string> command_line;
  std::string device;
  std::string manifest;
  std::uint64_t manifest_checksum = 0;
  bool complete = false;
  std::vector<LayerRow> layers;
  double wall_s = 0;
  int mpi_ranks = 1;
  std::optional<ModelAllocationSummary> allocation;  // with --model-bpw
  nlohmann::json stages = nlohmann::json::object();  // the run's own stages (allocate)
};

nlohmann::json to_json(const ManifestReport& report);

}  // namespace vkblr::fit
