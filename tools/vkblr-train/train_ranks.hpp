// train_ranks.hpp — the processes a vkblr-train run trains on.
//
// One process (LocalRanks), or the ranks of an mpirun job (MpiTrainRanks,
// train_mpi.hpp, built only with vkblr::mpi). Every rank holds the whole
// student and teacher and takes its share of every step's windows: the
// step's batch is cut into ranks × micro-batches equal parts in window
// order, rank r takes parts r·K .. r·K + K − 1 (K = --micro-batches) and
// accumulates them in order (LlamaTrainer's split steps); the ranks'
// gradient blocks are then summed in rank order (vkblr::mpi's
// allreduce_sum) and every rank applies the same sums. So N ranks with one
// micro-batch each ≡ one process with N micro-batches, bit for bit
// (llama_trainer.hpp: ((0 + G₁) + G₂) + … either way).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "vkblr/context.hpp"

namespace vkblr::train {

class TrainRanks {
 public:
  virtual ~TrainRanks() = default;
  virtual int rank() const noexcept = 0;  // rank 0 writes the files and prints
  virtual int size() const noexcept = 0;
  // Collective: every rank's values replaced by their sums in rank order.
  virtual void allreduce_sum(std::span<float> values, std::string_view what) = 0;
  // Collective: throws vkblr::Error on every rank, naming what differs,
  // unless every rank's device and `key` (the run's settings and inputs) are
  // the same.
  virtual void check_agreement(const Context& ctx, const std::string& key) = 0;
  // An error on this rank: prints it and returns the exit status (1), or,
  // where other ranks would wait for this one, ends the whole job.
  virtual int fail(std::string_view message) = 0;
};

class LocalRanks final : public TrainRanks {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  void allreduce_sum(std::span<float>, std::string_view) override {}
  void check_agreement(const Context&, const std::string&) override {}
  int fail(std::string_view message) override;
};

}  // namespace vkblr::train
