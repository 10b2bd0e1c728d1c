// vkblr/io/checkpoint.hpp — a training checkpoint: named host arrays (f32, u32, u16)
// and a JSON metadata blob in one safetensors file, written atomically.
//
// Arrays are stored as 1-D tensors F32 / U32 / U16 of their length, bit for
// bit (NaN payloads included); the metadata as "checkpoint" = its JSON text
// beside "format" = "vkblr-fit-checkpoint" and "format_version" = "2", and
// the checksums of every array and of the metadata (file_checksums.hpp).
// JSON numbers round-trip exactly (shortest round-trip decimal); NaN and
// infinity are not JSON and are written as null. The metadata is a JSON
// object nested at most kMaxMetadataJsonDepth (16) levels, without repeated
// keys; read its fields with JsonField (json_input.hpp), whose errors name
// the file and the field.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vkblr::io {

// 2: checksums (version 1 had none)
inline constexpr int kCheckpointFormatVersion = 2;

struct Checkpoint {
  nlohmann::json metadata;  // a JSON object (step, seeds, schedule, ...)
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<std::uint32_t>> u32;
  std::map<std::string, std::vector<std::uint16_t>> u16;  // e.g. bf16 optimizer state
};

// Throws vkblr::Error for a name used twice (across the maps) or
// "__metadata__", or when the file cannot be written.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Throws vkblr::Error naming the file: not a checkpoint, another format
// version, an array or the metadata that does not match its checksum, bad
// metadata JSON (nested too deep, a repeated key, not an object), a tensor
// that is not a 1-D F32/U32/U16 (and every safetensors error).
Checkpoint read_checkpoint(const std::string& path);

}  // namespace vkblr::io
