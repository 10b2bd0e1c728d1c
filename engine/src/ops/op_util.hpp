// op_util.hpp — what every op builder uses: kernel lookup, folded grids and
// the argument checks that turn bad shapes into vkblr::Error messages naming
// the op and the value.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "../context_impl.hpp"
#include "gscale.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"
#include "vkblr/error.hpp"

namespace vkblr::detail {

inline constexpr std::uint32_t kEltWorkgroup = 256;  // VKBLR_ELT_WG
inline constexpr std::uint32_t kFoldWidth = 65535;    // workgroups along x before folding into y

// Grid of one invocation per element for n elements of 256-wide workgroups,
// folded into y past 65535 workgroups (elt_index() in GLSL).
inline std::array<std::uint32_t, 3> elt_grid(std::uint64_t n, const char* op) {
  const std::uint64_t groups = (n + kEltWorkgroup - 1) / kEltWorkgroup;
  if (groups <= kFoldWidth) return {static_cast<std::uint32_t>(groups), 1, 1};
  const std::uint64_t y = (groups + kFoldWidth - 1) / kFoldWidth;
  require(y <= kFoldWidth, "{}: {} elements are too many for one dispatch", op, n);
  return {kFoldWidth, static_cast<std::uint32_t>(y), 1};
}

// v rounded up to a multiple of 32 (the transposed stagings' rows and
// tokens); 0 from 2^32 − 31 on, which a caller that can see such sizes
// tells by comparing the result with v.
constexpr std::uint32_t round32(std::uint32_t v) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t{v} + 31) / 32 * 32);
}

inline std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// A size argument that must be > 0 and fit the kernels' 32-bit indices.
inline std::uint32_t dim(const char* op, const char* name, std::uint64_t v) {
  require(v > 0, "{}: {} = 0", op, name);
  require(v <= std::numeric_limits<std::uint32_t>::max(), "{}: {} = {} exceeds 32 bits", op, name, v);
  return static_cast<std::uint32_t>(v);
}

// `b` must hold at least `bytes` bytes.
inline void need_bytes(const char* op, const char* what, const Buffer& b, std::uint64_t bytes) {
  require(static_cast<bool>(b), "{}: {} is an empty buffer", op, what);
  require(b.size() >= bytes, "{}: {} holds {} bytes, needs {}", op, what, b.size(), bytes);
}
inline void need_bytes(const char* op, const char* what, const Transient& t, std::uint64_t bytes) {
  require(t.id != 0, "{}: {} is an empty transient", op, what);
  require(t.bytes >= bytes, "{}: {} holds {} bytes, needs {}", op, what, t.bytes, bytes);
}

// Every element count a kernel indexes must stay below 2^32.
inline void elements_fit(const char* op, std::uint64_t n) {
  require(n <= std::numeric_limits<std::uint32_t>::max(), "{}: {} elements exceed 32-bit indexing", op, n);
}

// Binds the 4-byte elements [first, first + count) of `b` to `slot` of `d`
// (checking `b` holds them) and returns `first` relative to the bound range,
// for the kernel's push constants. The range starts at the last offset at or
// before `first` that the device's storage-buffer alignment allows, so a
// block far into a large buffer binds only the bytes the kernel reads (the
// Recorder's hazards are those bytes) and the kernel's 32-bit indices count
// from there: the relative end must stay below 2^32 elements. Views must sit
// at aligned offsets (Buffer::view).
inline std::uint32_t bind_elements(const Context& ctx, Dispatch& d, const char* op, const char* what,
                                   std::uint32_t slot, const Buffer& b, Access access, std::uint64_t first,
                                   std::uint64_t count) {
  require(first <= std::numeric_limits<std::uint64_t>::max() / 4 - count, "{}: {} offset {} is out of range", op,
          what, first);
  const std::uint64_t align = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  const std::uint64_t start = first * 4 / align * align;
  const std::uint64_t relative = first - start / 4;
  require(relative + count <= std::numeric_limits<std::uint32_t>::max(),
          "{}: {} spans {} elements, beyond 32-bit indexing", op, what, relative + count);
  need_bytes(op, what, b, (first + count) * 4);
  d.bind(slot, b, access, start, (first + count) * 4 - start);
  return static_cast<std::uint32_t>(relative);
}

// A dispatch of kernel `id` (constants by id 0, 1, ... in order).
inline Dispatch make_dispatch(Context& ctx, KernelId id, const char* name, std::span<const std::uint32_t> spec = {},
                              const KernelOptions& options = {}) {
  Dispatch d;
  d.kernel = &ContextAccess::impl(ctx).kernel(id, spec, options);
  d.name = name;
  return d;
}

// A dispatch of kernel `id` with constants given by id.
inline Dispatch make_dispatch(Context& ctx, KernelId id, const char* name, std::span<const SpecConstant> spec,
                              const KernelOptions& options = {}) {
  Dispatch d;
  d.kernel = &ContextAccess::impl(ctx).kernel(id, spec, options);
  d.name = name;
  return d;
}

}  // namespace vkblr::detail
