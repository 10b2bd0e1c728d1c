#include "vkblr-train/train_mpi.hpp"

#include <cstdio>
#include <limits>

namespace vkblr::train {

MpiTrainRanks::MpiTrainRanks(int& argc, char**& argv) : session_(argc, argv), group_(MPI_COMM_WORLD) {}

void MpiTrainRanks::allreduce_sum(std::span<float> values, std::string_view what) {
  group_.allreduce_sum(values, what);
}

void MpiTrainRanks::check_agreement(const Context& ctx, const std::string& key) {
  mpi::Fingerprint fingerprint;
  fingerprint.add_device(ctx);
  fingerprint.add_hash("settings and inputs", std::as_bytes(std::span(key)));
  group_.check_agreement(fingerprint);
  // start-up is over: a step's exchange waits at most for one evaluation
  // of the slowest rank, which has no fixed bound
  group_.set_timeout_s(std::numeric_limits<double>::infinity());
}

int MpiTrainRanks::fail(std::string_view message) {
  if (group_.size() == 1) {
    std::fprintf(stderr, "vkblr-train: %.*s\n", static_cast<int>(message.size()), message.data());
    return 1;
  }
  group_.abort(message);
}

}  // namespace vkblr::train
