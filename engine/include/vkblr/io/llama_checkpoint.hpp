// vkblr/io/llama_checkpoint.hpp — a Llama-family model's weights in
// Hugging Face's layout: a directory with config.json and either
// model.safetensors or model.safetensors.index.json and its shards (the
// index's "weight_map" gives each tensor's file).
//
// Opening checks, before any weight is read, that every parameter of
// llama_parameters(config) is there with its shape and a float dtype (F32,
// BF16 or F16), and that nothing else is, apart from the rotary tables
// older exports saved ("...rotary_emb.inv_freq") and, when the embeddings
// are tied, an "lm_head.weight" (both ignored: vkblr computes the rotary
// angles, and a tied head reads the embedding). Shard names must be plain
// file names in the directory. Throws vkblr::Error naming the file and the
// tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/io/llama_config.hpp"
#include "vkblr/io/safetensors.hpp"

namespace vkblr::io {

class LlamaCheckpoint {
 public:
  explicit LlamaCheckpoint(const std::string& directory);

  const LlamaConfig& config() const { return config_; }
  const std::vector<LlamaParameter>& parameters() const { return parameters_; }
  // The stored tensor of parameter `name` (its dtype, shape, file);
  // throws for a name that is not a parameter.
  const TensorInfo& tensor(std::string_view name) const;
  // The parameter's values as f32, row-major as stored ([out][in] for a
  // linear layer), BF16/F16 widened exactly.
  std::vector<float> read_f32(std::string_view name) const;

 private:
  struct Place {
    SafetensorsReader* reader;
    const TensorInfo* tensor;
  };
  const Place& place(std::string_view name) const;

  std::string directory_;
  LlamaConfig config_;
  std::vector<LlamaParameter> parameters_;
  std::vector<std::unique_ptr<SafetensorsReader>> files_;
  std::map<std::string, Place, std::less<>> places_;
};

}  // namespace vkblr::io
