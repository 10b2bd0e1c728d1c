#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::detail {
namespace {

constexpr std::string_view kTemporarySuffix = ".XXXXXX";  // mkstemp's six letters or digits

std::filesystem::path directory_of(const std::filesystem::path& target) {
  return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}

// Writes all of [data, data + bytes) to `fd`; false with errno set on an
// error.
bool write_all(int fd, const std::byte* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// A new temporary file beside `path` (mode 0644, fsync'ed) holding what
// `produce` appends; returns its name. Throws naming `path`, or what
// `produce` throws, the temporary removed.
std::string write_temporary(const std::string& path, const std::function<void(const AppendBytes&)>& produce) {
  const std::filesystem::path target(path);
  std::string tmp =
      (directory_of(target) / ("." + target.filename().string() + std::string(kTemporarySuffix))).string();
  const int fd = mkstemp(tmp.data());
  require(fd >= 0, "cannot write {}: {}", path, std::strerror(errno));
  try {
    // a failed write ends the producer there: nothing after it would be kept
    produce([&](std::span<const std::byte> piece) {
      if (!write_all(fd, piece.data(), piece.size())) fail("cannot write {}: {}", path, std::strerror(errno));
    });
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) fail("cannot write {}: {}", path, std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  return tmp;
}

std::string write_temporary(const std::string& path, const void* data, std::size_t bytes) {
  return write_temporary(path, [&](const AppendBytes& append) {
    append(std::span(static_cast<const std::byte*>(data), bytes));
  });
}

void fsync_directory_of(const std::string& path) {
  const int dfd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

bool is_temporary_name(std::string_view name, std::string_view target_name) {
  const std::size_t prefix = 1 + target_name.size() + 1;  // "." name "."
  if (name.size() != prefix + kTemporarySuffix.size() - 1 || name.front() != '.' ||
      name.substr(1, target_name.size()) != target_name || name[prefix - 1] != '.') {
    return false;
  }
  return std::ranges::all_of(name.substr(prefix), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

}  // namespace

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  const std::string tmp = write_temporary(path, data, bytes);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot write {}: {}", path, std::strerror(err));
  }
  fsync_directory_of(path);
}

}  // namespace vkblr::detail

namespace vkblr {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  detail::write_file_atomic(path, data, bytes);
}

void write_files_atomic(std::span<const FileToWrite> files) {
  std::vector<std::string> temporaries;
  const auto remove_temporaries = [&](std::size_t first) {
    for (std::size_t i = first; i < temporaries.size(); ++i) ::unlink(temporaries[i].c_str());
  };
  try {
    for (const FileToWrite& f : files) {
      std::error_code ec;
      require(!std::filesystem::is_directory(f.path, ec), "cannot write {}: it is a directory", f.path);
      temporaries.push_back(f.produce ? detail::write_temporary(f.path, f.produce)
                                      : detail::write_temporary(f.path, f.bytes.data(), f.bytes.size()));
    }
  } catch (...) {
    remove_temporaries(0);
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temporaries[i].c_str(), files[i].path.c_str()) == 0) continue;
    const int err = errno;
    remove_temporaries(i);
    std::string replaced;
    for (std::size_t k = 0; k < i; ++k) replaced += (k ? ", " : "") + files[k].path;
    fail("cannot write {}: {}{}", files[i].path, std::strerror(err),
         i == 0 ? std::string(" (no file of the set was replaced)")
                : " (of the set, these were replaced already: " + replaced + ")");
  }
  for (const FileToWrite& f : files) detail::fsync_directory_of(f.path);
}

std::size_t remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string target_name = target.filename().string();
  if (target_name.empty()) return 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(detail::directory_of(target), ec);
  if (ec) return 0;
  std::size_t removed = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::filesystem::path& candidate = it->path();
    if (!detail::is_temporary_name(candidate.filename().string(), target_name)) continue;
    std::error_code status_ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(candidate, status_ec))) continue;
    if (std::filesystem::remove(candidate, status_ec)) ++removed;
  }
  return removed;
}

}  // namespace vkblr
