// layer_case.hpp — the blr layer a `blr` or `train` benchmark case runs:
// its shape, and the random layer and inputs both benchmarks use.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

#include "memory_need.hpp"

namespace bench {

// Output rows m, input columns n, rank r, tokens per step, paths P.
struct LayerCase {
  std::uint32_t m = 0, n = 0, r = 0, ntok = 0, paths = 0;
};

// "m,n,r,ntok,P" with the blr layer's rules (vkblr/blr.hpp): m and n
// positive multiples of 16, r a positive multiple of 32, ntok and P at
// least 1 (bench_args.hpp's strict numbers); throws std::invalid_argument
// naming the text and the rule otherwise.
LayerCase parse_layer_case(const std::string& text);

// "m=.. n=.. r=.. ntok=.. P=..", for messages.
std::string to_string(const LayerCase& c);

// Floats of a layer's concatenated scales (BlrLayer::scale_count: every
// path's h, ℓ, g, each segment aligned for binding as a view).
double layer_scale_floats(const vkblr::Context& ctx, const LayerCase& c);

// The memory of random_layer(c, sign_grads) and of the blr ops around it:
// ops::BlrShared with min(P, lanes) lanes, BlrScratch, the split-K workspaces of
// the layer's GEMMs, and the host copies random_layer makes.
MemoryNeed layer_memory(const vkblr::Context& ctx, const LayerCase& c, bool sign_grads, std::uint32_t lanes);

// Seeded uniform floats in [lo, hi).
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// Seeded random 32-bit words (sign bitmaps).
inline std::vector<std::uint32_t> random_words(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& w : v) w = static_cast<std::uint32_t>(gen());
  return v;
}

// A layer of random signs and scales of the magnitudes vkblr-fit's init
// gives (h 0.02–0.07, ℓ 0.5–1.5, g 0.1–0.3).
vkblr::BlrLayer random_layer(vkblr::Context& ctx, const LayerCase& c, bool sign_grads);

}  // namespace bench
