// pipeline_cache_file.hpp — the pipeline cache file on disk: reading it with
// its header checked, and writing it atomically.
//
// The file only saves compile time, so nothing here throws: every problem
// comes back as a reason (a phrase such as "is a directory" or "holds a
// cache of device 0x10de:0x2335, not this one's 0x10005:0x0000") and the
// caller runs without the file. Reading never blocks and never reads more
// than kMaxPipelineCacheBytes: only a regular file is opened (checked
// before opening and again on the open descriptor, which is opened with
// O_NONBLOCK), so a FIFO, a device (/dev/zero), a directory or a socket
// there is refused unread.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkblr::detail {

// Larger files are refused unread (vkblr's kernels make a few MiB).
inline constexpr std::uint64_t kMaxPipelineCacheBytes = std::uint64_t{256} << 20;

// What the VkPipelineCacheHeaderVersionOne of a cache must name: this
// device's VkPhysicalDeviceProperties vendorID, deviceID, pipelineCacheUUID.
struct PipelineCacheIdentity {
  std::uint32_t vendor_id = 0, device_id = 0;
  std::array<std::uint8_t, 16> uuid{};
};

struct PipelineCacheRead {
  std::vector<char> data;  // the whole file, header checked; empty when absent or refused
  std::string problem;     // why the file was refused; empty when read or absent
};

// Reads the cache at `path`. An absent file is no problem (a first run).
PipelineCacheRead read_pipeline_cache(const std::string& path, const PipelineCacheIdentity& device);

// Why `data` is not a cache of `device` (too short, header size or
// version, vendor/device, UUID); empty when its header is this device's.
std::string pipeline_cache_header_problem(std::span<const char> data, const PipelineCacheIdentity& device);

// Writes `data` to `path` atomically (vkblr::write_file_atomic), creating
// its directory; an existing path that is not a regular file is left alone.
// Returns why it was not written; empty on success.
std::string write_pipeline_cache(const std::string& path, std::span<const char> data);

}  // namespace vkblr::detail
