// memory_need.hpp — what a benchmark case will allocate, estimated before
// it allocates anything, and the check that it fits: a case too large for
// the device (or the host) fails with a message naming it and the bytes,
// instead of climbing through gigabytes to an allocation failure.
//
// Estimates are sums of the buffers each benchmark makes (its *_memory
// function sits beside the code that allocates), in double: sizes of
// 32-bit dimensions multiplied together overflow 64-bit integers.
#pragma once

#include <string>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

namespace bench {

struct MemoryNeed {
  double device_bytes = 0;    // device buffers (the staging buffer included)
  double largest_buffer = 0;  // the largest single device buffer
  double host_bytes = 0;      // host copies: random inputs, references, downloads
};

// The share of Caps::device_local_bytes, and of the host's physical memory,
// a case may use (the rest: the driver, the context's scratch, other
// processes).
inline constexpr double kUsableShare = 0.9;

// Throws vkblr::Error ("{what} needs ...") when `need` exceeds
// kUsableShare of the device's local memory or of the host's physical
// memory (with the device's bytes on a CPU device), or its largest buffer
// exceeds Caps::max_storage_buffer_range.
void require_fits(const vkblr::Caps& caps, const MemoryNeed& need, const std::string& what);

// "12.5 GiB (13421772800 bytes)".
std::string format_bytes(double bytes);

}  // namespace bench
