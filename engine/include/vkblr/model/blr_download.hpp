// vkblr/model/blr_download.hpp — a model's blr projections read back from
// the device as the layers of a vkblr-fit model file (io/blr_model.hpp):
// what a whole-model trainer writes after training them in place.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "vkblr/io/blr_model.hpp"
#include "vkblr/model/llama_forward.hpp"

namespace vkblr::model {

// The host values of one device layer: every path's bitmaps and its h, ℓ,
// g (f32, read from the layer's concatenated `scales` when it has them,
// else from the path's own buffers). Waits for the device.
std::vector<BlrPathInit> download_blr_paths(const BlrLayer& layer);

// The blr projection of each name (Hugging Face parameter names, as
// LlamaWeights::projection takes them), in the order given, as model-file
// layers: shape, bits and scales downloaded, scales stored as
// `scale_dtype` (F16: rounded to nearest even when the file is written),
// `inputs` the checksums recorded for every layer (e.g. those of the file
// the layers came from; zero when unknown), `tool_version` the program's.
// Throws vkblr::Error naming the name for one that is not a projection of
// the model or not a blr one.
std::vector<io::BlrModelLayer> download_blr_layers(LlamaWeights& weights, std::span<const std::string> names,
                                                   io::ScaleDtype scale_dtype,
                                                   std::span<const io::InputChecksums> inputs,
                                                   const std::string& tool_version);

}  // namespace vkblr::model
