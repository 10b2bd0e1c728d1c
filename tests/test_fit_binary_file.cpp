// vkblr-fit's input files: only regular files are read (a FIFO is refused
// at once, without waiting for a writer; a device is never read), a file
// that changes size while it is read is refused, and errors of the file
// system (a symlink loop) are vkblr::Errors naming the path.
#include <sys/stat.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>

#include "support/fit_files.hpp"
#include "vkblr/io/binary_file.hpp"
#include "vkblr-fit/io/matrix_source.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("input files: a FIFO is refused at once, not read", "[fit][errors]") {
  vkt::TempDir dir;
  const std::string fifo = dir.file("w.safetensors"), npy_fifo = dir.file("x.npy");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::mkfifo(npy_fifo.c_str(), 0600) == 0);
  // Before, opening blocked until a writer came (the test would hang here).
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(vkt::error_of([&] { InputFile file(fifo); }),
             ContainsSubstring("cannot open " + fifo + ": it is a FIFO, not a regular file"));
  CHECK_THAT(vkt::error_of([&] { SafetensorsReader reader(fifo); }), ContainsSubstring("it is a FIFO"));
  CHECK_THAT(vkt::error_of([&] { read_npy_matrix(npy_fifo); }), ContainsSubstring("it is a FIFO"));
  CHECK_THAT(vkt::error_of([&] { MatrixSource source(fifo, "", "weight"); }), ContainsSubstring("it is a FIFO"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("input files: devices and directories are refused", "[fit][errors]") {
  // /dev/zero would be read until memory ran out.
  CHECK_THAT(vkt::error_of([] { InputFile file("/dev/zero"); }),
             ContainsSubstring("cannot open /dev/zero: it is a character device, not a regular file"));
  CHECK_THAT(vkt::error_of([] { read_npy_matrix("/dev/null"); }), ContainsSubstring("character device"));
  vkt::TempDir dir;
  CHECK_THAT(vkt::error_of([&] { InputFile file(dir.file("")); }), ContainsSubstring("it is a directory"));
  // a link to a regular file is fine
  const std::string target = dir.file("real.npy"), link = dir.file("link.npy");
  vkt::write_raw_file(target, "abc");
  std::filesystem::create_symlink(target, link);
  CHECK(InputFile(link).size() == 3);
  std::filesystem::create_symlink("/dev/zero", dir.file("zero.safetensors"));
  CHECK_THAT(vkt::error_of([&] { SafetensorsReader reader(dir.file("zero.safetensors")); }),
             ContainsSubstring("character device"));
}

TEST_CASE("input files: a symlink loop is an Error naming the path", "[fit][errors]") {
  vkt::TempDir dir;
  const std::string a = dir.file("a.safetensors"), b = dir.file("b.safetensors");
  std::filesystem::create_symlink(b, a);
  std::filesystem::create_symlink(a, b);
  // Before, std::filesystem::exists threw filesystem_error ("unexpected error" to the user).
  CHECK_THAT(vkt::error_of([&] { MatrixSource source(a, "", "weight"); }),
             ContainsSubstring("cannot open " + a) && ContainsSubstring("Too many levels of symbolic links"));
  CHECK_THAT(vkt::error_of([&] { MatrixSource source(dir.file("absent.npy"), "", "activations"); }),
             ContainsSubstring("activations file") && ContainsSubstring("does not exist"));
}

TEST_CASE("input files: a file that changes size while it is read is refused", "[fit][errors]") {
  vkt::TempDir dir;
  const std::string path = dir.file("w.safetensors");
  const std::vector<float> values(64, 1.5f);
  SafetensorsWriter writer;
  writer.add_f32("w", {8, 8}, values);
  writer.write(path);

  SafetensorsReader shrunk(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 16);
  CHECK_THAT(vkt::error_of([&] { shrunk.read_matrix(shrunk.tensor("w")); }),
             ContainsSubstring(path + ": changed while being read"));

  writer.write(path);
  SafetensorsReader grown(path);
  const std::string bytes = vkt::read_raw_file(path);
  vkt::write_raw_file(path, bytes + "more");
  CHECK_THAT(vkt::error_of([&] { grown.read_matrix(grown.tensor("w")); }),
             ContainsSubstring("changed while being read"));

  writer.write(path);  // a new file under the name: the reader keeps the one it opened
  SafetensorsReader replaced(path);
  writer.write(path);
  CHECK(replaced.read_matrix(replaced.tensor("w")).values == values);
}
