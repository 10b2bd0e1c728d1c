// fit_job.hpp — a whole vkblr-fit run on one device: Dual-SVID init, GPU
// training of signs and scales (one replayed graph per step), held-out
// evaluation, checkpoints, the result file, the JSON report and the chart.
#pragma once

#include "vkblr-fit/fit_options.hpp"
#include "vkblr-fit/report.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// Fills the options left at 0 from the device: a CPU device (lavapipe) gets
// a small synthetic layer (512×512, 512-token batches, 300 steps) so the
// default run finishes in about a minute on two cores; a GPU gets the
// 3584×1024 layer of an LLM projection with 4096-token batches. Throws
// vkblr::Error for inconsistent sizes (tokens or held-out not a multiple of
// the batch, ...).
void resolve_fit_defaults(FitOptions& options, const Caps& caps);

// Trains (or resumes from options.resume) and writes <out>.safetensors,
// <out>.json and <out>.svg (and <out>.ckpt with checkpoint_every). Progress
// goes to stderr. Returns the report.
FitReport run_fit(Context& ctx, FitOptions options);

// --eval: the errors of a saved result file against W and X (no training).
nlohmann::json run_eval(Context& ctx, FitOptions options);

}  // namespace vkblr::fit
