// binary_file.hpp — reading byte ranges of a file, with errors that name it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

namespace vkblr::fit {

// An open file for reading at offsets. Throws vkblr::Error naming the path:
// "cannot open PATH: No such file or directory" when it cannot be opened (or
// is a directory); "PATH: truncated: ..." when a read ends past its size.
class InputFile {
 public:
  explicit InputFile(std::string path);

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  // Fills `out` with the bytes [offset, offset + out.size()); `what` names
  // them in the error ("the header", "tensor 'w'").
  void read_at(std::uint64_t offset, std::span<std::byte> out, std::string_view what);

 private:
  std::string path_;
  std::ifstream stream_;
  std::uint64_t size_ = 0;
};

}  // namespace vkblr::fit
