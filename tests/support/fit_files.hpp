// fit_files.hpp — helpers of the vkblr-fit host tests: a scratch directory,
// raw file writes for hand-made (and broken) inputs, and the message of an
// expected vkblr::Error.
#pragma once

#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/error.hpp"

namespace vkt {

// A fresh directory under the system's temporary directory, removed with
// its contents when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "vkblr-fit-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return path_.string(); }
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  // Names of the entries in the directory (to see leftover temporary files).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void write_raw_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_raw_file(const std::string& path) {
  std::string bytes(std::filesystem::file_size(path), '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(in.good());
  return bytes;
}

// Little-endian bytes of an unsigned integer.
template <class T>
std::string le_bytes(T value) {
  std::string s(sizeof(T), '\0');
  for (std::size_t i = 0; i < sizeof(T); ++i) s[i] = static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff);
  return s;
}

// A .npy file as numpy.save writes it: magic, version `major`.0, header
// length (u16 for 1.0, u32 otherwise), the dict padded with spaces and a
// newline to a multiple of 64 bytes, the data.
inline std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += major == 1 ? le_bytes<std::uint16_t>(static_cast<std::uint16_t>(header.size()))
                    : le_bytes<std::uint32_t>(static_cast<std::uint32_t>(header.size()));
  return out + header + data;
}

// The message of the vkblr::Error that `f` throws; fails the test when it
// throws nothing or something else.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const vkblr::Error& e) {
    return e.what();
  }
  FAIL("expected a vkblr::Error");
  return {};
}

}  // namespace vkt
