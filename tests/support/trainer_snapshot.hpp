// trainer_snapshot.hpp — a trained layer's whole state as words, for the
// bit-for-bit comparisons of the trainer tests (test_trainer.cpp, tests/mpi).
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/trainer.hpp"

namespace vkt {

// Every path's bitmaps, the scales, and every buffer of trainer.state()
// (optimizer moments and sign state), read back and concatenated.
inline std::vector<std::uint32_t> trainer_snapshot(const vkblr::BlrLayer& layer, vkblr::BlrTrainer& trainer) {
  std::vector<std::uint32_t> out = layer.scales.download<std::uint32_t>();
  for (const vkblr::BlrPath& path : layer.paths) {
    for (const vkblr::Buffer* b : {&path.bits_u, &path.bits_v}) {
      const auto v = b->download<std::uint32_t>();
      out.insert(out.end(), v.begin(), v.end());
    }
  }
  for (auto& [name, buffer] : trainer.state()) {
    const auto v = buffer->download<std::uint32_t>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace vkt
