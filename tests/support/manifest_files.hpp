// manifest_files.hpp — a small model for the manifest tests of vkblr-fit:
// two weight files of three layers each, in three shapes, their
// activations, and manifests over them (written as JSON text). No Catch2
// here: tests/mpi/manifest_model.cpp writes the same files for the MPI
// runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"
#include "vkblr/file_io.hpp"

namespace vkt {

// The tokens each activation tensor has: 4 batches of 64 for training and
// one held out (manifest_defaults), and 64 more, unused.
inline constexpr std::uint32_t kManifestTokens = 384;

// In dir: w0.safetensors and w1.safetensors, each with the layers
//   model.layers.L.mlp.up_proj.weight    128×64
//   model.layers.L.mlp.down_proj.weight   64×128
//   model.layers.L.attn.q_proj.weight     64×64
// (L = 0, 1), F32 and F16, and x0.safetensors, x1.safetensors with each
// layer's input under its module name ("model.layers.L.mlp.up_proj",
// [kManifestTokens][n]).
inline void write_manifest_model(const std::string& dir) {
  const auto file = [&](const std::string& name) { return (std::filesystem::path(dir) / name).string(); };
  struct Layer {
    const char* module;
    std::uint32_t m, n;
  };
  const Layer layers[] = {{"mlp.up_proj", 128, 64}, {"mlp.down_proj", 64, 128}, {"attn.q_proj", 64, 64}};
  for (std::uint64_t l = 0; l < 2; ++l) {
    vkblr::fit::SafetensorsWriter w, x;
    std::uint64_t seed = 10 * l;
    for (const Layer& layer : layers) {
      const std::string module = "model.layers." + std::to_string(l) + "." + layer.module;
      const vkblr::fit::Matrix wm = vkblr::fit::synthetic_weight({.m = layer.m, .n = layer.n, .seed = ++seed});
      if (l == 0) {
        w.add_f32(module + ".weight", {wm.rows, wm.cols}, wm.values);
      } else {
        w.add_f16(module + ".weight", {wm.rows, wm.cols}, wm.values);
      }
      const vkblr::fit::Matrix xm =
          vkblr::fit::synthetic_activations({.tokens = kManifestTokens, .n = layer.n, .seed = ++seed});
      x.add_f16(module, {xm.rows, xm.cols}, xm.values);
    }
    w.write(file("w" + std::to_string(l) + ".safetensors"));
    x.write(file("x" + std::to_string(l) + ".safetensors"));
  }
}

// Small fits: 2 paths of rank 32, batches of 64 tokens, 8 steps.
inline nlohmann::json manifest_defaults() {
  return {{"rank", 32},    {"paths", 2},      {"batch", 64},         {"tokens", 256},
          {"held_out", 64}, {"steps", 8},     {"eval_every", 4},     {"flip_budget", 0.01}};
}

// The six layers of write_manifest_model: layer 0's MLP by a pattern, its
// q_proj by name (rank 64, 6 steps), layer 1's by a pattern with {module}
// (seed 7); relative paths: the manifest lies in the same directory.
inline nlohmann::json six_layer_manifest() {
  return {{"defaults", manifest_defaults()},
          {"layers",
           {{{"weight", "w0.safetensors"},
             {"tensors", "model.layers.*.mlp.*_proj.weight"},
             {"activations", "x0.safetensors"},
             {"activations_tensor", "model.layers.{1}.mlp.{2}_proj"}},
            {{"weight", "w0.safetensors"},
             {"tensor", "model.layers.0.attn.q_proj.weight"},
             {"activations", "x0.safetensors"},
             {"activations_tensor", "{module}"},
             {"rank", 64},
             {"steps", 6}},
            {{"weight", "w1.safetensors"},
             {"tensors", "model.layers.1.*.weight"},
             {"activations", "x1.safetensors"},
             {"activations_tensor", "{module}"},
             {"seed", 7}}}}};
}

inline void write_manifest(const std::string& path, const nlohmann::json& manifest) {
  vkblr::write_file_atomic(path, manifest.dump(1));
}

}  // namespace vkt
