#include "vkblr-fit/manifest/run_manifest.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <format>

#include "vkblr-fit/blr_model.hpp"
#include "vkblr-fit/excerpt.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr-fit/manifest/layer_plan.hpp"
#include "vkblr-fit/manifest/layer_record.hpp"
#include "vkblr-fit/manifest/manifest.hpp"
#include "vkblr-fit/manifest/model_allocation.hpp"
#include "vkblr-fit/manifest/summary_svg.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Refuses bad layers unless they are to be skipped: all of them in one
// message.
void check_bad_layers(const Manifest& manifest, const std::vector<PlannedLayer>& layers, bool skip) {
  std::string list;
  std::size_t count = 0, fittable = 0;
  for (const PlannedLayer& l : layers) {
    if (l.bad.empty()) {
      ++fittable;
      continue;
    }
    if (++count <= 20) list += std::format("\n  '{}' ({}, {}): {}", excerpt(l.name), l.entry, l.weight_source, l.bad);
  }
  if (count > 20) list += std::format("\n  ... and {} more", count - 20);
  require(skip || count == 0, "manifest {}: {} bad layer(s), which vkblr-fit cannot fit (--on-bad-layer skip skips "
          "them):{}", manifest.path, count, list);
  require(fittable > 0, "manifest {}: no layer to fit: every layer is bad:{}", manifest.path, list);
}

// The checks of prepare_fit_outputs for the three outputs and the work
// directory (created here); removes the outputs' stale temporaries.
std::string prepare_outputs(const FitOutputPaths& paths, const std::string& out, const Manifest& manifest,
                            const std::vector<PlannedLayer>& layers) {
  const std::string work_dir = out + ".layers";
  const std::string outputs[] = {paths.safetensors, paths.json, paths.svg, work_dir};
  for (const std::string& output : outputs) {
    require(!same_file(output, manifest.path), "--out {}: the output {} is the manifest {}: choose another --out", out,
            output, manifest.path);
    for (const PlannedLayer& l : layers) {
      for (const std::string* input : {&l.options.weight_path, &l.options.activations_path}) {
        require(!same_file(output, *input), "--out {}: the output {} is an input of layer '{}', {}: choose another "
                "--out", out, output, excerpt(l.name), *input);
      }
    }
  }
  for (const std::string& output : {paths.safetensors, paths.json, paths.svg}) check_creatable(output);
  std::error_code ec;
  if (!fs::is_directory(work_dir, ec)) {
    require(!fs::exists(work_dir, ec), "--out {}: {} is in the way of the work directory: it is not a directory", out,
            work_dir);
    check_creatable(work_dir);
    fs::create_directory(work_dir);
  }
  for (const std::string& output : {paths.safetensors, paths.json, paths.svg}) remove_stale_temporaries(output);
  return work_dir;
}

// A row of what the plan knows of a layer; a fitted layer's row adds its
// fit's report (which names its inputs as the single-layer run does).
LayerRow planned_row(const PlannedLayer& l) {
  LayerRow row;
  row.name = l.name;
  row.entry = l.entry;
  row.weight_source = l.weight_source;
  row.activation_source = l.options.activations_path;
  row.stored_shape = l.stored_shape;
  row.skipped = l.bad;
  return row;
}

LayerRow fitted_row(const PlannedLayer& l, const FitReport& report, const std::string& result) {
  LayerRow row = planned_row(l);
  row.weight_source = report.weight_source;
  row.activation_source = report.activation_source;
  row.shape = report.bpw.shape;
  row.scale_dtype = report.bpw.scale_dtype;
  row.init = report.init;
  row.trained = report.trained;
  row.stages = report.stages;
  row.wall_s = report.wall_s;
  row.result = result;
  return row;
}

}  // namespace

ManifestReport run_manifest(Context& ctx, const ManifestOptions& options) {
  const Clock::time_point t_start = Clock::now();
  const auto say = [&](const std::string& line) {
    if (!options.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };
  Manifest manifest = read_manifest(options.manifest);
  if (options.model_bpw) size_by_model_bpw(manifest, *options.model_bpw);
  std::vector<PlannedLayer> layers = plan_layers(manifest, ctx.caps());
  check_bad_layers(manifest, layers, options.skip_bad_layers);
  std::optional<ModelBudget> budget;
  if (options.model_bpw) budget = check_model_budget(layers, *options.model_bpw);
  FitOptions out_options;
  out_options.out = options.out;
  const FitOutputPaths paths = fit_output_paths(out_options);
  const std::string work_dir = prepare_outputs(paths, options.out, manifest, layers);

  ManifestReport report{.tool_version = std::string(vkblr::version()),
                        .command_line = options.command_line,
                        .device = ctx.caps().device_name + " (" + ctx.caps().driver_info + ")",
                        .manifest = manifest.path,
                        .manifest_checksum = manifest.checksum};
  say(std::format("vkblr-fit: manifest {}: {} layer(s); work directory {}", manifest.path, layers.size(), work_dir));
  std::vector<std::optional<LayerAllocation>> allocations(layers.size());
  if (budget) {
    ModelRanks ranks = allocate_model_ranks(ctx, layers, *budget, options.quiet);
    report.allocation = ranks.summary;
    report.stages = std::move(ranks.stages);
    allocations = std::move(ranks.layers);
  }

  BlrModel model;
  model.tool_version = report.tool_version;
  model.manifest_checksum = manifest.checksum;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& l = layers[i];
    const std::string label = std::format("layer {}/{} '{}'", i + 1, layers.size(), excerpt(l.name));
    if (!l.bad.empty()) {
      say(std::format("{}: skipped: {}", label, l.bad));
      report.layers.push_back(planned_row(l));
      continue;
    }
    const LayerFiles files = layer_files(work_dir, l.name);
    FitOptions o = l.options;
    o.out = files.prefix;
    o.quiet = options.quiet;
    o.command_line = options.command_line;
    FitOptions resolved = o;
    resolve_fit_defaults(resolved, ctx.caps());
    std::optional<LayerRow> row;
    try {
      std::error_code ec;
      if (options.resume && fs::exists(files.record, ec)) {  // (the checksums read the inputs whole)
        std::string why;
        row = find_layer_record(files, l.name, layer_key(l.name, resolved, l.shape, input_checksums(resolved)), why);
        if (row) {
          row->resumed = true;
          say(std::format("{}: done by an earlier run ({})", label, files.result));
        } else {
          say(std::format("{}: fitting it again: {}", label, why));
        }
      }
      if (!row) {
        say(std::format("{}: {}x{}, {} paths of rank {}; {}", label, l.shape.m, l.shape.n, l.shape.paths, l.shape.rank,
                        l.weight_source));
        fs::remove(files.record, ec);  // a record of an earlier fit names another result
        const FitReport fit = run_fit(ctx, o);
        row = fitted_row(l, fit, files.result);
        remove_stale_temporaries(files.record);
        write_layer_record(files, l.name, layer_key(l.name, resolved, l.shape, fit.inputs), *row);
      }
      BlrResult result = read_blr_result(files.result);
      require(result.shape == l.shape, "{}: the layer is {}x{} of rank {}, not the {}x{} of rank {} planned",
              files.result, result.shape.m, result.shape.n, result.shape.rank, l.shape.m, l.shape.n, l.shape.rank);
      model.layers.push_back({l.name, std::move(result)});
    } catch (const Error& e) {
      fail("{} ({}): {}", label, l.entry, e.what());
    }
    row->allocation = allocations[i];
    report.layers.push_back(*row);
    if (options.after_layer && !options.after_layer(*row)) {
      say(std::format("vkblr-fit: stopped after {}, as asked; --resume continues", label));
      report.wall_s = seconds_since(t_start);
      return report;
    }
  }

  report.complete = true;
  const std::string model_bytes = serialize_blr_model(paths.safetensors, model);
  report.wall_s = seconds_since(t_start);
  const ManifestTotals totals = manifest_totals(report.layers);
  write_fit_outputs(paths, model_bytes, json_file_text(to_json(report)),
                    manifest_summary_svg(report.layers,
                                         std::format("vkblr-fit {}: {} layers, {:.4f} bpw", manifest.path,
                                                     totals.fitted, totals.bpw)));
  say(std::format("vkblr-fit: {} layer(s) fitted ({} from an earlier run), {} skipped; {:.4f} bits per weight over {} "
                  "weights; {:.1f} s; wrote {}.safetensors, .json, .svg",
                  totals.fitted, totals.resumed, totals.skipped, totals.bpw, totals.weights, report.wall_s,
                  options.out));
  return report;
}

}  // namespace vkblr::fit
