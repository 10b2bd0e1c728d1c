#include "vkblr/io/excerpt.hpp"

#include <format>

namespace vkblr::io {

std::string excerpt(std::string_view text, std::size_t max_bytes) {
  std::size_t cut = text.size();
  if (cut > max_bytes) {
    cut = max_bytes;
    // text[cut] is the first byte left out: while it continues a UTF-8
    // sequence (10xxxxxx), leave out the byte before it too (a sequence has
    // at most four bytes).
    for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80; ++i) --cut;
  }
  std::string out;
  out.reserve(cut + 8);
  for (const char c : text.substr(0, cut)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += std::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  if (cut < text.size()) out += "…";
  return out;
}

}  // namespace vkblr::io
