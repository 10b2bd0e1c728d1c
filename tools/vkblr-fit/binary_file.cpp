#include "vkblr-fit/binary_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "vkblr/error.hpp"

namespace vkblr::fit {

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  require(!std::filesystem::is_directory(path_, ec), "cannot open {}: it is a directory", path_);
  errno = 0;
  stream_.open(path_, std::ios::binary);
  require(stream_.is_open(), "cannot open {}: {}", path_, errno != 0 ? std::strerror(errno) : "unknown error");
  stream_.seekg(0, std::ios::end);
  const std::streamoff end = stream_.tellg();
  require(end >= 0, "cannot read {}: its size is unknown", path_);
  size_ = static_cast<std::uint64_t>(end);
}

void InputFile::read_at(std::uint64_t offset, std::span<std::byte> out, std::string_view what) {
  require(offset <= size_ && out.size() <= size_ - offset,
          "{}: truncated: {} needs bytes [{}, {}) but the file has {} bytes", path_, what, offset,
          offset + out.size(), size_);
  stream_.clear();
  stream_.seekg(static_cast<std::streamoff>(offset));
  stream_.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  require(static_cast<std::size_t>(stream_.gcount()) == out.size(), "{}: read error in {} (bytes [{}, {}))", path_,
          what, offset, offset + out.size());
}

}  // namespace vkblr::fit
