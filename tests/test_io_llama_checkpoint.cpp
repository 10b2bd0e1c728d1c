// A Hugging Face checkpoint directory of a Llama-family model: one file or
// shards with an index, F32/BF16/F16 weights read back as stored, and every
// inconsistency between config.json, the index and the files refused by
// name before a weight is read.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <format>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "support/fit_files.hpp"
#include "vkblr/io/llama_checkpoint.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;
using Json = nlohmann::json;

namespace {

// 2 blocks of hidden 8, 2 query heads of 4 over 1 KV head, MLP 12, vocab 16.
Json toy_config(bool tied) {
  return Json{{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 16},
              {"hidden_size", 8}, {"intermediate_size", 12}, {"num_hidden_layers", 2},
              {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"max_position_embeddings", 32},
              {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}, {"tie_word_embeddings", tied}};
}

// Distinct values per parameter, exactly representable in BF16 and F16.
std::vector<float> values_of(std::size_t parameter, std::uint64_t count) {
  std::vector<float> v(count);
  for (std::uint64_t i = 0; i < count; ++i) v[i] = static_cast<float>(parameter) + static_cast<float>(i % 8) * 0.125f;
  return v;
}

std::uint64_t count_of(const std::vector<std::uint64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
}

// BF16 bytes of values that BF16 holds exactly (the top half of the f32).
std::vector<std::byte> bf16_bytes(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    const auto top = static_cast<std::uint16_t>(bits >> 16);
    std::memcpy(out.data() + 2 * i, &top, 2);
  }
  return out;
}

// Writes config.json and the parameters, into `shards` files (an index
// when more than one); `edit` may change the tensors before they are
// written (name → shape, values).
struct ToyCheckpoint {
  bool tied = false;
  int shards = 1;
  std::map<std::string, std::vector<std::uint64_t>> shapes;
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, bool> as_bf16;

  explicit ToyCheckpoint(bool tied_head) : tied(tied_head) {
    LlamaConfig c = parse_llama_config(toy_config(tied).dump(), "toy");
    std::size_t i = 0;
    for (const auto& p : llama_parameters(c)) {
      shapes[p.name] = p.shape;
      values[p.name] = values_of(++i, count_of(p.shape));
    }
  }

  void write(const vkt::TempDir& dir) const {
    vkt::write_raw_file(dir.file("config.json"), toy_config(tied).dump());
    std::vector<SafetensorsWriter> writers(static_cast<std::size_t>(shards));
    Json map = Json::object();
    std::size_t i = 0;
    for (const auto& [name, shape] : shapes) {
      const std::size_t s = i++ % writers.size();
      if (as_bf16.contains(name)) {
        writers[s].add_bytes(name, Dtype::BF16, shape, bf16_bytes(values.at(name)));
      } else {
        writers[s].add_f32(name, shape, values.at(name));
      }
      map[name] = shard_name(s);
    }
    if (shards == 1) {
      writers[0].write(dir.file("model.safetensors"));
      return;
    }
    for (std::size_t s = 0; s < writers.size(); ++s) writers[s].write(dir.file(shard_name(s)));
    vkt::write_raw_file(dir.file("model.safetensors.index.json"),
                        Json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump());
  }
  std::string shard_name(std::size_t s) const {
    return std::format("model-{:05}-of-{:05}.safetensors", s + 1, shards);
  }
};

std::string refusal(const vkt::TempDir& dir) {
  return vkt::error_of([&] { LlamaCheckpoint checkpoint(dir.path()); });
}

}  // namespace

TEST_CASE("llama checkpoint: one file or shards, F32 and BF16, read back as stored", "[io][model]") {
  for (const bool tied : {false, true}) {
    for (const int shards : {1, 3}) {
      CAPTURE(tied, shards);
      vkt::TempDir dir;
      ToyCheckpoint toy(tied);
      toy.shards = shards;
      toy.as_bf16["model.layers.1.mlp.down_proj.weight"] = true;
      toy.write(dir);
      const LlamaCheckpoint checkpoint(dir.path());
      CHECK(checkpoint.config().hidden_size == 8);
      CHECK(checkpoint.parameters().size() == (tied ? 20u : 21u));
      for (const auto& p : checkpoint.parameters()) {
        CAPTURE(p.name);
        CHECK(checkpoint.tensor(p.name).shape == p.shape);
        CHECK(checkpoint.read_f32(p.name) == toy.values.at(p.name));
      }
      CHECK(checkpoint.tensor("model.layers.1.mlp.down_proj.weight").dtype == Dtype::BF16);
      CHECK_THAT(vkt::error_of([&] { checkpoint.read_f32("model.layers.2.mlp.up_proj.weight"); }),
                 ContainsSubstring("'model.layers.2.mlp.up_proj.weight' is not a parameter of the model"));
    }
  }
}

TEST_CASE("llama checkpoint: rotary tables and a tied model's lm_head are ignored", "[io][model]") {
  vkt::TempDir dir;
  ToyCheckpoint toy(true);
  toy.shapes["model.layers.0.self_attn.rotary_emb.inv_freq"] = {2};
  toy.values["model.layers.0.self_attn.rotary_emb.inv_freq"] = {1.0f, 0.01f};
  toy.shapes["lm_head.weight"] = {16, 8};
  toy.values["lm_head.weight"] = values_of(99, 128);
  toy.write(dir);
  const LlamaCheckpoint checkpoint(dir.path());
  CHECK(checkpoint.parameters().back().name == "model.norm.weight");
  CHECK_THAT(vkt::error_of([&] { checkpoint.tensor("lm_head.weight"); }), ContainsSubstring("not a parameter"));
}

TEST_CASE("llama checkpoint: missing, misshapen, mistyped, extra and misplaced tensors are refused by name",
          "[io][model][errors]") {
  SECTION("no checkpoint files") {
    vkt::TempDir dir;
    vkt::write_raw_file(dir.file("config.json"), toy_config(false).dump());
    CHECK_THAT(refusal(dir), ContainsSubstring("no model.safetensors and no model.safetensors.index.json"));
  }
  SECTION("no config.json") {
    vkt::TempDir dir;
    CHECK_THAT(refusal(dir), ContainsSubstring("config.json"));
  }
  SECTION("a parameter missing") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shapes.erase("model.layers.1.self_attn.v_proj.weight");
    toy.write(dir);
    CHECK_THAT(refusal(dir),
               ContainsSubstring("parameter 'model.layers.1.self_attn.v_proj.weight' [4, 8] is missing"));
  }
  SECTION("another shape than config.json's") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shapes["model.layers.0.mlp.gate_proj.weight"] = {8, 12};  // transposed
    toy.write(dir);
    CHECK_THAT(refusal(dir), ContainsSubstring("'model.layers.0.mlp.gate_proj.weight' is [8, 12], want [12, 8]"));
  }
  SECTION("an integer dtype") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.write(dir);
    SafetensorsWriter w;
    LlamaConfig c = parse_llama_config(toy_config(false).dump(), "toy");
    for (const auto& p : llama_parameters(c)) {
      if (p.name == "model.norm.weight") {
        w.add_u32(p.name, p.shape, std::vector<std::uint32_t>(8, 1));
      } else {
        w.add_f32(p.name, p.shape, toy.values.at(p.name));
      }
    }
    w.write(dir.file("model.safetensors"));
    CHECK_THAT(refusal(dir), ContainsSubstring("'model.norm.weight' is U32, want F32, BF16 or F16"));
  }
  SECTION("a tensor the model does not have") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shapes["model.layers.0.self_attn.q_proj.bias"] = {8};
    toy.values["model.layers.0.self_attn.q_proj.bias"] = values_of(50, 8);
    toy.write(dir);
    CHECK_THAT(refusal(dir), ContainsSubstring("tensor 'model.layers.0.self_attn.q_proj.bias' is not a parameter"));
  }
  SECTION("an index whose shard does not hold what it says") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shards = 2;
    toy.write(dir);
    Json index = Json::parse(vkt::read_raw_file(dir.file("model.safetensors.index.json")));
    index["weight_map"]["model.norm.weight"] =
        index["weight_map"]["model.norm.weight"] == toy.shard_name(0) ? toy.shard_name(1) : toy.shard_name(0);
    vkt::write_raw_file(dir.file("model.safetensors.index.json"), index.dump());
    CHECK_THAT(refusal(dir), ContainsSubstring("tensor 'model.norm.weight' is not where the index places it"));
  }
  SECTION("an index naming a shard outside the directory") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shards = 2;
    toy.write(dir);
    Json index = Json::parse(vkt::read_raw_file(dir.file("model.safetensors.index.json")));
    index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
    vkt::write_raw_file(dir.file("model.safetensors.index.json"), index.dump());
    CHECK_THAT(refusal(dir), ContainsSubstring("'weight_map.model.norm.weight' is '../elsewhere.safetensors'"));
  }
  SECTION("an index missing a shard file") {
    vkt::TempDir dir;
    ToyCheckpoint toy(false);
    toy.shards = 2;
    toy.write(dir);
    std::filesystem::remove(dir.file(toy.shard_name(1)));
    CHECK_THAT(refusal(dir), ContainsSubstring(toy.shard_name(1)));
  }
}
