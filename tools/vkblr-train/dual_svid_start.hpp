// dual_svid_start.hpp — vkblr-train --init dual-svid: the starting blr
// layers made from the checkpoint's own weights by vkblr-fit's Dual-SVID
// init on the device (vkblr-fit/init/gpu_dual_svid.hpp), instead of a
// vkblr-fit model file: every projection of every block (q k v o gate up
// down), rank from --bpw by vkblr-fit's rule (io::rank_for_bpw, F16 scales)
// or --rank, --paths paths, path p's randomized SVD seeded with seed + p.
// The same checkpoint and settings give the same layers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr/context.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/llama_checkpoint.hpp"

namespace vkblr::train {

struct DualSvidStart {
  std::optional<double> bpw;          // per layer; or
  std::optional<std::uint32_t> rank;  // per path, a multiple of 32
  std::uint32_t paths = 2;
  std::uint64_t seed = 1;
};

// The layers as a model file would hold them (names: the parameters'
// Hugging Face names; weight_xxh3: of each weight's f32 values as read).
// `done(k, total)` after each layer. With `magnitudes`, each layer's signs'
// magnitudes too (one entry per path, dual_svid.hpp's SignMagnitudes; in
// the order of the layers), for the latents' start. Throws vkblr::Error
// naming the layer for a bpw no rank fits (io::rank_for_bpw's message) or a
// bad rank.
io::BlrModel dual_svid_start(Context& ctx, const io::LlamaCheckpoint& checkpoint, const DualSvidStart& settings,
                             const std::function<void(std::size_t, std::size_t)>& done,
                             std::vector<std::vector<fit::SignMagnitudes>>* magnitudes = nullptr);

}  // namespace vkblr::train
