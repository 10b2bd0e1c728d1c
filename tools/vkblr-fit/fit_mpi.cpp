#include "vkblr-fit/fit_mpi.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <format>

#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// DistributedTrainer on this rank's parts: the first micro-batches
// accumulate on the device, the last one's step exchanges the sum.
class MpiTrainer final : public FitTrainer {
 public:
  MpiTrainer(mpi::RankGroup& group, Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
             std::uint32_t micro_batches, const BlrTrainerConfig& config, const mpi::DistributedOptions& options)
      : group_(group), parts_(micro_batches), dist_(group, ctx, layer, batch_tokens, config, options),
        block_bytes_(std::uint64_t{dist_.trainer().gradient_block().floats} * 4) {
    require(micro_batches == 1 || dist_.slice().count % micro_batches == 0,
            "vkblr-fit: a slice of {} tokens in {} micro-batches", dist_.slice().count, micro_batches);
  }

  void add_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) override {
    check_parts("add_batch", x, target);
    for (std::size_t k = 0; k < parts_; ++k) dist_.add_batch(x[k], target[k], input);
  }
  void add_eval_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) override {
    check_parts("add_eval_batch", x, target);
    for (std::size_t k = 0; k < parts_; ++k) dist_.add_eval_batch(x[k], target[k], input);
  }
  StepResult step(std::size_t batch, float sign_lr, float scale_lr) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k + 1 < parts_; ++k) dist_.trainer().accumulate(batch * parts_ + k);
    early_accumulate_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return dist_.step(batch * parts_ + parts_ - 1, sign_lr, scale_lr);
  }
  double eval(std::size_t batch) override {
    double sq = 0;
    for (std::size_t k = 0; k < parts_; ++k) sq += dist_.trainer().eval(batch * parts_ + k);
    return group_.sum(sq, "held-out squared error");
  }
  void check_agreement() override { dist_.check_agreement(); }
  BlrTrainer& trainer() override { return dist_.trainer(); }
  nlohmann::json timing() const override {
    const mpi::StepTiming& t = dist_.timing();
    if (t.steps == 0) return nullptr;
    const double per = 1e3 / static_cast<double>(t.steps);
    const double accumulate = t.accumulate_s + early_accumulate_s_, total = t.total_s() + early_accumulate_s_;
    return {{"steps", t.steps},
            {"accumulate_ms", accumulate * per},
            {"wait_ms", t.wait_s * per},
            {"exchange_ms", t.exchange_s * per},
            {"apply_ms", t.apply_s * per},
            {"exchange_share", total > 0 ? t.exchange_s / total : 0.0},
            {"gradient_block_bytes", block_bytes_},
            {"exchange", dist_.shares_blocks() ? "shared_memory" : "messages"},
            {"exchange_note", dist_.shared_note()},
            {"sum_threads", group_.sum_threads()}};
  }

 private:
  void check_parts(const char* op, std::span<const Buffer> x, std::span<const Buffer> target) const {
    require(x.size() == parts_ && target.size() == parts_, "FitTrainer::{}: {} inputs and {} targets for {} parts",
            op, x.size(), target.size(), parts_);
  }

  mpi::RankGroup& group_;
  std::size_t parts_;
  mpi::DistributedTrainer dist_;
  std::uint64_t block_bytes_;
  double early_accumulate_s_ = 0;  // micro-batches before the last one
};

}  // namespace

MpiRanks::MpiRanks(int& argc, char**& argv, bool timing_barrier)
    : session_(argc, argv), group_(MPI_COMM_WORLD), timing_barrier_(timing_barrier) {}

FitSlice MpiRanks::slice(std::uint32_t total) const {
  const mpi::TokenSlice s = group_.slice(total);
  return {s.first, s.count};
}

double MpiRanks::sum(double value, std::string_view what) { return group_.sum(value, what); }

std::unique_ptr<FitTrainer> MpiRanks::make_trainer(Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
                                                   std::uint32_t micro_batches, const BlrTrainerConfig& config) {
  rank_parts(*this, batch_tokens, micro_batches);  // the checks every rank makes alike
  mpi::DistributedOptions options;
  options.timing_barrier = timing_barrier_;
  return std::make_unique<MpiTrainer>(group_, ctx, layer, batch_tokens, micro_batches, config, options);
}

std::vector<std::string> MpiRanks::gather(const std::string& text, std::string_view what, double extra_s) {
  require(extra_s >= 0, "MpiRanks::gather: {} extra seconds", extra_s);
  const double usual = group_.timeout_s();
  group_.set_timeout_s(usual + extra_s);
  std::vector<std::string> all = group_.allgather_strings(text, what);
  group_.set_timeout_s(usual);
  return all;
}

void MpiRanks::check_agreement(const Context& ctx, std::span<const std::pair<std::string, std::string>> fields) {
  mpi::Fingerprint fingerprint;
  fingerprint.add_device(ctx);
  for (const auto& [name, value] : fields) fingerprint.add(name, value);
  group_.check_agreement(fingerprint);
}

int MpiRanks::fail(std::string_view message) {
  if (size() == 1) {
    std::fprintf(stderr, "vkblr-fit: %s\n", std::string(message).c_str());
    return 1;
  }
  const std::string line = std::format("vkblr-fit: rank {}: {}\n", rank(), message);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  MPI_Abort(group_.comm(), 1);
  std::abort();  // MPI_Abort does not return
}

}  // namespace vkblr::fit
