// vkblr/io/blr_result.hpp — the blr layer file format (vkblr-fit's result
// file): one trained blr layer as a safetensors file.
//
// Tensors, per path p in [0, P):
//   path{p}.bits_u  U32 [m][r/32]   S_U (sign_bits.hpp layout)
//   path{p}.bits_v  U32 [n][r/32]   S_V
//   path{p}.h       F16|F32 [m]
//   path{p}.l       F16|F32 [r]
//   path{p}.g       F16|F32 [n]
// Metadata (strings): format "vkblr-blr", format_version "2", m, n, rank,
// paths (decimal), scale_dtype "F16"|"F32", bpw (bits_per_weight's total,
// shortest round-trip decimal), tool_version, command_line (a JSON array of
// the arguments), weight_xxh3 and activations_xxh3 (the checksums of the W
// and X the layer was fitted to, checksum.hpp), and the checksums of every
// tensor and of the metadata (file_checksums.hpp).
//
// F16 scales are the f32 values rounded to nearest even: a loaded layer is
// the stored one, and its bpw counts what is stored.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/io/checksum.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::io {

// 2: checksums (version 1 had none)
inline constexpr int kBlrResultFormatVersion = 2;

struct BlrResult {
  LayerShape shape;
  ScaleDtype scale_dtype = ScaleDtype::f16;
  std::vector<BlrPathInit> paths;  // shape.paths entries
  std::string tool_version;
  std::vector<std::string> command_line;
  InputChecksums inputs;  // of the W and X the layer was fitted to
};

// The bytes of `result`'s file. Throws vkblr::Error for a bad shape, paths
// that do not fit it, a non-finite scale, or an F16 scale that overflows
// f16 (the message names `path`, field and value).
std::string serialize_blr_result(const std::string& path, const BlrResult& result);

// serialize_blr_result written to `path` atomically.
void write_blr_result(const std::string& path, const BlrResult& result);

// Reads and validates a result file: format and version, the checksums
// (file_checksums.hpp), the metadata's numbers, exactly the tensors above
// with their dtypes and shapes, finite scales, the recorded bpw equal to
// the recomputed one. Throws vkblr::Error naming the file and what is
// wrong.
BlrResult read_blr_result(const std::string& path);

// The metadata entry `key` of a vkblr-fit file; throws vkblr::Error naming
// the file and the key when it is missing.
std::string metadata_value(const SafetensorsReader& reader, const std::string& key);

// Throws vkblr::Error unless the file's metadata 'format' is `format` and
// 'format_version' is `version` ("FILE: not a vkblr-fit KIND (metadata
// 'format' is ..., want ...)", "FILE: KIND format version ...; this build
// reads version N"); then verifies its checksums (file_checksums.hpp).
void check_vkblr_file(SafetensorsReader& reader, std::string_view format, int version, std::string_view kind);

// One layer inside a file of several (blr_model.hpp): the tensors above and
// the metadata m, n, rank, paths, scale_dtype, bpw, weight_xxh3 and
// activations_xxh3, every name after `prefix` (the result file's prefix is
// ""). Throws as serialize_blr_result does; `file` names the file in
// messages.
void add_blr_layer(ChecksummedWriter& writer, const std::string& prefix, const BlrResult& result,
                   const std::string& file);

// What add_blr_layer wrote under `prefix`, validated as read_blr_result
// validates it (the file's checksums are the caller's to verify); the
// result's tool_version and command_line stay empty. Adds the names of the
// tensors read to `tensors`.
BlrResult read_blr_layer(SafetensorsReader& reader, const std::string& prefix, std::set<std::string>& tensors);

}  // namespace vkblr::io
