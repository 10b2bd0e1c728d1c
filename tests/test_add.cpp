// add, add_into and copy against the host's f32 arithmetic, bit for bit;
// bad shapes, small buffers and overlapping outputs refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

GPU_TEST("add, add_into and copy give the host's f32 sums and values exactly", "[ops][add]") {
  // 10001 elements: four passes of 2501, the last one element short
  const std::uint32_t n = 10001;
  const auto a = vkt::random_floats(n, 701, 3.0f), b = vkt::random_floats(n, 702, 1e-3f);
  Buffer ba = ctx.upload(a), bb = ctx.upload(b), sum = ctx.buffer(n * 4), copied = ctx.buffer(n * 4);
  sum.fill(vkt::kPoison32);
  copied.fill(vkt::kPoison32);
  Buffer stream = ctx.upload(b);  // add_into: b += a in place
  Recorder rec(ctx);
  rec.add(ops::add(ctx, ba, bb, sum, n));
  rec.add(ops::add_into(ctx, ba, stream, n));
  rec.add(ops::copy(ctx, ba, copied, n));
  rec.run();
  std::vector<float> want(n);
  for (std::uint32_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  CHECK(vkt::count_bit_diffs(sum.download<float>(), want) == 0);
  CHECK(vkt::count_bit_diffs(stream.download<float>(), want) == 0);
  CHECK(vkt::count_bit_diffs(copied.download<float>(), a) == 0);
}

GPU_TEST("add, add_into and copy refuse bad sizes and overlapping outputs", "[ops][add][errors]") {
  Buffer a = ctx.buffer(64 * 4), b = ctx.buffer(64 * 4), out = ctx.buffer(32 * 4);
  CHECK_THROWS_WITH(ops::add(ctx, a, b, out, 0), ContainsSubstring("add: n = 0"));
  CHECK_THROWS_WITH(ops::add(ctx, a, b, out, 64), ContainsSubstring("add: out holds 128 bytes, needs 256"));
  CHECK_THROWS_WITH(ops::add(ctx, a, b, a, 64), ContainsSubstring("add: out overlaps a"));
  CHECK_THROWS_WITH(ops::add_into(ctx, a, a.view(0, 128), 32), ContainsSubstring("add_into: out overlaps a"));
  CHECK_THROWS_WITH(ops::copy(ctx, b, out, 33), ContainsSubstring("copy: out holds 128 bytes, needs 132"));
  // disjoint views of one buffer are fine
  const std::uint64_t align = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  if (align <= 128) CHECK_NOTHROW(ops::copy(ctx, a.view(0, 128), a.view(128, 128), 32));
}
