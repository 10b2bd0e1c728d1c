// vkblr/model/random_llama.hpp — models with random weights, made on the
// device: the stand-ins of benchmarks and of runs at a size no checkpoint
// here has (a Qwen-0.5B-shaped model distilled from a dense copy of itself).
//
// Weights: the embedding and an untied head N(0, 1); the norms 1; each
// projection N(0, 1/in) (ops::gaussian, then rounded to its f16 plane).
// Blr layers: random signs, h = g = 1 and ℓ = 1/sqrt(in · rank · paths), so
// that Ŵ's entries have the dense weights' scale. The same seed gives the
// same weights on one device.
#pragma once

#include <cstdint>

#include "vkblr/context.hpp"
#include "vkblr/io/llama_config.hpp"
#include "vkblr/model/llama_forward.hpp"

namespace vkblr::model {

// A dense model of `config` (check_llama_supported's rules apply).
LlamaWeights random_dense_llama(Context& ctx, const io::LlamaConfig& config, std::uint64_t seed);

// Every projection of `weights` becomes a random blr layer of `paths`
// paths at the largest rank whose bits (F16 scales) are at most `bpw` per
// weight (io::rank_for_bpw; Error naming the projection when none fits).
void use_random_blr_layers(Context& ctx, LlamaWeights& weights, std::uint32_t paths, double bpw, std::uint64_t seed);

}  // namespace vkblr::model
