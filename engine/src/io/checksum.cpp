#include "vkblr/io/checksum.hpp"

#include <format>

// header-only: nothing to link, the device build's static binaries stay
// self-contained
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace vkblr::io {

std::uint64_t xxh3_64(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::uint64_t xxh3_64(std::string_view text) { return XXH3_64bits(text.data(), text.size()); }

std::string checksum_hex(std::uint64_t checksum) { return std::format("{:016x}", checksum); }

std::optional<std::uint64_t> parse_checksum_hex(std::string_view text) {
  std::uint64_t value = 0;
  if (text.size() != 16) return std::nullopt;
  for (const char c : text) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return value;
}

}  // namespace vkblr::io
