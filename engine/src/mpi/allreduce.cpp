// vkblr::mpi::RankGroup::allreduce_sum: the deterministic all-reduce (the
// reduction order of vkblr/mpi.hpp: owner-computes chunks, rank order).
#include <format>

#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {

void RankGroup::allreduce_sum(std::span<float> values, std::string_view what) {
  require(values.size() <= 0x7fffffff, "vkblr::mpi::allreduce_sum ({}): {} floats (MPI counts: at most 2^31 - 1)",
          what, values.size());
  const auto n = static_cast<std::size_t>(size_), me = static_cast<std::size_t>(rank_);
  const std::size_t base = values.size() / n, extra = values.size() % n;
  std::vector<int> counts(n), displs(n);
  for (std::size_t s = 0; s < n; ++s) {
    counts[s] = static_cast<int>(base + (s < extra ? 1 : 0));
    displs[s] = static_cast<int>(s * base + std::min(s, extra));
  }
  const auto mine = static_cast<std::size_t>(counts[me]);
  float* const out = values.data() + displs[me];
  if (n > 1) {
    // chunk `me` of every rank, rank r's at r·mine
    chunks_.resize(n * mine);
    const std::vector<int> from(n, counts[me]);
    std::vector<int> at(n);
    for (std::size_t r = 0; r < n; ++r) at[r] = static_cast<int>(r * mine);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ialltoallv(values.data(), counts.data(), displs.data(), MPI_FLOAT, chunks_.data(), from.data(),
                         at.data(), MPI_FLOAT, comm_, &request),
          "MPI_Ialltoallv", what);
    wait(request, "MPI_Ialltoallv", what);
  }
  // ((0 + v0) + v1) + ... in f32, element by element (rank 0's values are
  // still in place on a single rank)
  const float* const first = n > 1 ? chunks_.data() : out;
  for (std::size_t i = 0; i < mine; ++i) out[i] = 0.0f + first[i];
  for (std::size_t r = 1; r < n; ++r) {
    const float* const v = chunks_.data() + r * mine;
    for (std::size_t i = 0; i < mine; ++i) out[i] += v[i];
  }
  if (n > 1) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), counts.data(), displs.data(), MPI_FLOAT,
                          comm_, &request),
          "MPI_Iallgatherv", what);
    wait(request, "MPI_Iallgatherv", what);
  }
}

}  // namespace vkblr::mpi
