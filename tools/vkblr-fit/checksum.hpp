// checksum.hpp — XXH3-64 checksums (xxHash) of vkblr-fit's inputs and files.
//
// A checksum is written as 16 lowercase hex digits. An input matrix's
// checksum covers its shape (rows, cols as u64) and its f32 values as read
// (after any widening from F16/BF16/F64), so two matrices of one shape and
// name but other values differ; a checkpoint or result records the
// checksums of the W and X it was made from (fit_checkpoint.hpp,
// blr_result.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vkblr-fit/matrix.hpp"

namespace vkblr::fit {

std::uint64_t xxh3_64(std::span<const std::byte> bytes);

// "0123456789abcdef"
std::string checksum_hex(std::uint64_t checksum);

// The checksum of the matrices' rows one after another (all of one column
// count): X's training tokens then its held-out tokens give the checksum of
// the X the run used.
std::uint64_t matrix_checksum(std::initializer_list<const Matrix*> parts);

// The checksums of the W and X a fit used (matrix_checksum of each).
struct InputChecksums {
  std::uint64_t weight = 0, activations = 0;
  bool operator==(const InputChecksums&) const = default;
};

// "0123456789abcdef" back to its value; nullopt for anything else.
std::optional<std::uint64_t> parse_checksum_hex(std::string_view text);

}  // namespace vkblr::fit
