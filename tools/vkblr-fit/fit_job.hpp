// fit_job.hpp — a whole vkblr-fit run: Dual-SVID init, GPU training of
// signs and scales (one replayed graph per step), held-out evaluation,
// checkpoints, the result file, the JSON report and the chart — on one
// device, or on the ranks of an MPI job, each with its slice of every batch
// (fit_ranks.hpp).
#pragma once

#include "vkblr-fit/fit_options.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/report/report.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// Fills the options left at 0 from the device: a CPU device (lavapipe) gets
// a small synthetic layer (512×512, 512-token batches, 300 steps) so the
// default run finishes in about a minute on two cores; a GPU gets the
// 3584×1024 layer of an LLM projection with 4096-token batches. Throws
// vkblr::Error for inconsistent sizes (tokens or held-out not a multiple of
// the batch, ...).
void resolve_fit_defaults(FitOptions& options, const Caps& caps);

// Where a run's W and X come from: the files or synthetic family of
// `resolved` (resolve_fit_defaults' options); `family_rank` is the
// synthetic families' rank when the options give none (the layer's).
DataSpec fit_data_spec(const FitOptions& resolved, std::uint32_t family_rank);

// Trains (or resumes from options.resume) and writes <out>.safetensors,
// <out>.json and <out>.svg (and <out>.ckpt with checkpoint_every). Progress
// goes to stderr. Returns the report. One process (LocalRanks).
FitReport run_fit(Context& ctx, FitOptions options);

// The same on every rank of `ranks` (collective: each rank calls it with the
// same options and its own context). Rank 0 alone writes the files and
// prints progress, and only its report has the host-side errors (weight,
// activation-weighted; the held-out output errors are every rank's). The
// checkpoint holds no rank count: it resumes with any (every rank reads
// it; the ranks' agreement is checked).
FitReport run_fit(Context& ctx, FitOptions options, FitRanks& ranks);

// --eval: the errors of a saved result file against W and X (no training).
nlohmann::json run_eval(Context& ctx, FitOptions options);

}  // namespace vkblr::fit
