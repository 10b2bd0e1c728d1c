#include "vkblr/io/binary_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "vkblr/error.hpp"

namespace vkblr::io {
namespace {

// What a file that is not regular is, for the message.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

void require_regular(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) fail("cannot open {}: it is a directory", path);
  require(S_ISREG(st.st_mode), "cannot open {}: it is {}, not a regular file", path, kind_of(st.st_mode));
}

}  // namespace

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  // stat first, so that a device is never opened (opening some has effects);
  // fstat after, for the file actually opened.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) fail("cannot open {}: {}", path_, std::strerror(errno));
  require_regular(path_, st);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0) fail("cannot open {}: {}", path_, std::strerror(errno));
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(std::exchange(fd_, -1));
    fail("cannot read {}: {}", path_, std::strerror(error));
  }
  try {
    require_regular(path_, st);
  } catch (...) {
    ::close(std::exchange(fd_, -1));
    throw;
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(std::uint64_t offset, std::span<std::byte> out, std::string_view what) {
  require(offset <= size_ && out.size() <= size_ - offset,
          "{}: truncated: {} needs bytes [{}, {}) but the file has {} bytes", path_, what, offset, offset + out.size(),
          size_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail("cannot read {}: {}", path_, std::strerror(errno));
  require(static_cast<std::uint64_t>(st.st_size) == size_,
          "{}: changed while being read: it had {} bytes, now {} (another program writing it?)", path_, size_,
          static_cast<std::uint64_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("{}: read error in {} (bytes [{}, {})): {}", path_, what, offset, offset + out.size(), std::strerror(errno));
    }
    require(got > 0, "{}: changed while being read: it ended at byte {} while {} was read", path_, offset + done, what);
    done += static_cast<std::size_t>(got);
  }
}

std::string read_whole_file(const std::string& path, std::uint64_t limit, std::string_view what) {
  InputFile file(path);
  require(file.size() <= limit, "{} {}: {} bytes, more than a {} may have ({})", what, path, file.size(), what, limit);
  std::string bytes(file.size(), '\0');
  file.read_at(0, std::as_writable_bytes(std::span(bytes)), "the file");
  return bytes;
}

}  // namespace vkblr::io
