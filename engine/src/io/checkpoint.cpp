#include "vkblr/io/checkpoint.hpp"

#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::io {
namespace {

constexpr std::string_view kFormat = "vkblr-fit-checkpoint";

std::string metadata_value(const SafetensorsReader& reader, const std::string& key) {
  const auto it = reader.metadata().find(key);
  require(it != reader.metadata().end(), "{}: not a vkblr-fit checkpoint (metadata '{}' is missing)", reader.path(),
          key);
  return it->second;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  ChecksummedWriter writer;
  for (const auto& [name, values] : checkpoint.f32) writer.add_f32(name, {values.size()}, values);
  for (const auto& [name, values] : checkpoint.u32) writer.add_u32(name, {values.size()}, values);
  for (const auto& [name, values] : checkpoint.u16) writer.add_u16(name, {values.size()}, values);
  writer.set_metadata("format", std::string(kFormat));
  writer.set_metadata("format_version", std::to_string(kCheckpointFormatVersion));
  writer.set_metadata("checkpoint", checkpoint.metadata.dump());
  write_file_atomic(path, writer.serialize());
}

Checkpoint read_checkpoint(const std::string& path) {
  SafetensorsReader reader(path);
  const std::string format = metadata_value(reader, "format");
  require(format == kFormat, "{}: not a vkblr-fit checkpoint (metadata 'format' is '{}')", path, excerpt(format));
  const std::string version = metadata_value(reader, "format_version");
  require(version == std::to_string(kCheckpointFormatVersion),
          "{}: checkpoint format version '{}'; this build reads version {}", path, excerpt(version),
          kCheckpointFormatVersion);
  verify_checksums(reader);
  Checkpoint checkpoint;
  checkpoint.metadata =
      parse_untrusted_json(metadata_value(reader, "checkpoint"), kMaxMetadataJsonDepth, path + ": checkpoint metadata");
  JsonField(checkpoint.metadata, path + ": checkpoint metadata").require_object();
  for (const TensorInfo& t : reader.tensors()) {
    require(t.shape.size() == 1, "{}: checkpoint array '{}' is not 1-D", path, t.describe());
    switch (t.dtype) {
      case Dtype::F32:
        checkpoint.f32[t.name] = reader.read_f32(t);
        break;
      case Dtype::U32:
        checkpoint.u32[t.name] = reader.read_u32(t);
        break;
      case Dtype::U16:
        checkpoint.u16[t.name] = reader.read_u16(t);
        break;
      default:
        fail("{}: checkpoint array '{}' is not F32, U32 or U16", path, t.describe());
    }
  }
  return checkpoint;
}

}  // namespace vkblr::io
