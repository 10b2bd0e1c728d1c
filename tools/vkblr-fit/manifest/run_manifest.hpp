// run_manifest.hpp — a whole checkpoint in one run: every layer of a
// manifest (manifest.hpp) fitted exactly as a single-layer vkblr-fit run
// with the same flags fits it (run_fit on one process, the same bits), and
// one output for all of them; on one process, or with the layers spread
// over the ranks of an MPI job.
//
// Files, for --out PREFIX:
//   PREFIX.layers/           the work directory: each layer's run_fit
//                            outputs and its record (layer_record.hpp)
//   PREFIX.safetensors       every fitted layer under its name (blr_model.hpp)
//   PREFIX.json              the report (manifest_report.hpp)
//   PREFIX.svg               the summary chart (summary_svg.hpp)
// The last three are written as one set once every layer is done
// (manifest_outputs.hpp); each layer's files as soon as it is
// (layer_fit.hpp). With `resume`, a layer whose record in the work
// directory matches (layer_record.hpp: the same name, settings, inputs'
// checksums and result file) is taken from there, not fitted again; a run
// resumed after any number of layers ends with the same
// PREFIX.safetensors, byte for byte, as a run never interrupted.
//
// The steps: plan (manifest_job.hpp) → the work directory
// (shared_work_dir.hpp) → with model_bpw, the ranks allocated → the schedule (layer_schedule.hpp) → each process fits its layers
// (layer_fit.hpp) → every process's rows gathered → rank 0 writes the
// outputs from the work directory (manifest_outputs.hpp).
//
// Several ranks (FitRanks of an MPI job, one device each): every rank
// reads the manifest and plans alike; the ranks check that they agree
// (FitRanks::check_agreement: the device kind, driver and GEMM policy, so
// that each layer gets the bits one process would give it; the manifest,
// the plan, the flags, the layers found done) and that the work directory
// is one they all see and write; each rank fits the layers the schedule
// gives it, one after another, writing each one's files and record into
// the work directory as it finishes; then every rank's rows are gathered
// and rank 0 reads every result from the work directory and writes the
// three outputs: PREFIX.safetensors is byte for byte the one-process run's.
// Progress lines start "rank R: "; each rank's fits are quiet. A rank that
// dies ends the job (the launcher); the others, sent SIGTERM, say that the
// finished layers stay in the work directory (term_notice.hpp); --resume
// with any number of ranks, or one process, fits the rest.
//
// The wait for the other ranks at the end: a rank that has fitted layers
// knows its seconds per unit of cost (layer_schedule.hpp's layer_cost);
// it waits up to the usual deadline (VKBLR_MPI_TIMEOUT, 300 s by default)
// plus twice the time the largest rank's share takes at its pace, so a
// rank that hangs is noticed. A rank that has fitted none has no pace to
// go by and waits without a deadline; rank 0, which fits the largest layer
// (layer_schedule.hpp), has one whenever a layer is to be fitted.
//
// With model_bpw (vkblr-fit --model-bpw), the ranks come from one bit
// budget for the whole model (model_allocation.hpp), allocated before the
// first layer is fitted (by every rank alike); a layer's allocated rank is
// part of its record's key, so a resumed layer of another rank is fitted
// again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct ManifestOptions {
  std::string manifest;               // the manifest file
  std::string out = "vkblr-fit-out";  // PREFIX
  bool resume = false;                // take matching layers from PREFIX.layers/
  bool skip_bad_layers = false;       // skip the bad layers (layer_plan.hpp); false: refuse them
  bool quiet = false;                 // no progress on stderr
  std::optional<double> model_bpw;    // a bit budget for the whole model (model_allocation.hpp)
  std::vector<std::string> command_line;
  // Called on the process that holds a layer after it is done (fitted or
  // taken from the work directory), with its row; returning false stops
  // that process there, as if it were killed: the finished layers stay in
  // the work directory, the three outputs are not written and the report
  // says complete: false.
  std::function<bool(const LayerRow&)> after_layer;
};

// Runs the manifest on `ranks` (collective: every rank calls it with the
// same options and its own context), or on one process. Every rank returns
// the same report (rows in the manifest's order: each layer done and each
// one skipped); rank 0 alone writes the three outputs. Throws vkblr::Error,
// on every rank and before any layer is fitted, for a bad manifest, a bad
// layer without skip_bad_layers (every bad layer listed), no layer left to
// fit, a model_bpw out of its bounds, an output that is one of the inputs or cannot be created, ranks that
// disagree or do not share the work directory; and, after every rank has
// stopped, naming each layer that failed, for any error of a fit.
ManifestReport run_manifest(Context& ctx, const ManifestOptions& options, FitRanks& ranks);
ManifestReport run_manifest(Context& ctx, const ManifestOptions& options);

}  // namespace vkblr::fit
