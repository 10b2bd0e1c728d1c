// vkblr/io/excerpt.hpp — quoting untrusted file content in error messages.
//
// A message that shows bytes read from a file (a header, a name, a bad
// value) shows at most kExcerptBytes of them, so a hostile or damaged file
// cannot make a message of megabytes or send control sequences to a
// terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vkblr::io {

inline constexpr std::size_t kExcerptBytes = 200;

// `text` with control bytes (< 0x20, 0x7f) written as \xNN, cut after
// `max_bytes` bytes of it (never inside a UTF-8 sequence) with "…" appended
// when cut. Other bytes are kept as they are.
std::string excerpt(std::string_view text, std::size_t max_bytes = kExcerptBytes);

}  // namespace vkblr::io
