// The model file of vkblr-fit --manifest (blr_model.hpp): a round trip of
// layers of both scale dtypes, every layer under its name with its
// metadata, the model's bits per weight, the same bytes for the same
// layers, streamed one layer at a time as built whole; damaged, truncated
// and foreign files, and a layer that changes while it is written, refused
// with a message.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <format>
#include <nlohmann/json.hpp>
#include <vector>

#include "support/blr_ref.hpp"
#include "support/fit_files.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"
#include "vkblr/half.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

namespace {

BlrModel sample_model() {
  BlrModel model;
  model.tool_version = "vkblr 9.9";
  model.manifest_checksum = 0x1122334455667788ull;
  const LayerShape shapes[] = {{64, 32, 32, 2}, {48, 96, 64, 1}};
  std::uint64_t seed = 3;
  for (const LayerShape& s : shapes) {
    BlrResult r;
    r.shape = s;
    r.scale_dtype = seed == 3 ? ScaleDtype::f16 : ScaleDtype::f32;
    r.paths = vkt::random_layer(s.m, s.n, s.rank, s.paths, ++seed).init();
    for (vkblr::BlrPathInit& p : r.paths) {
      if (r.scale_dtype == ScaleDtype::f16) {
        for (std::vector<float>* v : {&p.h, &p.l, &p.g}) *v = vkblr::from_f16(vkblr::to_f16(*v));
      }
    }
    r.tool_version = "vkblr 9." + std::to_string(seed);
    r.inputs = {seed, seed * 7};
    model.layers.push_back({"blocks." + std::to_string(seed) + ".w", std::move(r)});
  }
  return model;
}

}  // namespace

TEST_CASE("blr model: the file holds every layer under its name", "[fit][manifest]") {
  vkt::TempDir dir;
  const BlrModel model = sample_model();
  const std::string path = dir.file("model.safetensors");
  vkt::write_raw_file(path, serialize_blr_model(path, model));
  const BlrModel read = read_blr_model(path);
  CHECK(read.tool_version == model.tool_version);
  CHECK(read.manifest_checksum == model.manifest_checksum);
  REQUIRE(read.layers.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const BlrResult& a = model.layers[i].result;
    const BlrResult& b = read.layers[i].result;
    CHECK(read.layers[i].name == model.layers[i].name);
    CHECK(b.shape == a.shape);
    CHECK(b.scale_dtype == a.scale_dtype);
    CHECK(b.inputs == a.inputs);
    CHECK(b.tool_version == a.tool_version);
    for (std::size_t p = 0; p < a.paths.size(); ++p) {
      CHECK(b.paths[p].bits_u == a.paths[p].bits_u);
      CHECK(b.paths[p].bits_v == a.paths[p].bits_v);
      CHECK(b.paths[p].h == a.paths[p].h);
      CHECK(b.paths[p].l == a.paths[p].l);
      CHECK(b.paths[p].g == a.paths[p].g);
    }
  }
  // the names a user looks for, and the model's bits per weight
  SafetensorsReader reader(path);
  CHECK(reader.find("blocks.4.w.path1.bits_u") != nullptr);
  CHECK(reader.find("blocks.5.w.path0.g") != nullptr);
  CHECK(reader.metadata().at("blocks.5.w.rank") == "64");
  CHECK(reader.metadata().at("layers") == R"(["blocks.4.w","blocks.5.w"])");
  const BitsPerWeight a = bits_per_weight(model.layers[0].result.shape, ScaleDtype::f16);
  const BitsPerWeight b = bits_per_weight(model.layers[1].result.shape, ScaleDtype::f32);
  CHECK(model_bits_per_weight(model.layers) ==
        static_cast<double>(a.sign_bits + a.scale_bits + a.metadata_bits + b.sign_bits + b.scale_bits +
                            b.metadata_bits) /
            static_cast<double>(a.weights + b.weights));
  // the same layers, the same bytes
  CHECK(serialize_blr_model(path, model) == serialize_blr_model(dir.file("other"), model));
}

TEST_CASE("blr model: files that are not what the format says are refused", "[fit][manifest]") {
  vkt::TempDir dir;
  BlrModel model = sample_model();
  const std::string path = dir.file("model.safetensors");
  const std::string bytes = serialize_blr_model(path, model);
  std::string damaged = bytes;
  damaged[damaged.size() - 3] ^= 0x10;
  vkt::write_raw_file(path, damaged);
  CHECK_THAT(vkt::error_of([&] { read_blr_model(path); }), ContainsSubstring("does not match its checksum"));
  vkt::write_raw_file(path, bytes.substr(0, bytes.size() / 2));
  CHECK_THAT(vkt::error_of([&] { read_blr_model(path); }), ContainsSubstring("truncated"));
  BlrResult layer = model.layers[0].result;
  write_blr_result(path, layer);
  CHECK_THAT(vkt::error_of([&] { read_blr_model(path); }), ContainsSubstring("not a vkblr-fit model file"));
  model.layers.push_back(model.layers[0]);
  CHECK_THAT(vkt::error_of([&] { serialize_blr_model(path, model); }), ContainsSubstring("layer 'blocks.4.w' twice"));
  model.layers.clear();
  CHECK_THAT(vkt::error_of([&] { serialize_blr_model(path, model); }), ContainsSubstring("at least one layer"));
}

TEST_CASE("blr model: streamed one layer at a time, the bytes of the whole file built in memory", "[fit][manifest]") {
  vkt::TempDir dir;
  const BlrModel model = sample_model();
  const std::string path = dir.file("model.safetensors");
  // the reference: every tensor and entry in one in-memory writer
  ChecksummedWriter whole;
  nlohmann::json names = nlohmann::json::array();
  for (const BlrModelLayer& layer : model.layers) {
    add_blr_layer(whole, layer.name + ".", layer.result, path);
    whole.set_metadata(layer.name + ".tool_version", layer.result.tool_version);
    names.push_back(layer.name);
  }
  whole.set_metadata("format", "vkblr-blr-model");
  whole.set_metadata("format_version", "1");
  whole.set_metadata("tool_version", model.tool_version);
  whole.set_metadata("manifest_xxh3", checksum_hex(model.manifest_checksum));
  whole.set_metadata("layers", names.dump());
  whole.set_metadata("bpw", std::format("{}", model_bits_per_weight(model.layers)));

  std::vector<int> loads(model.layers.size(), 0);
  const auto load = [&](std::size_t i) {
    ++loads[i];
    return model.layers[i].result;
  };
  const vkblr::FileToWrite file =
      stream_blr_model(path, {model.layers[0].name, model.layers[1].name}, load, model.tool_version,
                       model.manifest_checksum);
  CHECK(loads == std::vector<int>{1, 1});  // the header's pass
  vkt::write_raw_file(path, "old");
  const vkblr::FileToWrite files[] = {file};
  vkblr::write_files_atomic(files);
  CHECK(loads == std::vector<int>{2, 2});
  CHECK(vkt::read_raw_file(path) == whole.serialize());
  CHECK(read_blr_model(path).layers.size() == 2);
  CHECK(dir.entries().size() == 1);  // no temporary left
}

TEST_CASE("blr model: a layer that changes between the header and the data is refused", "[fit][manifest][errors]") {
  vkt::TempDir dir;
  const BlrModel model = sample_model();
  const std::string path = dir.file("model.safetensors");
  int calls = 0;
  const auto load = [&](std::size_t i) {
    BlrResult r = model.layers[i].result;
    if (i == 1 && ++calls == 2) r.paths[0].bits_u[0] ^= 1u;  // the second load of layer 2
    return r;
  };
  const vkblr::FileToWrite file =
      stream_blr_model(path, {model.layers[0].name, model.layers[1].name}, load, model.tool_version,
                       model.manifest_checksum);
  vkt::write_raw_file(path, "old");
  const vkblr::FileToWrite files[] = {file};
  CHECK_THAT(vkt::error_of([&] { vkblr::write_files_atomic(files); }),
             ContainsSubstring("layer 'blocks.5.w' is not what it was when the file's header was made (tensor "
                               "'blocks.5.w.path0.bits_u')"));
  CHECK(vkt::read_raw_file(path) == "old");
  CHECK(dir.entries().size() == 1);  // the temporary removed
  // and a load that fails in the header's pass fails at once, naming nothing written
  const auto broken = [&](std::size_t) -> BlrResult { vkblr::fail("layer {} unreadable", 7); };
  CHECK_THAT(vkt::error_of([&] { stream_blr_model(path, {"a"}, broken, "v", 0); }),
             ContainsSubstring("layer 7 unreadable"));
}
