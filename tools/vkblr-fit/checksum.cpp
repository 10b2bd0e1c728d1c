#include "vkblr-fit/checksum.hpp"

#include <format>
#include <memory>

#include "vkblr/error.hpp"

// header-only: nothing to link, the device build's static binaries stay
// self-contained
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace vkblr::fit {

std::uint64_t xxh3_64(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

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

std::uint64_t matrix_checksum(std::initializer_list<const Matrix*> parts) {
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  require(state && XXH3_64bits_reset(state.get()) == XXH_OK, "xxh3: cannot start a checksum");
  std::uint64_t rows = 0, cols = 0;
  for (const Matrix* m : parts) {
    rows += m->rows;
    cols = m->cols;
  }
  const std::uint64_t shape[2] = {rows, cols};
  XXH3_64bits_update(state.get(), shape, sizeof shape);
  for (const Matrix* m : parts) {
    require(m->cols == cols, "matrix_checksum: parts of {} and {} columns", m->cols, cols);
    XXH3_64bits_update(state.get(), m->values.data(), m->values.size() * sizeof(float));
  }
  return XXH3_64bits_digest(state.get());
}

}  // namespace vkblr::fit
