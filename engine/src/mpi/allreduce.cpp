// vkblr::mpi::RankGroup's deterministic sums (the reduction order of
// vkblr/mpi.hpp: owner-computes chunks, rank order): allreduce_sum through
// MPI messages, sum_shared in one shared-memory window.
#include <format>

#include "rank_order_sum.hpp"
#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {

void RankGroup::allreduce_sum(std::span<float> values, std::string_view what) {
  require(values.size() <= 0x7fffffff, "vkblr::mpi::allreduce_sum ({}): {} floats (MPI counts: at most 2^31 - 1)",
          what, values.size());
  if (values.empty()) return;  // the same length on every rank: every rank returns
  if (size_ == 1) {
    const float* const only[] = {values.data()};
    detail::sum_in_rank_order(only, values.data(), values.size(), sum_threads_);  // 0 + v
  } else {
    sum_by_messages(values, what);
  }
}

void RankGroup::sum_by_messages(std::span<float> values, std::string_view what) {
  const auto n = static_cast<std::size_t>(size_), me = static_cast<std::size_t>(rank_);
  std::vector<int> counts(n), displs(n);
  for (std::size_t s = 0; s < n; ++s) {
    const detail::Chunk c = detail::chunk_of(values.size(), s, n);
    counts[s] = static_cast<int>(c.count);
    displs[s] = static_cast<int>(c.first);
  }
  const auto mine = static_cast<std::size_t>(counts[me]);
  // chunk `me` of every rank, rank r's at r·mine
  chunks_.resize(n * mine);
  const std::vector<int> from(n, counts[me]);
  std::vector<int> at(n);
  for (std::size_t r = 0; r < n; ++r) at[r] = static_cast<int>(r * mine);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ialltoallv(values.data(), counts.data(), displs.data(), MPI_FLOAT, chunks_.data(), from.data(), at.data(),
                       MPI_FLOAT, comm_, &request),
        "MPI_Ialltoallv", what);
  wait(request, "MPI_Ialltoallv", what);
  std::vector<const float*> inputs(n);
  for (std::size_t r = 0; r < n; ++r) inputs[r] = chunks_.data() + r * mine;
  detail::sum_in_rank_order(inputs, values.data() + displs[me], mine, sum_threads_);
  check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), counts.data(), displs.data(), MPI_FLOAT,
                        comm_, &request),
        "MPI_Iallgatherv", what);
  wait(request, "MPI_Iallgatherv", what);
}

// Ordering: a rank writes its input only before the first barrier of a
// call, reads the inputs and writes its chunk of the result only between
// the two, and reads the result only after the second. A rank reaches the
// next call's first barrier only after it has read this call's result, so
// no rank overwrites what another still reads.
void RankGroup::sum_shared(const SharedBlocks& blocks, std::string_view what) {
  require(exchange_ == Exchange::shared_memory, "vkblr::mpi::sum_shared ({}): the group exchanges through {}", what,
          to_string(exchange_));
  const auto n = static_cast<std::size_t>(size_);
  const detail::Chunk mine = detail::chunk_of(blocks.floats(), static_cast<std::size_t>(rank_), n);
  blocks.sync();
  barrier(what);
  blocks.sync();
  std::vector<const float*> inputs(n);
  for (std::size_t r = 0; r < n; ++r) inputs[r] = blocks.input(static_cast<int>(r)) + mine.first;
  detail::sum_in_rank_order(inputs, blocks.result() + mine.first, mine.count, sum_threads_);
  blocks.sync();
  barrier(what);
  blocks.sync();
}

}  // namespace vkblr::mpi
