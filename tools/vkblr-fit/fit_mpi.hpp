// fit_mpi.hpp — vkblr-fit under mpirun: the ranks of the job as FitRanks
// (fit_ranks.hpp), over vkblr::mpi. Built into vkblr-fit only when
// vkblr::mpi is (compile definition VKBLR_FIT_MPI); vkblr-fit started
// without a launcher never initialises MPI.
//
// Every rank runs the whole fit on its slice of each batch
// (vkblr::mpi::DistributedTrainer: gradients summed over the ranks in rank
// order before every update, so every rank holds the same layer bit for
// bit); rank 0 alone writes files and prints progress. Each rank drives
// RankGroup::device(). A manifest run spreads its layers over the ranks
// instead (manifest/run_manifest.hpp), through gather and check_agreement.
#pragma once

#include <string>

#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::fit {

class MpiRanks final : public FitRanks {
 public:
  // MPI_Init and the group of MPI_COMM_WORLD. timing_barrier: a barrier
  // before each gradient exchange, so the report tells the wait for slower
  // ranks from the exchange itself (DistributedOptions).
  MpiRanks(int& argc, char**& argv, bool timing_barrier);

  int rank() const noexcept override { return group_.rank(); }
  int size() const noexcept override { return group_.size(); }
  FitSlice slice(std::uint32_t total) const override;
  double sum(double value, std::string_view what) override;
  std::unique_ptr<FitTrainer> make_trainer(Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
                                           std::uint32_t micro_batches, const BlrTrainerConfig& config) override;
  std::vector<std::string> gather(const std::string& text, std::string_view what, double extra_s) override;
  void check_agreement(const Context& ctx, std::span<const std::pair<std::string, std::string>> fields) override;
  // One rank: prints the error and returns 1. Several: prints it with the
  // rank and ends the job (MPI_Abort), since the other ranks may be waiting
  // for this one in a collective.
  int fail(std::string_view message) override;

  // This rank's device (ContextOptions::device).
  std::string device() const { return group_.device(); }

 private:
  mpi::Session session_;  // first in, last out: MPI_Finalize after the group is freed
  mpi::RankGroup group_;
  bool timing_barrier_;
};

}  // namespace vkblr::fit
