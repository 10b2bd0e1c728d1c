// vkblr/io/blr_model.hpp — the model file of a vkblr-fit manifest run: the
// blr layers of a model in one safetensors file, each under its original
// name.
//
// Tensors, per layer N (its name in the manifest, such as
// "model.layers.0.mlp.up_proj.weight") and path p, blr_result.hpp's layout
// under the prefix "N.":
//   N.path{p}.bits_u  U32 [m][r/32]      N.path{p}.h  F16|F32 [m]
//   N.path{p}.bits_v  U32 [n][r/32]      N.path{p}.l  F16|F32 [r]
//                                        N.path{p}.g  F16|F32 [n]
// in the order of the layers, then of the paths.
// Metadata (strings): format "vkblr-blr-model", format_version "1",
// tool_version (of the program that wrote the file), manifest_xxh3 (of the
// manifest file's bytes, checksum.hpp), layers (a JSON array of the names,
// in order), bpw (the model's: every layer's bits over all their weights,
// shortest round-trip decimal); per layer N.m, N.n, N.rank, N.paths,
// N.scale_dtype, N.bpw, N.weight_xxh3, N.activations_xxh3 (as in a result
// file) and N.tool_version (of the run that fitted the layer); and the
// checksums of every tensor and of the metadata (file_checksums.hpp).
// Nothing in it depends on when or by which command it was made: the same
// layers and manifest give the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "vkblr/io/blr_result.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::io {

inline constexpr int kBlrModelFormatVersion = 1;

struct BlrModelLayer {
  std::string name;
  BlrResult result;  // its command_line is not stored
};

struct BlrModel {
  std::vector<BlrModelLayer> layers;
  std::string tool_version;
  std::uint64_t manifest_checksum = 0;
};

// Every layer's bits (signs, scales, metadata) over every layer's weights.
double model_bits_per_weight(std::span<const BlrModelLayer> layers);

// The bytes of `model`'s file. Throws vkblr::Error for no layers, an empty
// or repeated name, a name starting with "xxh3:", and every error of
// serialize_blr_result (naming `path`).
std::string serialize_blr_model(const std::string& path, const BlrModel& model);

// The model file of the layers names[i], each the result load(i) returns,
// as a file for vkblr::write_files_atomic that is written one layer at a
// time (a manifest run's model need not fit in memory). load(i) is called
// twice per layer: here, in order, for the header (every tensor's place and
// checksum, the bpw), and when the file is written, in order, for its
// tensors. The bytes are serialize_blr_model's for the same layers. Throws
// here as serialize_blr_model does, and what load throws; the write throws
// vkblr::Error naming the layer when a load gives other tensors than its
// first one gave.
FileToWrite stream_blr_model(const std::string& path, const std::vector<std::string>& names,
                             const std::function<BlrResult(std::size_t)>& load, const std::string& tool_version,
                             std::uint64_t manifest_checksum);

// Reads and validates a model file: format and version, the checksums,
// the layer list (strings, none twice), every layer as read_blr_result
// validates a result, no tensor outside the layers, the recorded bpw equal
// to the recomputed one. Throws vkblr::Error naming the file and what is
// wrong.
BlrModel read_blr_model(const std::string& path);

}  // namespace vkblr::io
