#include "vkblr-train/train_ranks.hpp"

#include <cstdio>

namespace vkblr::train {

int LocalRanks::fail(std::string_view message) {
  std::fprintf(stderr, "vkblr-train: %.*s\n", static_cast<int>(message.size()), message.data());
  return 1;
}

}  // namespace vkblr::train
