// numpy_order.hpp — numpy's Generator(PCG64(seed)).permutation(n), bit for
// bit: SeedSequence's hashing of the seed, PCG64 (128-bit LCG, XSL-RR
// output, 32-bit draws from halves of a 64-bit one), and Generator.shuffle's
// Fisher–Yates with masked rejection (random_interval). vkblr-train takes
// its windows in the order tools/lab/qat_peer.py (the PyTorch peer) does.
#pragma once

#include <cstdint>
#include <vector>

namespace vkblr::train {

class NumpyPermutations {
 public:
  // A generator seeded as np.random.Generator(np.random.PCG64(seed)).
  explicit NumpyPermutations(std::uint64_t seed);
  // The next rng.permutation(n): 0..n-1 shuffled.
  std::vector<std::uint32_t> next(std::uint32_t n);

 private:
  std::uint64_t next64();
  std::uint32_t next32();
  std::uint64_t interval(std::uint64_t max);  // uniform in [0, max]

  __extension__ using u128 = unsigned __int128;
  u128 state_ = 0, inc_ = 0;
  bool has32_ = false;
  std::uint32_t held32_ = 0;
};

}  // namespace vkblr::train
