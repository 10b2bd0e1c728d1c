#include "vkblr-train/train_checkpoint.hpp"

#include <set>

#include "vkblr-fit/train/fit_checkpoint.hpp"
#include "vkblr/error.hpp"
#include "vkblr/io/checkpoint.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"

namespace vkblr::train {

void write_train_checkpoint(const std::string& path, const nlohmann::json& key, const nlohmann::json& data_order,
                            const TrainProgress& progress, const StateBuffers& state) {
  io::Checkpoint c;
  c.metadata = {{"tool", "vkblr-train"}, {"key", key}, {"progress", to_json(progress)}, {"data_order", data_order}};
  for (const auto& [name, buffer] : state) {
    require(buffer->size() % 4 == 0, "checkpoint {}: state buffer {} is {} bytes, not whole words", path, name,
            buffer->size());
    c.u32[name] = buffer->download<std::uint32_t>();
  }
  io::write_checkpoint(path, c);
}

TrainProgress restore_train_checkpoint(const std::string& path, const nlohmann::json& key, std::uint32_t steps,
                                       const StateBuffers& state) {
  const io::Checkpoint c = io::read_checkpoint(path);
  const nlohmann::json& md = c.metadata;
  require(md.is_object() && md.contains("tool") && md["tool"] == "vkblr-train",
          "checkpoint {}: not a vkblr-train checkpoint (metadata 'tool' is {})", path,
          md.is_object() && md.contains("tool") ? io::json_excerpt(md["tool"]) : std::string("missing"));
  require(md.contains("key") && md["key"].is_object(), "checkpoint {}: no resume key", path);
  const std::string differences = fit::key_differences(md["key"], key);
  require(differences.empty(), "checkpoint {} was made by another run: {}", path, differences);
  require(md.contains("progress"), "checkpoint {}: no progress", path);
  TrainProgress p = progress_from_json(md["progress"], "checkpoint " + path + ": progress");
  require(p.next_step >= 1 && p.next_step < steps, "checkpoint {}: next_step {} is outside [1, {}) (--steps {})", path,
          p.next_step, steps, steps);
  require(c.f32.empty() && c.u16.empty(), "checkpoint {}: f32 or u16 arrays, but vkblr-train stores u32 words", path);
  std::set<std::string> expected;
  for (const auto& [name, buffer] : state) {
    expected.insert(name);
    const auto it = c.u32.find(name);
    require(it != c.u32.end(), "checkpoint {}: no array '{}'", path, name);
    require(it->second.size() * 4 == buffer->size(), "checkpoint {}: array '{}' has {} words, the run's buffer {}",
            path, name, it->second.size(), buffer->size() / 4);
  }
  for (const auto& [name, words] : c.u32) {
    require(expected.contains(name), "checkpoint {}: array '{}' is not a state buffer of this run", path,
            io::excerpt(name, 80));
  }
  for (const auto& [name, buffer] : state) buffer->upload(c.u32.at(name));
  return p;
}

}  // namespace vkblr::train
