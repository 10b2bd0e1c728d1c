// train_mpi.hpp — vkblr-train under mpirun: the ranks of the job as
// TrainRanks (train_ranks.hpp) over vkblr::mpi. Built into vkblr-train only
// with vkblr::mpi (compile definition VKBLR_TRAIN_MPI).
#pragma once

#include <string>

#include "vkblr-train/train_ranks.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::train {

class MpiTrainRanks final : public TrainRanks {
 public:
  MpiTrainRanks(int& argc, char**& argv);

  int rank() const noexcept override { return group_.rank(); }
  int size() const noexcept override { return group_.size(); }
  void allreduce_sum(std::span<float> values, std::string_view what) override;
  void check_agreement(const Context& ctx, const std::string& key) override;
  int fail(std::string_view message) override;

  std::string device() const { return group_.device(); }

 private:
  mpi::Session session_;  // first in, last out
  mpi::RankGroup group_;
};

}  // namespace vkblr::train
