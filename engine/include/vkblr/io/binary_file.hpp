// vkblr/io/binary_file.hpp — reading byte ranges of a file, with errors that name it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vkblr::io {

// An open regular file for reading at offsets. Only regular files are
// opened (a symlink to one is fine): a FIFO, device, socket or directory is
// refused before any read, so a pipe cannot block and /dev/zero cannot be
// read forever, and a FIFO is opened non-blocking (no writer needed) to be
// refused. Throws vkblr::Error naming the path:
//   "cannot open PATH: No such file or directory" (and every other error of
//     the system, a symlink loop included);
//   "cannot open PATH: it is a directory" / "...: it is a FIFO, not a regular
//     file" (and the other kinds);
//   "PATH: truncated: ..." when a read ends past the size it had at open;
//   "PATH: changed while being read: ..." when its size is no longer that.
// Closes the file when it goes.
class InputFile {
 public:
  explicit InputFile(std::string path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }  // at open

  // Fills `out` with the bytes [offset, offset + out.size()); `what` names
  // them in the error ("the header", "tensor 'w'").
  void read_at(std::uint64_t offset, std::span<std::byte> out, std::string_view what);

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of the regular file `path` (InputFile's errors). `what` names
// it in the error when it holds more than `limit` bytes ("manifest": "manifest PATH:
// 20000000 bytes, more than a manifest may have (16777216)").
std::string read_whole_file(const std::string& path, std::uint64_t limit, std::string_view what);

}  // namespace vkblr::io
