// fake_ranks.hpp — rank `rank` of `size` for vkblr-fit's host tests, in one
// process: slices as vkblr::mpi::RankGroup::slice cuts them; gather returns
// this rank's text as every rank's (as if every rank sent the same); sums,
// agreement checks and trainers are no-ops.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkblr-fit/fit_ranks.hpp"

namespace vkt {

class FakeRanks final : public vkblr::fit::FitRanks {
 public:
  FakeRanks(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  vkblr::fit::FitSlice slice(std::uint32_t total) const override {
    return vkblr::fit::split_tokens(total, static_cast<std::uint32_t>(size_), static_cast<std::uint32_t>(rank_));
  }
  double sum(double value, std::string_view) override { return value; }
  std::unique_ptr<vkblr::fit::FitTrainer> make_trainer(vkblr::Context&, vkblr::BlrLayer&, std::uint32_t,
                                                       std::uint32_t, const vkblr::BlrTrainerConfig&) override {
    return nullptr;
  }
  std::vector<std::string> gather(const std::string& text, std::string_view, double) override {
    return std::vector<std::string>(static_cast<std::size_t>(size_), text);
  }
  void check_agreement(const vkblr::Context&, std::span<const std::pair<std::string, std::string>>) override {}
  int fail(std::string_view) override { return 1; }

 private:
  int rank_, size_;
};

}  // namespace vkt
