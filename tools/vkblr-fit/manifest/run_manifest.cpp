#include "vkblr-fit/manifest/run_manifest.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <format>
#include <functional>
#include <optional>

#include "vkblr/io/checksum.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/manifest/layer_fit.hpp"
#include "vkblr-fit/manifest/layer_record.hpp"
#include "vkblr-fit/manifest/layer_schedule.hpp"
#include "vkblr-fit/manifest/manifest_job.hpp"
#include "vkblr-fit/manifest/manifest_outputs.hpp"
#include "vkblr-fit/manifest/model_allocation.hpp"
#include "vkblr-fit/manifest/rank_outcome.hpp"
#include "vkblr-fit/manifest/shared_work_dir.hpp"
#include "vkblr-fit/manifest/term_notice.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The layers to fit and which process fits which.
struct LayerSchedule {
  std::vector<double> cost;                     // per layer of the job (0 for a bad one)
  std::vector<std::vector<std::size_t>> ranks;  // each rank's layers (job indices), in manifest order
  // what every rank must share besides its device: the manifest, the
  // plan, the flags and the layers an earlier run finished
  std::vector<std::pair<std::string, std::string>> agreed;
};

// The schedule of the job's fittable layers over `ranks` ranks. With
// `resume`, a layer whose record is in the work directory costs only the
// reading of its inputs (layer_schedule.hpp).
LayerSchedule schedule_job(const ManifestJob& job, const ManifestOptions& options, const Caps& caps, int ranks) {
  LayerSchedule s;
  s.cost.assign(job.layers.size(), 0.0);
  std::vector<std::size_t> fittable;
  std::vector<double> costs;
  nlohmann::json plan = nlohmann::json::array();
  std::string found;
  for (std::size_t i = 0; i < job.layers.size(); ++i) {
    const PlannedLayer& l = job.layers[i];
    plan.push_back({l.name, l.entry, l.stored_shape, l.bad});
    if (!l.bad.empty()) continue;
    FitOptions resolved = l.options;
    resolve_fit_defaults(resolved, caps);
    std::error_code ec;
    const bool done = options.resume && fs::exists(layer_files(job.work_dir, l.name).record, ec);
    if (done) found += std::format("{}{}", found.empty() ? "" : ", ", i + 1);
    plan.back().push_back(layer_key(l.name, resolved, l.shape, {}));  // the settings (no input is read here)
    s.cost[i] = layer_cost(l.shape, resolved, !done);
    fittable.push_back(i);
    costs.push_back(s.cost[i]);
  }
  for (const std::vector<std::size_t>& mine : schedule_layers(costs, ranks)) {
    s.ranks.emplace_back();
    for (const std::size_t k : mine) s.ranks.back().push_back(fittable[k]);
  }
  s.agreed = {{"manifest (xxh3)", checksum_hex(job.manifest.checksum)},
              {"the layers planned (xxh3)", checksum_hex(xxh3_64(plan.dump()))},
              {"--resume", options.resume ? "yes" : "no"},
              {"--on-bad-layer", options.skip_bad_layers ? "skip" : "fail"},
              {"layers with a record in the work directory", found.empty() ? "none" : found}};
  return s;
}

// "layers 2, 4, 5: NAME, NAME, NAME"
std::string layers_line(const ManifestJob& job, const std::vector<std::size_t>& layers) {
  if (layers.empty()) return "no layer to fit (more ranks than layers to fit)";
  std::string numbers, names;
  for (const std::size_t i : layers) {
    numbers += std::format("{}{}", numbers.empty() ? "" : ", ", i + 1);
    names += (names.empty() ? "" : ", ") + excerpt(job.layers[i].name);
  }
  return std::format("layers {}: {}", numbers, names);
}

// What a rank of several says when the launcher ends it (term_notice.hpp).
std::string term_text(const ManifestJob& job, const ManifestOptions& options, const LayerSchedule& s, int rank) {
  std::string by_rank;
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    std::string numbers;
    for (const std::size_t i : s.ranks[r]) numbers += std::format("{}{}", numbers.empty() ? "" : ",", i + 1);
    by_rank += std::format("{}rank {}: {}", r ? "; " : "", r, numbers.empty() ? "none" : numbers);
  }
  return std::format("vkblr-fit: rank {}: ended by SIGTERM (the launcher ends every rank when one dies); layers by "
                     "rank: {}. Every layer finished is in {}; vkblr-fit --manifest {} --out {} --resume (with any "
                     "number of ranks, or one process) fits the others\n",
                     rank, by_rank, job.work_dir, options.manifest, options.out);
}

// Fits (or takes from the work directory) `mine`, the layers of this
// process, one after another, until one fails or after_layer says stop.
RankOutcome fit_layers(Context& ctx, const ManifestJob& job, const ManifestOptions& options,
                       const std::vector<double>& cost, const std::vector<std::size_t>& mine, int rank, bool several,
                       const std::function<void(const std::string&)>& say) {
  const LayerFitSettings settings{.work_dir = job.work_dir,
                                  .resume = options.resume,
                                  .quiet = options.quiet || several,
                                  .command_line = options.command_line,
                                  .say = say};
  RankOutcome outcome;
  for (const std::size_t i : mine) {
    const std::string label = layer_label(job, i);
    try {
      const Clock::time_point t0 = Clock::now();
      LayerRow row = fit_manifest_layer(ctx, job.layers[i], settings, label);
      row.mpi_rank = rank;
      if (!row.resumed) {
        outcome.fitted_cost += cost[i];
        outcome.fitted_s += seconds_since(t0);
        if (several) {
          say(std::format("{}: done in {:.1f} s; held-out output error {:.4e} (init {:.4e})", label, row.wall_s,
                          row.trained.output, row.init.output));
        }
      }
      outcome.rows.emplace_back(i, row);
      if (options.after_layer && !options.after_layer(row)) {
        say(std::format("vkblr-fit: stopped after {}, as asked; --resume continues", label));
        outcome.stopped = true;
        break;
      }
    } catch (const Error& e) {
      outcome.error = std::format("{} ({}){}: {}", label, job.layers[i].entry,
                                  several ? std::format(" on rank {}", rank) : "", e.what());
      break;
    }
  }
  return outcome;
}

}  // namespace

ManifestReport run_manifest(Context& ctx, const ManifestOptions& options, FitRanks& ranks) {
  const Clock::time_point t_start = Clock::now();
  const bool several = ranks.size() > 1;
  const int rank = ranks.rank();
  const auto say = [&](const std::string& line) {
    if (options.quiet) return;
    const std::string text = several ? std::format("rank {}: {}\n", rank, line) : line + "\n";
    std::fputs(text.c_str(), stderr);  // one call: the lines of ranks do not mix
  };
  ManifestJob job =
      plan_manifest_job(options.manifest, options.out, options.skip_bad_layers, options.model_bpw, ctx.caps());
  prepare_shared_work_dir(ranks, job.work_dir, options.out, [&] { prepare_manifest_outputs(job, options.out); });
  // --model-bpw sets the planned layers' ranks: the costs, the plan the
  // ranks agree on and the fits all follow job.layers[i].shape. The ranks
  // share out the curves and exchange them, so all allocate alike; rank 0
  // prints the table.
  std::optional<ModelRanks> allocated;
  if (job.budget) allocated = allocate_model_ranks(ctx, job.layers, *job.budget, ranks, options.quiet || rank != 0);
  const LayerSchedule schedule = schedule_job(job, options, ctx.caps(), ranks.size());
  try {
    ranks.check_agreement(ctx, schedule.agreed);
  } catch (const Error& e) {
    fail("{}\nThe ranks of a manifest run must run the same manifest on devices of one kind and driver under one "
         "GEMM policy: else their layers would not be the bits one process gives them.", e.what());
  }

  if (rank == 0) {
    say(std::format("vkblr-fit: manifest {}: {} layer(s); work directory {}{}", job.manifest.path, job.layers.size(),
                    job.work_dir, several ? std::format("; {} ranks", ranks.size()) : ""));
    if (several) {
      say(std::format("vkblr-fit: a rank that dies ends the job; every layer finished stays in {}, and the same "
                      "command with --resume (any number of ranks, or one process) fits the others",
                      job.work_dir));
    }
    for (std::size_t i = 0; i < job.layers.size(); ++i) {
      if (!job.layers[i].bad.empty()) say(std::format("{}: skipped: {}", layer_label(job, i), job.layers[i].bad));
    }
  }
  std::optional<TermNotice> notice;
  if (several) {
    say(layers_line(job, schedule.ranks[static_cast<std::size_t>(rank)]));
    notice.emplace(term_text(job, options, schedule, rank));
  }

  const RankOutcome mine =
      fit_layers(ctx, job, options, schedule.cost, schedule.ranks[static_cast<std::size_t>(rank)], rank, several, say);
  bool stopped = false;
  std::vector<std::optional<LayerRow>> rows =
      gather_outcomes(ranks, mine, job.layers.size(), wait_for_others_s(schedule.cost, schedule.ranks, mine.fitted_cost, mine.fitted_s), job.work_dir, stopped);

  ManifestReport report{.tool_version = std::string(vkblr::version()),
                        .command_line = options.command_line,
                        .device = ctx.caps().device_name + " (" + ctx.caps().driver_info + ")",
                        .manifest = job.manifest.path,
                        .manifest_checksum = job.manifest.checksum,
                        .mpi_ranks = ranks.size()};
  if (allocated) {
    report.allocation = allocated->summary;
    report.stages = allocated->stages;
  }
  for (std::size_t i = 0; i < job.layers.size(); ++i) {
    if (!job.layers[i].bad.empty()) report.layers.push_back(planned_row(job.layers[i]));
    if (!rows[i]) continue;
    if (allocated) rows[i]->allocation = allocated->layers[i];
    report.layers.push_back(std::move(*rows[i]));
  }
  report.complete = !stopped;
  if (stopped || rank != 0) {
    report.wall_s = seconds_since(t_start);
    return report;
  }
  const FileToWrite model = manifest_model_file(job, report.layers);
  report.wall_s = seconds_since(t_start);
  write_manifest_outputs(job, model, report);
  const ManifestTotals totals = manifest_totals(report.layers);
  say(std::format("vkblr-fit: {} layer(s) fitted ({} from an earlier run), {} skipped; {:.4f} bits per weight over {} "
                  "weights; {:.1f} s{}; wrote {}.safetensors, .json, .svg",
                  totals.fitted, totals.resumed, totals.skipped, totals.bpw, totals.weights, report.wall_s,
                  several ? std::format(" on {} ranks", ranks.size()) : "", options.out));
  return report;
}

ManifestReport run_manifest(Context& ctx, const ManifestOptions& options) {
  LocalRanks one;
  return run_manifest(ctx, options, one);
}

}  // namespace vkblr::fit
