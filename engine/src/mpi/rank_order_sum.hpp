// The element sums of the gradient exchange, in the fixed order that makes
// every rank's result the same bits (vkblr/mpi.hpp, "Reduction order").
#pragma once

#include <cstddef>
#include <span>

namespace vkblr::mpi::detail {

// Rank `rank`'s share of `total` items over `ranks` ranks: ⌊total/ranks⌋
// items, one more when rank < total mod ranks, after those of the ranks
// before it. The one rule for token slices and for the chunks each rank
// sums.
struct Chunk {
  std::size_t first = 0, count = 0;
};
Chunk chunk_of(std::size_t total, std::size_t rank, std::size_t ranks);

// out[i] = ((0 + inputs[0][i]) + inputs[1][i]) + ... + inputs[N−1][i] in
// f32 for i < count (inputs: one pointer per rank, in rank order, each to
// `count` floats; out may be one of them). The index range is split over
// up to `threads` threads (the calling one included) of at least 2^18
// floats each; each element is summed by one thread in the same order, so
// the bits never depend on the thread count.
void sum_in_rank_order(std::span<const float* const> inputs, float* out, std::size_t count, unsigned threads);

// Threads for the sum, 1 to 8: the cores this rank may run on (its CPU
// affinity; mpirun binds a rank to one core unless told otherwise), or,
// when it may run on all of the host's, their share among the host's
// `ranks_on_host` ranks. `requested` > 0 overrides.
unsigned sum_threads_for(unsigned requested, int ranks_on_host);

}  // namespace vkblr::mpi::detail
