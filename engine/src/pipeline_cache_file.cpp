#include "pipeline_cache_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <format>
#include <system_error>

#include "file_io.hpp"
#include "vk.hpp"

namespace vkblr::detail {
namespace {

static_assert(sizeof(VkPipelineCacheHeaderVersionOne) == 32);

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The header's fields are little-endian whatever the host (Vulkan spec).
std::uint32_t le32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

std::string hex(std::span<const std::uint8_t> bytes) {
  std::string s;
  for (const std::uint8_t b : bytes) s += std::format("{:02x}", b);
  return s;
}

// Closes a descriptor when the read ends, however it ends.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads at most `limit` bytes of an open regular file; sets `problem` on a
// read error or a file longer than `limit`.
std::vector<char> read_at_most(int fd, std::uint64_t limit, std::string& problem) {
  std::vector<char> data(limit);
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problem = std::format("cannot be read: {}", std::strerror(errno));
      return {};
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  char extra = 0;
  ssize_t n = 0;
  do {
    n = ::read(fd, &extra, 1);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    problem = std::format("grew past {} bytes while being read", limit);
    return {};
  }
  return data;
}

}  // namespace

PipelineCacheRead read_pipeline_cache(const std::string& path, const PipelineCacheIdentity& device) {
  PipelineCacheRead r;
  // the type first, so that nothing but a regular file is ever opened
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) r.problem = std::format("cannot be read: {}", std::strerror(errno));
    return r;  // absent: a first run
  }
  if (!S_ISREG(st.st_mode)) {
    r.problem = std::format("is {}, not a regular file", file_kind(st.st_mode));
    return r;
  }
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (file.fd < 0) {
    r.problem = std::format("cannot be opened: {}", std::strerror(errno));
    return r;
  }
  // again on what was opened: the path may have changed since the stat
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    r.problem = "changed into something other than a regular file while being opened";
    return r;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxPipelineCacheBytes) {
    r.problem = std::format("holds {} bytes, more than a pipeline cache's bound of {} bytes", size,
                            kMaxPipelineCacheBytes);
    return r;
  }
  std::vector<char> data = read_at_most(file.fd, std::min(size, kMaxPipelineCacheBytes), r.problem);
  if (!r.problem.empty()) return r;
  r.problem = pipeline_cache_header_problem(data, device);
  if (r.problem.empty()) r.data = std::move(data);
  return r;
}

std::string pipeline_cache_header_problem(std::span<const char> data, const PipelineCacheIdentity& device) {
  if (data.size() < sizeof(VkPipelineCacheHeaderVersionOne)) {
    return std::format("holds {} bytes, fewer than the {} of a pipeline cache header", data.size(),
                       sizeof(VkPipelineCacheHeaderVersionOne));
  }
  const std::uint32_t header_size = le32(data.data());
  const std::uint32_t version = le32(data.data() + 4);
  const std::uint32_t vendor = le32(data.data() + 8);
  const std::uint32_t id = le32(data.data() + 12);
  const auto* uuid = reinterpret_cast<const std::uint8_t*>(data.data() + 16);
  if (header_size < sizeof(VkPipelineCacheHeaderVersionOne) || header_size > data.size()) {
    return std::format("has a header size of {} (expected {} to the file's {} bytes): damaged, or not a pipeline "
                       "cache",
                       header_size, sizeof(VkPipelineCacheHeaderVersionOne), data.size());
  }
  if (version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
    return std::format("has header version {} (expected {}): damaged, or not a pipeline cache", version,
                       static_cast<std::uint32_t>(VK_PIPELINE_CACHE_HEADER_VERSION_ONE));
  }
  if (vendor != device.vendor_id || id != device.device_id) {
    return std::format("holds a cache of device {:#06x}:{:#06x}, not of this device ({:#06x}:{:#06x})", vendor, id,
                       device.vendor_id, device.device_id);
  }
  if (!std::equal(device.uuid.begin(), device.uuid.end(), uuid)) {
    return std::format("holds a cache of another driver (pipelineCacheUUID {}, this driver's {})",
                       hex({uuid, device.uuid.size()}), hex(device.uuid));
  }
  return {};
}

std::string write_pipeline_cache(const std::string& path, std::span<const char> data) {
  if (data.size() > kMaxPipelineCacheBytes) {
    return std::format("the driver's cache holds {} bytes, more than the bound of {} bytes a later run reads",
                       data.size(), kMaxPipelineCacheBytes);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return std::format("is {}, not a regular file (left as it is)", file_kind(st.st_mode));
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return std::format("cannot make its directory {}: {}", dir.string(), ec.message());
  try {
    write_file_atomic(path, data.data(), data.size());
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace vkblr::detail
