// layer_record.hpp — the work directory of a manifest run, <out>.layers/,
// where each layer's fit leaves its files, and what --resume finds there.
//
// Per layer, with a file stem from its name (layer_file_stem):
//   STEM.safetensors, STEM.json, STEM.svg  run_fit's outputs (fit_outputs.hpp),
//                                          written as one set
//   STEM.done.json                         the record, written atomically once
//                                          those are: {"format":
//     "vkblr-fit-layer-record", "format_version": 1, "name", "key" (what
//     the layer was fitted with: layer_key), "result_xxh3" (of the bytes of
//     STEM.safetensors), "row" (its report row, manifest_report.hpp)}
// A layer whose record is missing (a run killed while fitting it), names
// another key or another result file is fitted again: a run killed at
// layer k loses at most the layer in flight.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"

namespace vkblr::fit {

// `name` when it is a plain file name (letters, digits, '.', '_', '-', not
// starting with '.', at most 200 bytes); otherwise those characters with
// every other one as '_', cut to 200 bytes, and "-" and the name's
// checksum (16 hex digits), so two names never share a stem.
std::string layer_file_stem(const std::string& name);

struct LayerFiles {
  std::string prefix;  // run_fit's --out
  std::string result, record;
};
LayerFiles layer_files(const std::string& work_dir, const std::string& name);

// What a layer's result depends on: fit_checkpoint.hpp's resume_key of the
// resolved options (the settings, W's and X's checksums; not the files'
// and tensors' names) and --micro-batches, with the layer's name.
nlohmann::json layer_key(const std::string& name, const FitOptions& resolved, const LayerShape& shape,
                         const InputChecksums& inputs);

// The checksums of W and X as load_device_data computes them (io/device_data.hpp):
// of W's stored bytes and of the stored bytes of X's first tokens + held_out
// rows, read from the files (`resolved`: resolve_fit_defaults').
InputChecksums input_checksums(const FitOptions& resolved);

// Writes the record of a fitted layer (its result file already written).
void write_layer_record(const LayerFiles& files, const std::string& name, const nlohmann::json& key,
                        const LayerRow& row);

// The row of the layer's record when the record is of `name` and `key` and
// the result file is the one it names (by checksum); otherwise nullopt,
// and `why` says why (missing, another key: which entries differ, ...).
std::optional<LayerRow> find_layer_record(const LayerFiles& files, const std::string& name, const nlohmann::json& key,
                                          std::string& why);

}  // namespace vkblr::fit
