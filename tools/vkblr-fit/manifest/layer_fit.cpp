#include "vkblr-fit/manifest/layer_fit.hpp"

#include <filesystem>
#include <format>
#include <optional>

#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/manifest/layer_record.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

namespace fs = std::filesystem;

// A fitted layer's row: the plan's, with its fit's report (which names its
// inputs as the single-layer run does).
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

LayerRow fit_manifest_layer(Context& ctx, const PlannedLayer& l, const LayerFitSettings& s, const std::string& label) {
  const LayerFiles files = layer_files(s.work_dir, l.name);
  FitOptions o = l.options;
  o.out = files.prefix;
  o.quiet = s.quiet;
  o.command_line = s.command_line;
  FitOptions resolved = o;
  resolve_fit_defaults(resolved, ctx.caps());
  std::error_code ec;
  if (s.resume && fs::exists(files.record, ec)) {  // (the checksums read the inputs whole)
    std::string why;
    std::optional<LayerRow> row =
        find_layer_record(files, l.name, layer_key(l.name, resolved, l.shape, input_checksums(resolved)), why);
    if (row) {
      row->resumed = true;
      s.say(std::format("{}: done by an earlier run ({})", label, files.result));
      return *row;
    }
    s.say(std::format("{}: fitting it again: {}", label, why));
  }
  s.say(std::format("{}: {}x{}, {} paths of rank {}; {}", label, l.shape.m, l.shape.n, l.shape.paths, l.shape.rank,
                    l.weight_source));
  fs::remove(files.record, ec);  // a record of an earlier fit names another result
  const FitReport fit = run_fit(ctx, o);
  const LayerRow row = fitted_row(l, fit, files.result);
  remove_stale_temporaries(files.record);
  write_layer_record(files, l.name, layer_key(l.name, resolved, l.shape, fit.inputs), row);
  return row;
}

}  // namespace vkblr::fit
