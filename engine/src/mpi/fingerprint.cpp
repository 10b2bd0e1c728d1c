// vkblr::mpi::Fingerprint: named values the ranks must agree on.
#include <format>

#include "vkblr/mpi.hpp"

namespace vkblr::mpi {

void Fingerprint::add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }

void Fingerprint::add_hash(std::string name, std::span<const std::byte> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (std::byte b : bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 0x100000001b3ull;
  }
  add(std::move(name), std::format("{:016x}", h));
}

}  // namespace vkblr::mpi
