// vkblr::mpi::device_for_local_rank: which Vulkan device a rank drives.
#include <algorithm>
#include <array>
#include <string>

#include "vkblr/mpi.hpp"

namespace vkblr::mpi {

std::string device_for_local_rank(int local_rank, int local_size, std::string_view env,
                                  const std::vector<Caps>& devices) {
  if (!env.empty()) {
    std::vector<std::string_view> entries;
    for (std::size_t start = 0;;) {
      const std::size_t comma = env.find(',', start);
      entries.push_back(env.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return std::string(entries[static_cast<std::size_t>(local_rank) % entries.size()]);
  }
  if (local_size <= 1 || devices.empty()) return {};
  // the Context's default preference, best kind first
  constexpr std::array<std::string_view, 4> kinds{"discrete", "integrated", "virtual", "cpu"};
  for (std::string_view kind : kinds) {
    std::vector<std::size_t> of_kind;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (devices[i].device_type == kind) of_kind.push_back(i);
    }
    if (!of_kind.empty()) return std::to_string(of_kind[static_cast<std::size_t>(local_rank) % of_kind.size()]);
  }
  return std::to_string(static_cast<std::size_t>(local_rank) % devices.size());
}

}  // namespace vkblr::mpi
