// vkblr/io/llama_config.hpp — a Llama-family model as Hugging Face's
// config.json describes it, and the names and shapes of its parameters.
//
// The architecture (LlamaForCausalLM, model_type "llama"): token embedding,
// num_hidden_layers blocks of [RMSNorm → self-attention with rotary
// positions and grouped-query heads → residual add, RMSNorm → SwiGLU MLP →
// residual add], a final RMSNorm and the output head (tied to the
// embedding when tie_word_embeddings). What vkblr does not implement is
// refused, naming the field: biases (attention_bias, mlp_bias), an
// activation other than silu, rope_scaling, sliding windows. Both
// transformers 4's fields and transformers 5's are read: rope_theta at the
// top or inside rope_parameters (with rope_type "default"), torch_dtype or
// dtype; where both forms are given they must agree.
//
// Parameter names are Hugging Face's (`model.embed_tokens.weight`,
// `model.layers.N.self_attn.q_proj.weight`, ..., `model.norm.weight`,
// `lm_head.weight`); a linear layer's weight is [out][in] row-major, as
// PyTorch stores it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkblr::io {

struct LlamaConfig {
  std::uint32_t vocab_size = 0;
  std::uint32_t hidden_size = 0;
  std::uint32_t intermediate_size = 0;
  std::uint32_t num_hidden_layers = 0;
  std::uint32_t num_attention_heads = 0;
  std::uint32_t num_key_value_heads = 0;  // the query heads are a multiple of it
  std::uint32_t head_dim = 0;             // hidden_size / num_attention_heads unless given
  std::uint32_t max_position_embeddings = 0;
  double rms_norm_eps = 0;
  double rope_theta = 0;  // 10000 when absent
  bool tie_word_embeddings = false;
  std::string torch_dtype;  // torch_dtype or dtype: "float32", "bfloat16" or "float16" ("float32" when absent)

  std::uint32_t q_size() const { return num_attention_heads * head_dim; }
  std::uint32_t kv_size() const { return num_key_value_heads * head_dim; }
};

// One parameter: its Hugging Face name and shape ([out, in] for a linear
// layer's weight, [size] for a norm's).
struct LlamaParameter {
  std::string name;
  std::vector<std::uint64_t> shape;
  bool linear_in_block = false;  // one of a block's seven projections
};

// Parses config.json's text; `where` names the file in messages. Throws
// vkblr::Error "{where}: '{field}' ..." for a missing or mistyped field, a
// value out of range (a size of 0 or above 2^20 per side, heads not a
// multiple of the KV heads, hidden_size not heads × head_dim when head_dim
// is absent, eps or theta not positive and finite) and an unsupported
// feature (the field named).
LlamaConfig parse_llama_config(std::string_view json_text, std::string_view where);

// Reads and parses a config.json file (at most 1 MiB).
LlamaConfig read_llama_config(const std::string& path);

// Every parameter in the order of the model's state dict: the embedding,
// per block q, k, v, o, gate, up, down, input_layernorm,
// post_attention_layernorm, then model.norm and (untied) lm_head.
std::vector<LlamaParameter> llama_parameters(const LlamaConfig& config);

}  // namespace vkblr::io
