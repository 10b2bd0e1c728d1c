// fit_ranks.hpp — the processes a vkblr-fit run trains on, and how the
// tokens of every batch are spread over them.
//
// A global batch of B tokens is cut into parts, in token order: the ranks
// of an MPI job take contiguous slices in rank order (FitRanks::slice, the
// rule of vkblr::mpi::RankGroup::slice), and each rank cuts its slice into
// `micro_batches` equal parts (split_tokens). A rank holds only its parts:
// their inputs, their dense targets, one BlrTrainer of the part's size.
//
// The sums over the parts have a fixed order. A step's gradients: each
// rank accumulates its parts in order on the device, (0 + G₀) + G₁ + … in
// f32 (BlrTrainer's split steps), then the ranks' sums are added in rank
// order (vkblr::mpi's allreduce_sum). Scalars (‖y*‖² of the targets, the
// held-out squared error) per batch: over a rank's parts in order, then over
// the ranks in rank order (FitRanks::sum), in f64. Hence
//
//   N ranks × 1 micro-batch  ≡  1 rank × N micro-batches, bit for bit
//
// (the same parts summed in the same order; 0 + v = v). Other splits of a
// batch train on the same gradients up to f32 rounding, and one rank with
// one micro-batch is BlrTrainer's plain step, as vkblr-fit always ran.
//
// The ranks of a manifest run share out its layers instead, each fitting
// its own on one process (manifest/run_manifest.hpp); gather and
// check_agreement serve that.
//
// LocalRanks is one process (no MPI). fit_mpi.hpp's MpiRanks, built into
// vkblr-fit only with vkblr::mpi, is the ranks of an mpirun job.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/trainer.hpp"

namespace vkblr::fit {

// Tokens [first, first + count) of a batch.
struct FitSlice {
  std::uint32_t first = 0, count = 0;
  bool operator==(const FitSlice&) const = default;
};

// Part `index` of `total` tokens cut into `parts` contiguous parts in
// order: ⌊total/parts⌋ tokens each, one more for the first total mod parts.
// Throws vkblr::Error unless index < parts <= total.
FitSlice split_tokens(std::uint32_t total, std::uint32_t parts, std::uint32_t index);

// The trainer of one rank: a BlrTrainer on this rank's parts, whose steps
// use the gradients summed over every part of every rank (order above).
// Every call but trainer() and timing() is collective.
class FitTrainer {
 public:
  virtual ~FitTrainer() = default;
  // A training / held-out batch: x [part][n] (f32 or f16, as `input` says)
  // and target [part][m] f32 for each of this rank's parts, in order. Every
  // rank adds its batches in the same order; batch b is the b-th added.
  virtual void add_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) = 0;
  virtual void add_eval_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) = 0;
  // One step on training batch `batch`; the result (loss) is the whole
  // batch's, the same on every rank.
  virtual StepResult step(std::size_t batch, float sign_lr, float scale_lr) = 0;
  // ‖XŴᵀ − y*‖² of held-out batch `batch`, summed over every part.
  virtual double eval(std::size_t batch) = 0;
  // Throws vkblr::Error on every rank unless the ranks' layers, optimizer
  // states and settings agree (after a checkpoint was restored).
  virtual void check_agreement() = 0;
  // This rank's BlrTrainer: optimizer state, step counters, sign telemetry.
  virtual BlrTrainer& trainer() = 0;
  // Per-step times of this rank for the report (null where not measured).
  virtual nlohmann::json timing() const = 0;
};

// The processes of a fit.
class FitRanks {
 public:
  virtual ~FitRanks() = default;
  virtual int rank() const noexcept = 0;  // rank 0 writes the files and prints
  virtual int size() const noexcept = 0;
  // This rank's slice of a batch of `total` tokens (rank order, as above).
  virtual FitSlice slice(std::uint32_t total) const = 0;
  // Collective: the sum of every rank's `value` in rank order (f64);
  // `what` names it in error messages.
  virtual double sum(double value, std::string_view what) = 0;
  // Collective: this rank's trainer for batches of `batch_tokens` tokens
  // cut as parts() says. Every rank passes a layer with the same values and
  // the same configuration (config.loss_norm: the whole batch's).
  virtual std::unique_ptr<FitTrainer> make_trainer(Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
                                                   std::uint32_t micro_batches, const BlrTrainerConfig& config) = 0;
  // Collective: every rank's `text`, in rank order; `what` names it in
  // error messages. Waits for the other ranks up to the usual deadline
  // plus `extra_s` seconds (>= 0; +infinity: without a deadline).
  virtual std::vector<std::string> gather(const std::string& text, std::string_view what, double extra_s) = 0;
  // Collective: throws vkblr::Error on every rank, naming each value that
  // differs and its ranks, unless every rank's `ctx` is a device of one kind
  // and driver under one GEMM policy (vkblr::mpi::Fingerprint::add_device)
  // and every (name, value) of `fields` is the same on every rank.
  virtual void check_agreement(const Context& ctx,
                               std::span<const std::pair<std::string, std::string>> fields) = 0;
  // An error on this rank: prints it and returns the exit status (1), or,
  // where other ranks would wait for this one, ends the whole job.
  virtual int fail(std::string_view message) = 0;
};

// This rank's parts of a batch of `batch_tokens` tokens, in summation
// order. Throws vkblr::Error unless every rank has a token and, with
// micro_batches > 1, every part the same size (batch_tokens a multiple of
// ranks × micro_batches: one BlrTrainer serves all parts).
std::vector<FitSlice> rank_parts(const FitRanks& ranks, std::uint32_t batch_tokens, std::uint32_t micro_batches);

// True when an MPI launcher started this process: mpirun / mpiexec of Open
// MPI (OMPI_COMM_WORLD_SIZE), any PMIx launcher such as srun --mpi=pmix
// (PMIX_RANK), or a PMI-1/2 one such as MPICH's Hydra (PMI_RANK, PMI_SIZE).
bool launched_by_mpi();

// One process: rank 0 of 1.
class LocalRanks final : public FitRanks {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  FitSlice slice(std::uint32_t total) const override { return {0, total}; }
  double sum(double value, std::string_view) override { return 0.0 + value; }
  std::unique_ptr<FitTrainer> make_trainer(Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
                                           std::uint32_t micro_batches, const BlrTrainerConfig& config) override;
  std::vector<std::string> gather(const std::string& text, std::string_view, double) override { return {text}; }
  void check_agreement(const Context&, std::span<const std::pair<std::string, std::string>>) override {}
  int fail(std::string_view message) override;
};

}  // namespace vkblr::fit
