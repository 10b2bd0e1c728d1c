// The context, its capabilities and buffers.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;

GPU_TEST("context reports its device", "[context]") {
  const Caps& c = ctx.caps();
  INFO(c.device_name << " " << c.driver_name << " " << c.api_version_string);
  CHECK(!c.device_name.empty());
  CHECK(c.api_version >= (1u << 22 | 3u << 12));
  CHECK(c.subgroup_size >= 1);
  CHECK(c.max_shared_memory >= 16384);
  CHECK(c.max_workgroup_count[0] >= 65535);
  if (c.coopmat) {
    const auto frag = c.f16_fragment();
    REQUIRE(frag.has_value());
    CHECK(frag->m >= 8);
  }
  // lavapipe from Mesa >= 26 (the CI device) exposes 8×8×8 f16 -> f32 fragments
  if (c.driver_name == "llvmpipe") {
    REQUIRE(c.coopmat);
    CHECK(c.f16_fragment()->m == 8);
    CHECK(c.f16_fragment()->n == 8);
    CHECK(c.f16_fragment()->k == 8);
  }
}

GPU_TEST("buffers round-trip and fill", "[context]") {
  const std::size_t n = 100003;  // not a multiple of anything
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), 7u);
  Buffer b = ctx.upload(v, "roundtrip");
  CHECK(b.size() == n * 4);
  CHECK(b.download<std::uint32_t>() == v);
  CHECK(b.download<std::uint32_t>(10, 5) == std::vector<std::uint32_t>(v.begin() + 5, v.begin() + 15));
  b.fill(0xabcdef01u, 400, 800);
  const auto f = b.download<std::uint32_t>();
  for (std::size_t i = 0; i < n; ++i) {
    const bool filled = i >= 100 && i < 300;
    if (f[i] != (filled ? 0xabcdef01u : v[i])) FAIL("element " << i);
  }
  Buffer moved = std::move(b);
  CHECK(!b);
  CHECK(moved.size() == n * 4);
}

GPU_TEST("host buffers are mapped", "[context]") {
  Buffer h = ctx.host_buffer(256);
  REQUIRE(h.mapped() != nullptr);
  std::vector<float> v{1.5f, -2.0f, 3.25f};
  h.upload(v);
  CHECK(h.download<float>(3) == v);
}

// Context::import_host_memory: what the device writes lands in the
// caller's memory, and only inside the imported range; what the host writes
// there the device reads; a bad pointer or size is refused, naming the op.
GPU_TEST("imported host memory is the buffer's memory", "[context]") {
  const Caps& c = ctx.caps();
  if (c.driver_name == "llvmpipe") REQUIRE(c.host_memory_import);  // the CI device runs this test
  if (!c.host_memory_import) SKIP("no VK_EXT_external_memory_host on " << c.device_name);
  const std::size_t align = c.host_import_alignment, words = 2 * align / 4;
  REQUIRE(align % 4 == 0);
  std::unique_ptr<std::uint32_t, decltype(&std::free)> memory(
      static_cast<std::uint32_t*>(std::aligned_alloc(align, 3 * align)), &std::free);
  REQUIRE(memory != nullptr);
  std::uint32_t* const host = memory.get();
  const std::uint32_t poison = 0xdeadbeefu;
  std::fill(host, host + 3 * align / 4, poison);
  {
    Buffer imported = ctx.import_host_memory(host, 2 * align, "imported");
    CHECK(imported.mapped() == host);
    CHECK(imported.size() == 2 * align);
    // device -> host: a copy into the middle of the range, a fill at its end
    const std::vector<std::uint32_t> values = vkt::random_words(words / 2, 31);
    const Buffer source = ctx.upload(values);
    Recorder rec(ctx);
    rec.copy(source, imported, values.size() * 4, 0, align / 2);
    rec.fill(imported.view(align * 3 / 2), 0x01020304u);
    rec.run();
    for (std::size_t i = 0; i < 3 * align / 4; ++i) {
      // words [align/8, 3·align/8): the copy; [3·align/8, words): the fill
      const std::uint32_t want = i < align / 8         ? poison
                                 : i < 3 * align / 8   ? values[i - align / 8]
                                 : i < words           ? 0x01020304u
                                                       : poison;
      if (host[i] != want) FAIL("word " << i << ": " << host[i] << ", expected " << want);
    }
    // host -> device
    const std::vector<std::uint32_t> from_host = vkt::random_words(words, 32);
    std::copy(from_host.begin(), from_host.end(), host);
    Buffer back = ctx.buffer(2 * align);
    Recorder rec2(ctx);
    rec2.copy(imported, back);
    rec2.run();
    CHECK(back.download<std::uint32_t>() == from_host);
  }
  CHECK(host[words] == poison);  // past the range: never touched
  using Catch::Matchers::ContainsSubstring;
  CHECK_THROWS_WITH(ctx.import_host_memory(host + 1, align), ContainsSubstring("import_host_memory"));
  CHECK_THROWS_WITH(ctx.import_host_memory(host, align + 4), ContainsSubstring("multiples of"));
  CHECK_THROWS_WITH(ctx.import_host_memory(host, 0), ContainsSubstring("import_host_memory"));
  CHECK_THROWS_WITH(ctx.import_host_memory(nullptr, align), ContainsSubstring("import_host_memory"));
}

GPU_TEST("buffer transfers outside the buffer are refused", "[context][errors]") {
  Buffer b = ctx.buffer(64);
  std::vector<std::uint8_t> big(65);
  CHECK_THROWS_AS(b.write(big.data(), big.size()), Error);
  CHECK_THROWS_AS(b.read(big.data(), 8, 60), Error);
  CHECK_THROWS_AS(b.fill(0, 2, 4), Error);
  CHECK_THROWS_AS(ctx.buffer(0), Error);
}

// volk's function pointers are process-wide, and every instance made loads
// them again: one without validation (a second context, list_devices) nulls
// VK_EXT_debug_utils's commands. A context with validation must still
// destroy its messenger when it goes, here after another context was made,
// a record on it failed with an Error, and list_devices ran. (The crash this
// guards against was a call through a null pointer in the context's
// destructor: the test process dies at `first.reset()`.)
GPU_TEST("a context with validation is destroyed cleanly after other instances and a thrown Error",
         "[context][errors]") {
  auto first = std::make_unique<Context>(vkt::shared_options());
  {
    Context plain;  // no validation: its instance lacks VK_EXT_debug_utils
    const Buffer small = plain.buffer(64);
    Recorder rec(plain);
    rec.fill(small, 0);
    CHECK_THROWS_WITH(rec.add(ops::f16_to_f32(plain, small, small, 1024)),
                      Catch::Matchers::ContainsSubstring("f16_to_f32"));
  }
  CHECK_FALSE(list_devices().empty());
  {
    Buffer b = first->upload(std::vector<float>{1.5f, -2.0f});  // the first context still works
    CHECK(b.download<float>() == std::vector<float>{1.5f, -2.0f});
  }
  vkt::check_validation(*first);
  first.reset();
}
