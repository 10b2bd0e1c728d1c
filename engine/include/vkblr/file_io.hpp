// vkblr/file_io.hpp — atomic file writes for trainers and tools.
//
// The data goes to a temporary file in the target's directory, is fsync'ed,
// then renamed over the target and the directory fsync'ed: a reader sees the
// old file or the new one, never a torn one. Throws vkblr::Error naming the
// path when any step fails (the temporary file is removed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vkblr {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes);

inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, text.data(), text.size());
}

}  // namespace vkblr
