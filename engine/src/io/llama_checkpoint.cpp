#include "vkblr/io/llama_checkpoint.hpp"

#include <filesystem>
#include <format>
#include <set>

#include "vkblr/error.hpp"
#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/json_input.hpp"

namespace vkblr::io {
namespace {

// An index of a sharded checkpoint lists one entry per tensor: a few
// thousand for the largest models, well under 4 MiB.
constexpr std::uint64_t kMaxIndexBytes = 16u << 20;

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += std::format("{}{}", i ? ", " : "", shape[i]);
  return out + "]";
}

bool ignored_tensor(std::string_view name, bool tied) {
  return name.ends_with("rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
}

// The shard files of model.safetensors.index.json, by tensor name.
std::map<std::string, std::string> weight_map(const std::string& index_path) {
  const std::string text = read_whole_file(index_path, kMaxIndexBytes, "checkpoint index");
  const nlohmann::json parsed = parse_untrusted_json(text, 8, index_path);
  const JsonField root(parsed, index_path);
  root.require_object();
  const JsonField map = root["weight_map"];
  map.require_object();
  std::map<std::string, std::string> out;
  for (const auto& item : map.value().items()) {
    const std::string& name = item.key();
    const JsonField entry = map[name];
    const std::string& shard = entry.string();
    if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos ||
        shard == "." || shard == "..") {
      fail("{}: 'weight_map.{}' is '{}': want a file name in the checkpoint's directory", index_path, name, shard);
    }
    out.emplace(name, shard);
  }
  return out;
}

}  // namespace

LlamaCheckpoint::LlamaCheckpoint(const std::string& directory) : directory_(directory) {
  const std::filesystem::path dir(directory);
  config_ = read_llama_config((dir / "config.json").string());
  parameters_ = llama_parameters(config_);

  // Every tensor of every file, by name: the one file, or the index's shards.
  const std::string single = (dir / "model.safetensors").string();
  const std::string index = (dir / "model.safetensors.index.json").string();
  std::map<std::string, std::string> expected_file;  // tensor → shard (sharded checkpoints only)
  std::vector<std::string> paths;
  if (std::filesystem::exists(index)) {
    expected_file = weight_map(index);
    std::set<std::string> shards;
    for (const auto& [name, shard] : expected_file) {
      if (shards.insert(shard).second) paths.push_back((dir / shard).string());
    }
  } else if (std::filesystem::exists(single)) {
    paths.push_back(single);
  } else {
    fail("{}: no model.safetensors and no model.safetensors.index.json: not a Hugging Face checkpoint", directory);
  }
  for (const std::string& path : paths) {
    files_.push_back(std::make_unique<SafetensorsReader>(path));
    SafetensorsReader* reader = files_.back().get();
    for (const TensorInfo& t : reader->tensors()) {
      if (!expected_file.empty()) {
        const auto it = expected_file.find(t.name);
        const std::string shard = std::filesystem::path(path).filename().string();
        if (it == expected_file.end() || it->second != shard) {
          fail("{}: tensor '{}' is not where the index places it ({})", path, t.name,
               it == expected_file.end() ? std::string("not in its weight_map") : it->second);
        }
      }
      if (!places_.emplace(t.name, Place{reader, &t}).second) {
        fail("{}: tensor '{}' appears in two files of the checkpoint", path, t.name);
      }
    }
  }

  std::set<std::string, std::less<>> wanted;
  for (const LlamaParameter& p : parameters_) {
    wanted.insert(p.name);
    const auto it = places_.find(p.name);
    if (it == places_.end()) {
      const auto shard = expected_file.find(p.name);
      if (shard != expected_file.end()) {
        fail("{}: the index places '{}' in {}, which does not hold it", index, p.name, shard->second);
      }
      fail("{}: parameter '{}' {} is missing from the checkpoint", directory, p.name, shape_text(p.shape));
    }
    const TensorInfo& t = *it->second.tensor;
    if (t.shape != p.shape) {
      fail("{}: '{}' is {}, want {} (config.json's sizes)", it->second.reader->path(), p.name, shape_text(t.shape),
           shape_text(p.shape));
    }
    if (t.dtype != Dtype::F32 && t.dtype != Dtype::BF16 && t.dtype != Dtype::F16) {
      fail("{}: '{}' is {}, want F32, BF16 or F16", it->second.reader->path(), p.name, dtype_name(t.dtype));
    }
  }
  for (auto it = places_.begin(); it != places_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
    } else if (ignored_tensor(it->first, config_.tie_word_embeddings)) {
      it = places_.erase(it);
    } else {
      fail("{}: tensor '{}' is not a parameter of the model config.json describes", it->second.reader->path(),
           it->first);
    }
  }
}

const LlamaCheckpoint::Place& LlamaCheckpoint::place(std::string_view name) const {
  const auto it = places_.find(name);
  if (it == places_.end()) fail("{}: '{}' is not a parameter of the model", directory_, name);
  return it->second;
}

const TensorInfo& LlamaCheckpoint::tensor(std::string_view name) const { return *place(name).tensor; }

std::vector<float> LlamaCheckpoint::read_f32(std::string_view name) const {
  const Place& p = place(name);
  return p.reader->read_f32(*p.tensor);
}

}  // namespace vkblr::io
