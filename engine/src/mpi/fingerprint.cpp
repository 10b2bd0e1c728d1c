// vkblr::mpi::Fingerprint: named values the ranks must agree on.
#include <format>
#include <string>

#include "vkblr/gemm_policy.hpp"
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

void Fingerprint::add_device(const Context& ctx) {
  const Caps& caps = ctx.caps();
  add("vkblr version", std::string(version()));
  add("device", std::format("{} ({} {}, Vulkan {})", caps.device_name, caps.driver_name, caps.driver_info,
                            caps.api_version_string));
  for (auto& [name, value] : gemm_policy_fields(ctx.gemm_policy())) add("gemm policy " + name, std::move(value));
}

}  // namespace vkblr::mpi
