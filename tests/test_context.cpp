// The context, its capabilities and buffers.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
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
