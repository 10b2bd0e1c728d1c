// file_io.hpp — atomic file writes: the data goes to a temporary file in the
// same directory, is fsync'ed, then renamed over the target (and the
// directory fsync'ed), so a reader sees the old file or the new one, never
// a torn one. Throws vkblr::Error naming the path on failure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vkblr::detail {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes);
inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, text.data(), text.size());
}

}  // namespace vkblr::detail
