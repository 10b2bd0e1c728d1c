// ranges.hpp — whether the byte ranges an op binds share memory, so that a
// builder can refuse an output that overlaps an input it reads elsewhere
// (views of one allocation included: a view shares its parent's id).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/error.hpp"

namespace vkblr::detail {

// Whether the first `a_bytes` of `a` and the first `b_bytes` of `b` are
// bytes of the same allocation that overlap.
inline bool overlap(const Buffer& a, std::uint64_t a_bytes, const Buffer& b, std::uint64_t b_bytes) {
  if (!a || !b || a.id() != b.id()) return false;
  return a.offset() < b.offset() + b_bytes && b.offset() < a.offset() + a_bytes;
}

// Throws "<op>: <a_name> overlaps <b_name>" when they do.
inline void require_apart(const char* op, const char* a_name, const Buffer& a, std::uint64_t a_bytes,
                          const char* b_name, const Buffer& b, std::uint64_t b_bytes) {
  require(!overlap(a, a_bytes, b, b_bytes), "{}: {} overlaps {} (they must be separate memory)", op, a_name, b_name);
}

// Whether `a` and `b` are exactly the same range of the same allocation
// (an in-place operand).
inline bool same_range(const Buffer& a, const Buffer& b, std::uint64_t bytes) {
  return a && b && a.id() == b.id() && a.offset() == b.offset() && a.size() >= bytes && b.size() >= bytes;
}

}  // namespace vkblr::detail
