// Hugging Face's config.json of a Llama-family model: the fields read, the
// defaults, the parameters' names and shapes (the reference model's count
// equals PyTorch's), and every refusal naming its field.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "support/fit_files.hpp"
#include "vkblr/io/llama_config.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;
using Json = nlohmann::json;

namespace {

// tools/model's reference model, as train_reference.py writes it.
Json reference_config() {
  return Json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "attention_bias": false, "attention_dropout": 0.0, "mlp_bias": false, "tie_word_embeddings": false,
    "pretraining_tp": 1, "rope_scaling": null, "vocab_size": 272, "hidden_size": 512,
    "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4,
    "max_position_embeddings": 1024, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "bos_token_id": 256,
    "eos_token_id": 256, "initializer_range": 0.02, "head_dim": 64, "torch_dtype": "float32", "use_cache": true})");
}

std::string refusal(const Json& config) {
  return vkt::error_of([&] { parse_llama_config(config.dump(), "cfg.json"); });
}

std::uint64_t elements(const LlamaParameter& p) {
  return std::accumulate(p.shape.begin(), p.shape.end(), std::uint64_t{1}, std::multiplies<>());
}

}  // namespace

TEST_CASE("llama config: the reference model's fields and its 25 453 056 parameters", "[io][model]") {
  const LlamaConfig c = parse_llama_config(reference_config().dump(), "cfg.json");
  CHECK(c.vocab_size == 272);
  CHECK(c.hidden_size == 512);
  CHECK(c.intermediate_size == 1536);
  CHECK(c.num_hidden_layers == 8);
  CHECK(c.num_attention_heads == 8);
  CHECK(c.num_key_value_heads == 4);
  CHECK(c.head_dim == 64);
  CHECK(c.q_size() == 512);
  CHECK(c.kv_size() == 256);
  CHECK(c.max_position_embeddings == 1024);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK(c.rope_theta == 10000.0);
  CHECK_FALSE(c.tie_word_embeddings);
  CHECK(c.torch_dtype == "float32");

  const auto params = llama_parameters(c);
  REQUIRE(params.size() == 1 + 8 * 9 + 2);
  CHECK(params.front().name == "model.embed_tokens.weight");
  CHECK(params[1].name == "model.layers.0.self_attn.q_proj.weight");
  CHECK(params[2].shape == std::vector<std::uint64_t>{256, 512});  // k_proj: [kv, hidden]
  CHECK(params[4].shape == std::vector<std::uint64_t>{512, 512});  // o_proj: [hidden, q]
  CHECK(params[7].name == "model.layers.0.mlp.down_proj.weight");
  CHECK(params[7].shape == std::vector<std::uint64_t>{512, 1536});
  CHECK(params[9].name == "model.layers.0.post_attention_layernorm.weight");
  CHECK(params.back().name == "lm_head.weight");
  std::uint64_t total = 0, in_blocks = 0, linear_count = 0;
  for (const auto& p : params) {
    total += elements(p);
    if (p.linear_in_block) {
      in_blocks += elements(p);
      ++linear_count;
    }
  }
  CHECK(total == 25453056);  // train_reference.py's report
  CHECK(in_blocks == 25165824);  // + lm_head = the report's 25 305 088 linear parameters
  CHECK(linear_count == 56);
}

TEST_CASE("llama config: defaults, and a Qwen-0.5B-shaped model with a tied head", "[io][model]") {
  Json j = reference_config();
  for (const char* key : {"head_dim", "num_key_value_heads", "rope_theta", "tie_word_embeddings", "torch_dtype",
                          "architectures", "model_type", "hidden_act", "attention_bias", "mlp_bias", "rope_scaling"}) {
    j.erase(key);
  }
  const LlamaConfig plain = parse_llama_config(j.dump(), "cfg.json");
  CHECK(plain.head_dim == 64);                     // hidden / heads
  CHECK(plain.num_key_value_heads == 8);           // as many as the query heads
  CHECK(plain.rope_theta == 10000.0);
  CHECK(plain.torch_dtype == "float32");

  Json q = reference_config();
  q["hidden_size"] = 896;
  q["intermediate_size"] = 4864;
  q["num_hidden_layers"] = 24;
  q["num_attention_heads"] = 14;
  q["num_key_value_heads"] = 2;
  q["head_dim"] = 64;
  q["vocab_size"] = 151936;
  q["max_position_embeddings"] = 4096;
  q["rope_theta"] = 1000000.0;
  q["tie_word_embeddings"] = true;
  q["torch_dtype"] = "bfloat16";
  const LlamaConfig c = parse_llama_config(q.dump(), "cfg.json");
  CHECK(c.kv_size() == 128);
  CHECK(c.rope_theta == 1000000.0);
  CHECK(c.torch_dtype == "bfloat16");
  // transformers 5 writes the same as rope_parameters and dtype
  Json q5 = q;
  q5.erase("rope_theta");
  q5.erase("torch_dtype");
  q5["rope_parameters"] = Json{{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  q5["dtype"] = "bfloat16";
  const LlamaConfig c5 = parse_llama_config(q5.dump(), "cfg.json");
  CHECK(c5.rope_theta == 1000000.0);
  CHECK(c5.torch_dtype == "bfloat16");
  q5["rope_theta"] = 1000000.0;  // both forms, agreeing
  q5["torch_dtype"] = "bfloat16";
  CHECK(parse_llama_config(q5.dump(), "cfg.json").rope_theta == 1000000.0);
  const auto params = llama_parameters(c);
  CHECK(params.back().name == "model.norm.weight");  // tied: no lm_head
  std::uint64_t total = 0;
  for (const auto& p : params) total += elements(p);
  // embedding 151936·896 + 24 blocks of (896·896·2 + 128·896·2 + 4864·896·3 + 2·896) + 896
  CHECK(total == 136134656ull + 24ull * (1605632 + 229376 + 13074432 + 1792) + 896);
}

TEST_CASE("llama config: what is missing, mistyped, out of range or not implemented is refused by name",
          "[io][model][errors]") {
  auto with = [](const char* key, const Json& value) {
    Json j = reference_config();
    j[key] = value;
    return j;
  };
  Json missing = reference_config();
  missing.erase("hidden_size");
  CHECK_THAT(refusal(missing), ContainsSubstring("cfg.json: 'hidden_size' is missing"));
  CHECK_THAT(refusal(with("vocab_size", 0)), ContainsSubstring("'vocab_size' is 0, want 1 to 1048576"));
  CHECK_THAT(refusal(with("hidden_size", 512.5)), ContainsSubstring("'hidden_size'"));
  CHECK_THAT(refusal(with("intermediate_size", "1536")), ContainsSubstring("'intermediate_size'"));
  CHECK_THAT(refusal(with("num_key_value_heads", 3)),
             ContainsSubstring("'num_attention_heads' 8 is not a multiple of 'num_key_value_heads' 3"));
  CHECK_THAT(refusal(with("head_dim", 63)), ContainsSubstring("'head_dim' 63 is odd"));
  CHECK_THAT(refusal(with("rms_norm_eps", -1e-5)), ContainsSubstring("'rms_norm_eps' is -1e-05, want a positive"));
  CHECK_THAT(refusal(with("rms_norm_eps", nullptr)), ContainsSubstring("'rms_norm_eps' is nan"));
  CHECK_THAT(refusal(with("rope_theta", 0)), ContainsSubstring("'rope_theta' is 0"));
  CHECK_THAT(refusal(with("tie_word_embeddings", "yes")),
             ContainsSubstring("'tie_word_embeddings' is \"yes\" (a string), want true or false"));
  CHECK_THAT(refusal(with("model_type", "qwen2")), ContainsSubstring("'model_type' is 'qwen2', want 'llama'"));
  CHECK_THAT(refusal(with("architectures", Json::array({"MistralForCausalLM"}))),
             ContainsSubstring("'architectures[0]' is 'MistralForCausalLM'"));
  CHECK_THAT(refusal(with("hidden_act", "gelu")), ContainsSubstring("'hidden_act' is 'gelu', want 'silu'"));
  CHECK_THAT(refusal(with("attention_bias", true)), ContainsSubstring("'attention_bias' is true"));
  CHECK_THAT(refusal(with("mlp_bias", true)), ContainsSubstring("'mlp_bias' is true"));
  CHECK_THAT(refusal(with("rope_scaling", Json{{"type", "linear"}, {"factor", 2.0}})),
             ContainsSubstring("'rope_scaling' is {"));
  CHECK_THAT(refusal(with("sliding_window", 4096)), ContainsSubstring("'sliding_window' is 4096"));
  CHECK_THAT(refusal(with("torch_dtype", "int8")), ContainsSubstring("'torch_dtype' is 'int8'"));
  CHECK_THAT(refusal(with("dtype", "int8")), ContainsSubstring("'dtype' is 'int8'"));
  CHECK_THAT(refusal(with("dtype", "bfloat16")),
             ContainsSubstring("cfg.json: 'torch_dtype' 'float32' and 'dtype' 'bfloat16' disagree"));
  CHECK_THAT(refusal(with("rope_parameters", Json{{"rope_type", "llama3"}, {"rope_theta", 5e5}})),
             ContainsSubstring("'rope_parameters.rope_type' is \"llama3\": rotary scaling is not implemented"));
  CHECK_THAT(refusal(with("rope_parameters", Json{{"rope_theta", 1e4}, {"factor", 8.0}})),
             ContainsSubstring("'rope_parameters.factor' is 8.0: rotary scaling is not implemented"));
  CHECK_THAT(refusal(with("rope_parameters", Json{{"rope_theta", 5e5}})),
             ContainsSubstring("cfg.json: 'rope_theta' 10000 and 'rope_parameters.rope_theta' 5e+05 disagree"));
  CHECK_THAT(refusal(with("rope_parameters", Json{{"rope_theta", -1.0}})),
             ContainsSubstring("'rope_parameters.rope_theta' is -1, want a positive"));
  CHECK_THAT(refusal(with("rope_parameters", 3)), ContainsSubstring("'rope_parameters' is 3 (a number), want an object"));
  Json no_head_dim = with("hidden_size", 500);
  no_head_dim.erase("head_dim");
  CHECK_THAT(refusal(no_head_dim), ContainsSubstring("'hidden_size' 500 is not a multiple of 'num_attention_heads' 8"));

  CHECK_THAT(vkt::error_of([] { parse_llama_config("[1, 2]", "cfg.json"); }), ContainsSubstring("cfg.json"));
  CHECK_THAT(vkt::error_of([] { parse_llama_config(R"({"vocab_size": 1, "vocab_size": 2})", "cfg.json"); }),
             ContainsSubstring("key 'vocab_size' appears twice"));
  CHECK_THAT(vkt::error_of([] { parse_llama_config("{\"vocab_size\": 27", "cfg.json"); }),
             ContainsSubstring("cfg.json: bad JSON"));
}

TEST_CASE("llama config: read from a file; a missing or oversized file is refused", "[io][model][errors]") {
  vkt::TempDir dir;
  vkt::write_raw_file(dir.file("config.json"), reference_config().dump());
  CHECK(read_llama_config(dir.file("config.json")).hidden_size == 512);
  CHECK_THAT(vkt::error_of([&] { read_llama_config(dir.file("absent.json")); }), ContainsSubstring("absent.json"));
  vkt::write_raw_file(dir.file("huge.json"), std::string((1u << 20) + 1, ' '));
  CHECK_THAT(vkt::error_of([&] { read_llama_config(dir.file("huge.json")); }),
             ContainsSubstring("more than a model config may have"));
}
