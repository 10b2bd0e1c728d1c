#include "rank_order_sum.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace vkblr::mpi::detail {
namespace {

constexpr std::size_t kMinFloatsPerThread = std::size_t{1} << 18;

void sum_range(std::span<const float* const> inputs, float* out, std::size_t begin, std::size_t end) {
  const float* const first = inputs[0];
  for (std::size_t i = begin; i < end; ++i) out[i] = 0.0f + first[i];
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    const float* const v = inputs[r];
    for (std::size_t i = begin; i < end; ++i) out[i] += v[i];
  }
}

}  // namespace

Chunk chunk_of(std::size_t total, std::size_t rank, std::size_t ranks) {
  const std::size_t base = total / ranks, extra = total % ranks;
  return {rank * base + std::min(rank, extra), base + (rank < extra ? 1 : 0)};
}

void sum_in_rank_order(std::span<const float* const> inputs, float* out, std::size_t count, unsigned threads) {
  if (inputs.empty() || count == 0) return;
  const std::size_t parts =
      std::clamp<std::size_t>(count / kMinFloatsPerThread, 1, std::max<std::size_t>(threads, 1));
  // 16-float (64-byte) aligned boundaries keep two threads off one cache line
  const std::size_t step = (count / parts + 15) / 16 * 16;
  std::vector<std::jthread> helpers;
  helpers.reserve(parts - 1);
  for (std::size_t k = 1; k < parts; ++k) {
    const std::size_t begin = std::min(count, k * step), end = std::min(count, (k + 1) * step);
    if (begin < end) helpers.emplace_back([=] { sum_range(inputs, out, begin, end); });
  }
  sum_range(inputs, out, 0, std::min(count, step));
}

unsigned sum_threads_for(unsigned requested, int ranks_on_host) {
  if (requested > 0) return requested;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  unsigned usable = hardware;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) usable = static_cast<unsigned>(std::max(CPU_COUNT(&set), 1));
  // a rank bound to some cores (mpirun's default: one) has them to itself;
  // one that may run anywhere shares the host's with its other ranks
  const unsigned mine = usable < hardware ? usable : usable / static_cast<unsigned>(std::max(ranks_on_host, 1));
  return std::clamp(mine, 1u, 8u);
}

}  // namespace vkblr::mpi::detail
