#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::detail {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(tmp.data());
  require(fd >= 0, "cannot write {}: {}", path, std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  std::size_t left = bytes;
  bool ok = true;
  while (left > 0 && ok) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) {
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  const int saved = errno;
  ok = ok && ::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    ::unlink(tmp.c_str());
    fail("cannot write {}: {}", path, std::strerror(err));
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace vkblr::detail

namespace vkblr {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  detail::write_file_atomic(path, data, bytes);
}

}  // namespace vkblr
