// The model file of vkblr-fit --manifest (blr_model.hpp): a round trip of
// layers of both scale dtypes, every layer under its name with its
// metadata, the model's bits per weight, the same bytes for the same
// layers; damaged, truncated and foreign files refused with a message.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/blr_ref.hpp"
#include "support/fit_files.hpp"
#include "vkblr-fit/blr_model.hpp"
#include "vkblr-fit/bpw.hpp"
#include "vkblr/half.hpp"

using namespace vkblr::fit;
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
