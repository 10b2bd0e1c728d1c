// Checkpoints: named f32/u32/u16 arrays and JSON metadata round-trip bit
// for bit (NaN payloads, -0, denormals, awkward doubles), the write is
// atomic, and foreign or damaged files are refused clearly.
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>

#include "support/fit_files.hpp"
#include "support/host.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/checkpoint.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/safetensors.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

namespace {

Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.metadata = {{"step", 1234},
                {"lr", 0.1},
                {"tiny", 1e-300},
                {"pi", 3.141592653589793},
                {"seeds", {1, 2, 18446744073709551615ull}},
                {"optimizer", {{"name", "adam"}, {"beta2", 0.999}}}};
  c.f32["path0.h"] = vkt::random_floats(1000, 1);
  c.f32["odd"] = {std::bit_cast<float>(0x7fc0deadu), std::bit_cast<float>(0xffc00001u), -0.0f,
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::max()};
  c.f32["empty"] = {};
  c.u32["path0.bits_u"] = {0u, 1u, 0x80000000u, 0xffffffffu, 0xdeadbeefu};
  c.u16["path0.latent_bf16"] = {0x0000, 0x8000, 0x7fc1, 0xffff};
  return c;
}

}  // namespace

TEST_CASE("checkpoint: arrays and metadata round-trip bit for bit", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("step.ckpt");
  const Checkpoint written = sample_checkpoint();
  write_checkpoint(path, written);
  const Checkpoint read = read_checkpoint(path);
  CHECK(read.metadata == written.metadata);
  CHECK(read.metadata.dump() == written.metadata.dump());
  REQUIRE(read.f32.size() == written.f32.size());
  for (const auto& [name, values] : written.f32) {
    INFO(name);
    REQUIRE(read.f32.count(name) == 1);
    CHECK(vkt::count_bit_diffs(read.f32.at(name), values) == 0);
  }
  CHECK(read.u32 == written.u32);
  CHECK(read.u16 == written.u16);

  // Overwriting is atomic: the new contents, no temporary file left.
  Checkpoint next = written;
  next.metadata["step"] = 1235;
  write_checkpoint(path, next);
  CHECK(read_checkpoint(path).metadata.at("step") == 1235);
  CHECK(dir.entries() == std::vector<std::string>{"step.ckpt"});
}

TEST_CASE("checkpoint: bad names and foreign or damaged files are refused", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("c.ckpt");
  Checkpoint c;
  c.f32["x"] = {1.0f};
  c.u32["x"] = {1u};
  CHECK_THAT(vkt::error_of([&] { write_checkpoint(path, c); }), ContainsSubstring("'x' added twice"));

  const std::string result = dir.file("layer.safetensors");
  BlrResult layer;
  layer.shape = {32, 32, 32, 1};
  layer.paths = {{std::vector<std::uint32_t>(32), std::vector<std::uint32_t>(32), std::vector<float>(32, 1.0f),
                  std::vector<float>(32, 1.0f), std::vector<float>(32, 1.0f)}};
  write_blr_result(result, layer);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(result); }),
             ContainsSubstring(result) && ContainsSubstring("not a vkblr-fit checkpoint"));

  const auto write_with = [&](const std::string& key, const std::string& value, bool add_i32) {
    ChecksummedWriter w;
    w.set_metadata("format", "vkblr-fit-checkpoint");
    w.set_metadata("format_version", "2");
    w.set_metadata("checkpoint", "{}");
    w.set_metadata(key, value);
    const std::vector<std::uint32_t> v = {1, 2};
    if (add_i32) w.add_bytes("i", Dtype::I32, {2}, std::as_bytes(std::span(v)));
    vkt::write_raw_file(path, w.serialize());
  };
  write_with("format_version", "7", false);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }), ContainsSubstring("checkpoint format version '7'"));
  write_with("format_version", "1", false);  // no checksums
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring("checkpoint format version '1'; this build reads version 2"));
  write_with("checkpoint", "{not json", false);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring(path + ": checkpoint metadata: bad JSON"));
  write_with("checkpoint", "{}", true);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }), ContainsSubstring("'i I32 [2]' is not F32, U32 or U16"));

  write_checkpoint(path, sample_checkpoint());
  const std::string bytes = vkt::read_raw_file(path);
  vkt::write_raw_file(path, bytes.substr(0, bytes.size() - 10));
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }), ContainsSubstring(path) && ContainsSubstring("truncated"));
}

TEST_CASE("checkpoint: metadata JSON nested too deep, with repeated keys or not an object is refused",
          "[fit][errors]") {
  vkt::TempDir dir;
  const std::string path = dir.file("c.ckpt");
  const auto with_metadata = [&](const std::string& json) {
    ChecksummedWriter w;
    w.set_metadata("format", "vkblr-fit-checkpoint");
    w.set_metadata("format_version", std::to_string(kCheckpointFormatVersion));
    w.set_metadata("checkpoint", json);
    vkt::write_raw_file(path, w.serialize());
  };
  const auto nested = [](std::size_t depth) {
    return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  with_metadata(nested(16));  // the bound: 16 levels
  CHECK(read_checkpoint(path).metadata.is_object());
  // Before, a million levels parsed, then comparing or dumping it overflowed the stack.
  for (const std::size_t depth : {17, 1000000}) {
    with_metadata(nested(depth));
    CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
               ContainsSubstring(path + ": checkpoint metadata: JSON nested more than 16 levels deep"));
  }
  with_metadata(R"({"next_step": 1, "next_step": 1000})");  // before, the last one won
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring("checkpoint metadata: key 'next_step' appears twice"));
  with_metadata("[1, 2]");
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring(path + ": checkpoint metadata is [1, 2] (an array), want an object"));
  with_metadata("[1e999]");
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }), ContainsSubstring("checkpoint metadata: bad JSON"));
  SafetensorsWriter other;
  other.set_metadata("format", std::string(100000, 'f'));
  other.write(path);
  const std::string message = vkt::error_of([&] { read_checkpoint(path); });
  CHECK_THAT(message,
             ContainsSubstring("not a vkblr-fit checkpoint (metadata 'format' is 'fff") && ContainsSubstring("…"));
  CHECK(message.size() < path.size() + 300);
}

TEST_CASE("checkpoint: a changed or damaged file does not match its checksums", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_checkpoint(path, sample_checkpoint());
  const std::string bytes = vkt::read_raw_file(path);
  // a bit of the last array flipped (the U16 arrays are laid out last)
  std::string flipped = bytes;
  flipped[flipped.size() - 1] = static_cast<char>(flipped[flipped.size() - 1] ^ 0x01);
  vkt::write_raw_file(path, flipped);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring(path) && ContainsSubstring("does not match its checksum"));
  // the metadata JSON changed in place, a digit for another
  std::string edited = bytes;
  const std::size_t at = edited.find("1234");
  REQUIRE(at != std::string::npos);
  edited[at] = '9';
  vkt::write_raw_file(path, edited);
  CHECK_THAT(vkt::error_of([&] { read_checkpoint(path); }),
             ContainsSubstring("the metadata does not match its checksum"));
}
