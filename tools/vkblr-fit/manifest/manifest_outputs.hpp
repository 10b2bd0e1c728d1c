// manifest_outputs.hpp — the end of a manifest run (run_manifest.hpp): the
// model file from every fitted layer's result in the work directory, the
// report and the chart, written as one set (write_fit_outputs) by the one
// process that writes.
#pragma once

#include <span>
#include <string>

#include "vkblr-fit/manifest/manifest_job.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {

// PREFIX.safetensors as a file to write one layer at a time
// (blr_model.hpp's stream_blr_model): the result file of every fitted row
// (rows: one per planned layer, in order), read from the work directory in
// order, here for the header and again when the file is written. Throws
// vkblr::Error naming the layer ("layer 3/6 'NAME' (layers[1]): ...") for
// a result file that cannot be read or whose shape is not the plan's. The
// file refers to `job` and `rows`: write it while they live.
FileToWrite manifest_model_file(const ManifestJob& job, std::span<const LayerRow> rows);

// Writes PREFIX.safetensors (`model`), PREFIX.json (the report) and
// PREFIX.svg (the summary chart) as one set (vkblr::write_files_atomic).
void write_manifest_outputs(const ManifestJob& job, const FileToWrite& model, const ManifestReport& report);

// "layer 3/6 'NAME'": layer `index` (from 0) of the job, in messages.
std::string layer_label(const ManifestJob& job, std::size_t index);

}  // namespace vkblr::fit
