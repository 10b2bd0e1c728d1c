#include "vkblr-fit/fit_ranks.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// One process: BlrTrainer's plain steps, or with micro-batches its split
// steps, the parts accumulated in order.
class LocalTrainer final : public FitTrainer {
 public:
  LocalTrainer(Context& ctx, BlrLayer& layer, std::uint32_t part_tokens, std::uint32_t micro_batches,
               BlrTrainerConfig config)
      : parts_(micro_batches), trainer_(ctx, layer, part_tokens, with_split(config, micro_batches > 1)) {}

  void add_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) override {
    check_parts("add_batch", x, target);
    for (std::size_t k = 0; k < parts_; ++k) trainer_.add_batch(x[k], target[k], input);
  }
  void add_eval_batch(std::span<const Buffer> x, std::span<const Buffer> target, BatchInput input) override {
    check_parts("add_eval_batch", x, target);
    for (std::size_t k = 0; k < parts_; ++k) trainer_.add_eval_batch(x[k], target[k], input);
  }
  StepResult step(std::size_t batch, float sign_lr, float scale_lr) override {
    if (parts_ == 1) return trainer_.step(batch, sign_lr, scale_lr);
    for (std::size_t k = 0; k < parts_; ++k) trainer_.accumulate(batch * parts_ + k);
    return trainer_.apply(sign_lr, scale_lr);
  }
  double eval(std::size_t batch) override {
    double sq = 0;
    for (std::size_t k = 0; k < parts_; ++k) sq += trainer_.eval(batch * parts_ + k);
    return sq;
  }
  void check_agreement() override {}
  BlrTrainer& trainer() override { return trainer_; }
  nlohmann::json timing() const override { return nullptr; }

 private:
  static BlrTrainerConfig with_split(BlrTrainerConfig c, bool split) {
    c.split = split;
    return c;
  }
  void check_parts(const char* op, std::span<const Buffer> x, std::span<const Buffer> target) const {
    require(x.size() == parts_ && target.size() == parts_, "FitTrainer::{}: {} inputs and {} targets for {} parts",
            op, x.size(), target.size(), parts_);
  }

  std::size_t parts_;
  BlrTrainer trainer_;
};

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

bool launched_by_mpi() {
  return set("OMPI_COMM_WORLD_SIZE") || set("PMIX_RANK") || set("PMI_RANK") || set("PMI_SIZE");
}

FitSlice split_tokens(std::uint32_t total, std::uint32_t parts, std::uint32_t index) {
  require(parts >= 1 && parts <= total && index < parts, "split_tokens: part {} of {} parts of {} tokens", index,
          parts, total);
  const std::uint32_t base = total / parts, extra = total % parts;
  return {index * base + std::min(index, extra), base + (index < extra ? 1u : 0u)};
}

std::vector<FitSlice> rank_parts(const FitRanks& ranks, std::uint32_t batch_tokens, std::uint32_t micro_batches) {
  const auto n = static_cast<std::uint32_t>(ranks.size());
  require(micro_batches >= 1, "--micro-batches {} (at least 1)", micro_batches);
  require(batch_tokens >= n, "--batch {} over {} ranks: each rank needs a token", batch_tokens, n);
  require(micro_batches == 1 || batch_tokens % (std::uint64_t{n} * micro_batches) == 0,
          "--batch {} is not a multiple of {} ranks x {} micro-batches (micro-batches must be the same size)",
          batch_tokens, n, micro_batches);
  const FitSlice mine = ranks.slice(batch_tokens);
  std::vector<FitSlice> parts;
  for (std::uint32_t k = 0; k < micro_batches; ++k) {
    const FitSlice p = split_tokens(mine.count, micro_batches, k);
    parts.push_back({mine.first + p.first, p.count});
  }
  return parts;
}

std::unique_ptr<FitTrainer> LocalRanks::make_trainer(Context& ctx, BlrLayer& layer, std::uint32_t batch_tokens,
                                                     std::uint32_t micro_batches, const BlrTrainerConfig& config) {
  const std::vector<FitSlice> parts = rank_parts(*this, batch_tokens, micro_batches);
  return std::make_unique<LocalTrainer>(ctx, layer, parts.front().count, micro_batches, config);
}

int LocalRanks::fail(std::string_view message) {
  std::fprintf(stderr, "vkblr-fit: %s\n", std::string(message).c_str());
  return 1;
}

}  // namespace vkblr::fit
