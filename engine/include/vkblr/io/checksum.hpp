// vkblr/io/checksum.hpp — XXH3-64 checksums (xxHash) of vkblr-fit's inputs
// and files.
//
// A checksum is written as 16 lowercase hex digits. An input's checksum
// covers its stored bytes (W's, and those of the rows of X a run uses; for
// synthetic data, the text naming every parameter: io/device_data.hpp), so
// two inputs of one shape and name but other values differ; a checkpoint or
// result records the checksums of the W and X it was made from
// (fit_checkpoint.hpp, blr_result.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vkblr::io {

std::uint64_t xxh3_64(std::span<const std::byte> bytes);
// The same of a text's bytes.
std::uint64_t xxh3_64(std::string_view text);

// "0123456789abcdef"
std::string checksum_hex(std::uint64_t checksum);

// The checksums of the W and X a fit used.
struct InputChecksums {
  std::uint64_t weight = 0, activations = 0;
  bool operator==(const InputChecksums&) const = default;
};

// "0123456789abcdef" back to its value; nullopt for anything else.
std::optional<std::uint64_t> parse_checksum_hex(std::string_view text);

}  // namespace vkblr::io
