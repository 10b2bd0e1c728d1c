// The pipeline cache file (engine/src/pipeline_cache_file.hpp): it only
// saves compile time, so whatever lies at its path — a directory, a FIFO, a
// link to /dev/zero, garbage, another device's cache, an oversized file, a
// directory that cannot be written at the end — a context is made, builds
// and runs kernels, and prints one warning naming the file and the reason.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "support/captured_stderr.hpp"
#include "support/fit_files.hpp"
#include "support/gpu.hpp"
#include "support/scoped_env.hpp"
#include "vkblr/half.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// A context of its own, under validation, whose cache file lives in `dir`.
std::unique_ptr<Context> make_context(const std::string& dir) {
  ContextOptions options;
  options.validation = true;
  options.pipeline_cache_dir = dir;
  return std::make_unique<Context>(options);
}

// The context builds a kernel (through its pipeline cache) and runs it: f32
// values exact in f16 are staged to f16 unchanged. Fails on any validation
// message.
void check_works(Context& c) {
  const std::vector<float> v{1.5f, -2.25f, 0.125f, 1024.0f, -0.5f, 3.0f, 7.75f, -96.0f,
                             0.25f, 5.0f, -1.0f, 2.5f, 6.0f, -8.0f, 0.75f, 12.0f};
  Buffer src = c.upload(v), dst = c.buffer(v.size() * 2);
  Recorder rec(c);
  rec.add(ops::cvt(c, src, dst, 2, 8, 1.0f));
  rec.run();
  const auto h = dst.download<std::uint16_t>();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(f16_to_f32(h[i]) == v[i]);
  vkt::check_validation(c);
}

// Occurrences of `what` in `text`.
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The path of this device's cache file in `dir` and a good cache for it,
// written there by a first context (which has no problem with either).
struct GoodCache {
  std::string path, bytes;
};
GoodCache good_cache(const std::string& dir) {
  GoodCache g;
  {
    auto c = make_context(dir);
    g.path = c->pipeline_cache_file();
    check_works(*c);
    CHECK(c->pipeline_cache_warning().empty());
  }
  REQUIRE(g.path.starts_with(dir + "/pipelines-"));
  g.bytes = vkt::read_raw_file(g.path);
  REQUIRE(g.bytes.size() >= 32);
  return g;
}

// A test's cache directory, holding this device's good cache (good_cache),
// with the cache file switched on (VKBLR_PIPELINE_CACHE unset) meanwhile.
struct CacheDir {
  vkt::ScopedEnv on{"VKBLR_PIPELINE_CACHE", nullptr};
  vkt::TempDir temp;
  std::string dir = temp.file("cache");
  GoodCache good = good_cache(dir);

  // Removes the good cache; returns its path, for the test to put
  // something else there.
  const std::string& clear() const {
    std::filesystem::remove(good.path);
    return good.path;
  }
};

// Makes a context over what the test put at the cache path, checks that it
// works and warned once, on stderr and through pipeline_cache_warning(),
// naming the file and `reason`; returns the warning.
std::string check_warned_once(const std::string& dir, const std::string& path, const std::string& reason) {
  vkt::CapturedStderr err;
  std::string warning;
  {
    auto c = make_context(dir);
    REQUIRE(c->pipeline_cache_file() == path);
    warning = c->pipeline_cache_warning();
    check_works(*c);
  }  // destroyed: the cache is saved, or not
  const std::string text = err.text();
  INFO("stderr: " << text);
  CHECK_THAT(warning, ContainsSubstring(path) && ContainsSubstring(reason));
  CHECK(count(text, "vkblr: warning: " + warning + "\n") == 1);
  CHECK(count(text, "vkblr: warning: ") == 1);
  return warning;
}

// A later context reads the cache at `dir` without a warning: what the
// previous one saved is this device's.
void check_read_clean(const std::string& dir) {
  vkt::CapturedStderr err;
  auto c = make_context(dir);
  CHECK(c->pipeline_cache_warning() == "");
  CHECK(count(err.text(), "vkblr: warning: ") == 0);
}

void put_u32(std::string& bytes, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(v >> (8 * i) & 0xff);
}

}  // namespace

GPU_TEST("a context saves its pipeline cache and the next one reads it without a warning",
         "[context][pipeline_cache]") {
  const CacheDir cache;
  CHECK(std::filesystem::is_regular_file(cache.good.path));
  check_read_clean(cache.dir);
}

GPU_TEST("a pipeline cache path that is a directory is warned about once and left alone",
         "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  std::filesystem::create_directory(cache.clear());
  check_warned_once(cache.dir, cache.good.path, "is a directory");
  CHECK(std::filesystem::is_directory(cache.good.path));
}

GPU_TEST("a pipeline cache path that is a FIFO is never opened", "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  const std::string& fifo = cache.clear();
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // A reader that opened the FIFO would block until a writer comes: this
  // watchdog is that writer (opening for writing succeeds only while
  // someone reads), and closes at once, so that a reader gets end-of-file
  // and the test fails instead of hanging.
  std::atomic<bool> done{false}, opened{false};
  std::thread watchdog([&] {
    while (!done) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        opened = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  check_warned_once(cache.dir, fifo, "is a FIFO");
  done = true;
  watchdog.join();
  CHECK_FALSE(opened);
  CHECK(std::filesystem::is_fifo(fifo));
}

GPU_TEST("a pipeline cache path that links to /dev/zero is not read", "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  std::filesystem::create_symlink("/dev/zero", cache.clear());
  check_warned_once(cache.dir, cache.good.path, "is a character device");
  CHECK(std::filesystem::is_symlink(cache.good.path));  // left as it was
}

GPU_TEST("a pipeline cache path in a symlink loop is warned about", "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  std::filesystem::create_symlink(cache.good.path, cache.clear());
  check_warned_once(cache.dir, cache.good.path, "cannot be read: ");
}

GPU_TEST("a pipeline cache of garbage or of another device is refused, then replaced",
         "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  std::string bytes = cache.good.bytes;
  std::string reason;
  SECTION("garbage") {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 37 + 11);
    put_u32(bytes, 0, 0x9f8e7d6cu);
    reason = "header size of 2676915564";
  }
  SECTION("a few bytes") {
    bytes = "VKBLR";
    reason = "holds 5 bytes, fewer than the 32 of a pipeline cache header";
  }
  SECTION("another header version") {
    put_u32(bytes, 4, 2);
    reason = "header version 2";
  }
  SECTION("another vendor") {
    bytes[8] = static_cast<char>(bytes[8] ^ 0x10);
    reason = "holds a cache of device";
  }
  SECTION("another device") {
    bytes[12] = static_cast<char>(bytes[12] ^ 1);
    reason = "holds a cache of device";
  }
  SECTION("another driver") {
    bytes[16] = static_cast<char>(bytes[16] ^ 1);
    reason = "holds a cache of another driver";
  }
  vkt::write_raw_file(cache.good.path, bytes);
  check_warned_once(cache.dir, cache.good.path, reason);
  // the context saved its own cache over the refused one
  CHECK(vkt::read_raw_file(cache.good.path).substr(0, 32) == cache.good.bytes.substr(0, 32));
  check_read_clean(cache.dir);
}

GPU_TEST("a pipeline cache over 256 MiB is not read", "[context][pipeline_cache][errors]") {
  const CacheDir cache;
  std::filesystem::resize_file(cache.good.path, (std::uintmax_t{256} << 20) + 1);  // sparse: no disk used
  check_warned_once(cache.dir, cache.good.path,
                    "holds 268435457 bytes, more than a pipeline cache's bound of 268435456");
  // replaced by this run's
  CHECK(std::filesystem::file_size(cache.good.path) < (std::uintmax_t{256} << 20));
  check_read_clean(cache.dir);
}

GPU_TEST("a pipeline cache directory that cannot be written at the end is warned about once",
         "[context][pipeline_cache][errors]") {
  vkt::ScopedEnv on("VKBLR_PIPELINE_CACHE", nullptr);
  vkt::TempDir dir;
  const std::string cache_dir = dir.file("cache");
  vkt::CapturedStderr err;
  std::string path;
  {
    auto c = make_context(cache_dir);
    path = c->pipeline_cache_file();
    check_works(*c);
    CHECK(c->pipeline_cache_warning() == "");
    // the directory can no longer take the cache: a directory without write
    // permission, or for root (whom permissions do not stop) a file in its place
    std::filesystem::remove_all(cache_dir);
    if (::geteuid() == 0) {
      vkt::write_raw_file(cache_dir, "not a directory");
    } else {
      std::filesystem::create_directory(cache_dir);
      std::filesystem::permissions(cache_dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    }
  }
  const std::string text = err.text();
  INFO("stderr: " << text);
  CHECK(count(text, "vkblr: warning: pipeline cache " + path + " not saved: ") == 1);
  CHECK(count(text, "vkblr: warning: ") == 1);
  std::filesystem::permissions(cache_dir, std::filesystem::perms::owner_all);  // for TempDir's removal
}
