#include "vkblr/io/llama_config.hpp"

#include <cmath>
#include <format>
#include <optional>
#include <string>

#include "vkblr/error.hpp"
#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/json_input.hpp"

namespace vkblr::io {
namespace {

// A side of any matrix of the model: 2^20 is far beyond any released
// Llama-family model (vocabularies reach 256k, hidden sizes 16k) and keeps
// every product of two sides inside 64 bits with room to spare.
constexpr std::uint32_t kMaxSide = 1u << 20;
// config.json of a released model is a few kilobytes.
constexpr std::uint64_t kMaxConfigBytes = 1u << 20;
// Hugging Face's configs nest at most 3 levels (rope_scaling, quantization).
constexpr std::size_t kMaxConfigDepth = 8;

std::uint32_t side(const JsonField& object, std::string_view key) {
  const JsonField field = object[key];
  const std::uint32_t value = field.u32();
  if (value == 0 || value > kMaxSide) {
    fail("{} is {}, want 1 to {}", field.label(), value, kMaxSide);
  }
  return value;
}

double positive(const JsonField& object, std::string_view key) {
  const JsonField field = object[key];
  const double value = field.number();
  if (!(std::isfinite(value) && value > 0)) fail("{} is {}, want a positive finite number", field.label(), value);
  return value;
}

bool boolean_or(const JsonField& object, std::string_view key, bool absent) {
  if (!object.contains(key)) return absent;
  const JsonField field = object[key];
  if (!field.value().is_boolean()) {
    fail("{} is {} ({}), want true or false", field.label(), json_excerpt(field.value()),
         json_type_phrase(field.value()));
  }
  return field.value().get<bool>();
}

// A field vkblr's model does not implement: refused unless absent or at
// the value that means "off".
void refuse_unless_off(const JsonField& object, std::string_view key, std::string_view why) {
  if (!object.contains(key)) return;
  const JsonField field = object[key];
  const nlohmann::json& value = field.value();
  const bool off = value.is_null() || (value.is_boolean() && !value.get<bool>());
  if (!off) fail("{} is {}: {}", field.label(), json_excerpt(value), why);
}

// The rotary base: 'rope_theta' (transformers 4) or
// 'rope_parameters.rope_theta' (transformers 5, beside its 'rope_type');
// both given must agree. Absent: Llama's 10000. Scaling (a rope_type other
// than "default", or any other member) is refused.
double rope_theta_of(const JsonField& root, std::string_view where) {
  std::optional<double> theta;
  if (root.contains("rope_theta")) theta = positive(root, "rope_theta");
  if (root.contains("rope_parameters") && !root["rope_parameters"].value().is_null()) {
    const JsonField rp = root["rope_parameters"];
    rp.require_object();
    for (const auto& [key, value] : rp.value().items()) {
      if (key == "rope_theta") continue;
      if (key == "rope_type" && rp[key].string() == "default") continue;
      fail("{} is {}: rotary scaling is not implemented (plain rotary positions only)", rp[key].label(),
           json_excerpt(value));
    }
    if (rp.contains("rope_theta")) {
      const double nested = positive(rp, "rope_theta");
      if (theta && *theta != nested) {
        fail("{}: 'rope_theta' {} and 'rope_parameters.rope_theta' {} disagree", where, *theta, nested);
      }
      theta = nested;
    }
  }
  return theta.value_or(10000.0);
}

// The checkpoint's dtype: 'torch_dtype' (transformers 4) or 'dtype'
// (transformers 5); both given must agree. Absent: float32.
std::string dtype_of(const JsonField& root, std::string_view where) {
  std::optional<std::string> dtype;
  for (std::string_view key : {"torch_dtype", "dtype"}) {
    if (!root.contains(key) || root[key].value().is_null()) continue;
    const std::string d = root[key].string();
    if (d != "float32" && d != "bfloat16" && d != "float16") {
      fail("{} is '{}', want 'float32', 'bfloat16' or 'float16'", root[key].label(), d);
    }
    if (dtype && *dtype != d) fail("{}: 'torch_dtype' '{}' and 'dtype' '{}' disagree", where, *dtype, d);
    dtype = d;
  }
  return dtype.value_or("float32");
}

}  // namespace

LlamaConfig parse_llama_config(std::string_view json_text, std::string_view where) {
  const nlohmann::json parsed = parse_untrusted_json(json_text, kMaxConfigDepth, where);
  const JsonField root(parsed, std::string(where));
  root.require_object();

  if (root.contains("model_type") && root["model_type"].string() != "llama") {
    fail("{} is '{}', want 'llama' (vkblr builds the Llama architecture only)", root["model_type"].label(),
         root["model_type"].string());
  }
  if (root.contains("architectures")) {
    const JsonField list = root["architectures"];
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].string() != "LlamaForCausalLM") {
        fail("{} is '{}', want 'LlamaForCausalLM'", list[i].label(), list[i].string());
      }
    }
  }
  if (root.contains("hidden_act") && root["hidden_act"].string() != "silu") {
    fail("{} is '{}', want 'silu' (the SwiGLU MLP)", root["hidden_act"].label(), root["hidden_act"].string());
  }
  refuse_unless_off(root, "attention_bias", "vkblr's attention projections have no bias");
  refuse_unless_off(root, "mlp_bias", "vkblr's MLP projections have no bias");
  refuse_unless_off(root, "rope_scaling", "rotary scaling is not implemented (plain rotary positions only)");
  refuse_unless_off(root, "sliding_window",
                    "sliding-window attention is not implemented (causal over the whole window)");

  LlamaConfig c;
  c.vocab_size = side(root, "vocab_size");
  c.hidden_size = side(root, "hidden_size");
  c.intermediate_size = side(root, "intermediate_size");
  c.num_hidden_layers = side(root, "num_hidden_layers");
  c.num_attention_heads = side(root, "num_attention_heads");
  c.num_key_value_heads = root.contains("num_key_value_heads") ? side(root, "num_key_value_heads")
                                                               : c.num_attention_heads;
  c.max_position_embeddings = side(root, "max_position_embeddings");
  c.rms_norm_eps = positive(root, "rms_norm_eps");
  c.rope_theta = rope_theta_of(root, where);
  c.tie_word_embeddings = boolean_or(root, "tie_word_embeddings", false);

  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    fail("{}: 'num_attention_heads' {} is not a multiple of 'num_key_value_heads' {}", where,
         c.num_attention_heads, c.num_key_value_heads);
  }
  if (root.contains("head_dim") && !root["head_dim"].value().is_null()) {
    c.head_dim = side(root, "head_dim");
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      fail("{}: 'hidden_size' {} is not a multiple of 'num_attention_heads' {} (and no 'head_dim' is given)",
           where, c.hidden_size, c.num_attention_heads);
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) fail("{}: 'head_dim' {} is odd: rotary positions rotate pairs", where, c.head_dim);
  if (static_cast<std::uint64_t>(c.num_attention_heads) * c.head_dim > kMaxSide) {
    fail("{}: 'num_attention_heads' × 'head_dim' = {} is more than {}", where,
         static_cast<std::uint64_t>(c.num_attention_heads) * c.head_dim, kMaxSide);
  }

  c.torch_dtype = dtype_of(root, where);
  return c;
}

LlamaConfig read_llama_config(const std::string& path) {
  const std::string text = read_whole_file(path, kMaxConfigBytes, "model config");
  return parse_llama_config(text, path);
}

std::vector<LlamaParameter> llama_parameters(const LlamaConfig& c) {
  using Shape = std::vector<std::uint64_t>;
  std::vector<LlamaParameter> out;
  out.push_back({"model.embed_tokens.weight", Shape{c.vocab_size, c.hidden_size}, false});
  const std::uint64_t hidden = c.hidden_size, mlp = c.intermediate_size, q = c.q_size(), kv = c.kv_size();
  for (std::uint32_t n = 0; n < c.num_hidden_layers; ++n) {
    const std::string block = std::format("model.layers.{}.", n);
    out.push_back({block + "self_attn.q_proj.weight", Shape{q, hidden}, true});
    out.push_back({block + "self_attn.k_proj.weight", Shape{kv, hidden}, true});
    out.push_back({block + "self_attn.v_proj.weight", Shape{kv, hidden}, true});
    out.push_back({block + "self_attn.o_proj.weight", Shape{hidden, q}, true});
    out.push_back({block + "mlp.gate_proj.weight", Shape{mlp, hidden}, true});
    out.push_back({block + "mlp.up_proj.weight", Shape{mlp, hidden}, true});
    out.push_back({block + "mlp.down_proj.weight", Shape{hidden, mlp}, true});
    out.push_back({block + "input_layernorm.weight", Shape{hidden}, false});
    out.push_back({block + "post_attention_layernorm.weight", Shape{hidden}, false});
  }
  out.push_back({"model.norm.weight", Shape{hidden}, false});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", Shape{c.vocab_size, hidden}, false});
  return out;
}

}  // namespace vkblr::io
