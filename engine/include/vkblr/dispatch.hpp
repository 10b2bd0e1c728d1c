// vkblr/dispatch.hpp — one compute dispatch, as op builders return it.
//
// A Dispatch is a kernel (pipeline), its push constants, its buffer
// bindings each declared read, write or read-write, a grid of workgroups
// and a name for the profiler. It holds no Vulkan objects of its own and
// costs no allocation: bindings go through push descriptors when the
// Recorder records it. The declared accesses drive the Recorder's barriers,
// so they must be true; kernel creation checks them against the shader
// (a binding the shader writes may not be declared read).
//
// A binding may name a Transient instead of a buffer: memory that an op
// needs only while its own dispatches run (a split-K workspace, the partial
// sums of a reduction). The Recorder provides it when it records the op's
// Ops, and gives the same memory to later ops once it has proved this use
// finished (vkblr/recorder.hpp, "Transients").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/error.hpp"

namespace vkblr {

namespace detail {
class Kernel;
}

enum class Access : std::uint8_t { read = 1, write = 2, read_write = 3 };

constexpr bool writes(Access a) noexcept { return (static_cast<unsigned>(a) & 2u) != 0; }
constexpr bool reads(Access a) noexcept { return (static_cast<unsigned>(a) & 1u) != 0; }

// Scratch memory of one op, named by its builder and bound in the op's
// dispatches like a buffer; the Recorder provides `bytes` bytes (contents
// undefined) for as long as the op's Ops are being recorded. Only the Ops
// that made it may bind it: the same id in two ops recorded apart names two
// unrelated buffers.
struct Transient {
  std::uint64_t id = 0;  // unique in the process; 0 = none
  std::uint64_t bytes = 0;
};

// A new Transient of `bytes` > 0 bytes (Error otherwise).
Transient make_transient(std::uint64_t bytes);

// A buffer range bound to one binding slot of a kernel.
struct Binding {
  std::uint32_t slot = 0;
  Access access = Access::read;
  std::uint64_t buffer = 0;  // VkBuffer (0 while a transient is not provided yet)
  std::uint64_t buffer_id = 0;
  std::uint64_t offset = 0;  // in the underlying allocation (a view's offset included)
  std::uint64_t size = 0;    // bytes from offset
  std::uint64_t transient = 0;  // nonzero: the Transient::id this binding names
};

inline constexpr std::size_t kMaxBindings = 16;
inline constexpr std::size_t kMaxPushBytes = 128;

struct Dispatch {
  const detail::Kernel* kernel = nullptr;
  const char* name = "";  // static string: profiler label
  std::array<std::uint32_t, 3> groups{1, 1, 1};
  std::array<std::byte, kMaxPushBytes> push{};
  std::uint32_t push_size = 0;
  std::array<Binding, kMaxBindings> bindings{};
  std::uint32_t binding_count = 0;

  template <class P>
  Dispatch& set_push(const P& p) {
    static_assert(std::is_trivially_copyable_v<P> && sizeof(P) <= kMaxPushBytes);
    std::memcpy(push.data(), &p, sizeof(P));
    push_size = sizeof(P);
    return *this;
  }

  // Binds [offset, offset + size) of `b` (whole rest by default) to `slot`.
  Dispatch& bind(std::uint32_t slot, const Buffer& b, Access access, std::uint64_t offset = 0,
                 std::uint64_t size = kWholeBuffer) {
    require(static_cast<bool>(b), "{}: binding {} is an empty buffer", name, slot);
    require(offset < b.size(), "{}: binding {} offset {} past the buffer's {} bytes", name, slot, offset, b.size());
    require(binding_count < kMaxBindings, "{}: more than {} bindings", name, kMaxBindings);
    if (size == kWholeBuffer) size = b.size() - offset;
    require(offset + size <= b.size(), "{}: binding {} range {}+{} past the buffer's {} bytes", name, slot, offset,
            size, b.size());
    bindings[binding_count++] = Binding{slot, access, b.vk_handle(), b.id(), b.offset() + offset, size, 0};
    return *this;
  }

  // Binds [offset, offset + size) of a transient (whole rest by default).
  Dispatch& bind(std::uint32_t slot, const Transient& t, Access access, std::uint64_t offset = 0,
                 std::uint64_t size = kWholeBuffer) {
    require(t.id != 0, "{}: binding {} is an empty transient", name, slot);
    require(offset < t.bytes, "{}: binding {} offset {} past the transient's {} bytes", name, slot, offset, t.bytes);
    require(binding_count < kMaxBindings, "{}: more than {} bindings", name, kMaxBindings);
    if (size == kWholeBuffer) size = t.bytes - offset;
    require(offset + size <= t.bytes, "{}: binding {} range {}+{} past the transient's {} bytes", name, slot, offset,
            size, t.bytes);
    bindings[binding_count++] = Binding{slot, access, 0, 0, offset, size, t.id};
    return *this;
  }
};

// Some ops are several dispatches (a two-pass reduction, a GEMM with a
// split-K reduction); builders then return Ops, recorded in order and
// together (the lifetime of the op's transients).
using Ops = std::vector<Dispatch>;

}  // namespace vkblr
