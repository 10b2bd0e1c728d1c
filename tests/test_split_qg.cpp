// split_qg / merge_qg against exact host references, and the round trip.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;


GPU_TEST("split_qg splits per-head q and gate exactly; merge_qg round-trips", "[ops]") {
  // m · heads · head_dim = 3570 and 70 · 4 · 64 = 17920: a partial last workgroup or none
  for (const auto& [heads, hd] : {std::pair{3u, 17u}, std::pair{4u, 64u}}) {
    INFO("heads = " << heads << ", head_dim = " << hd);
    const std::uint32_t m = 70, width = heads * hd;
    const auto qg = vkt::random_floats(std::size_t{m} * width * 2, 501 + hd, 5.0f);
    Buffer bqg = ctx.upload(qg);
    Buffer q = poisoned(ctx, m * width), gate = poisoned(ctx, m * width), back = poisoned(ctx, 2 * m * width);
    Recorder rec(ctx);
    rec.add(ops::split_qg(ctx, bqg, q, gate, m, heads, hd));
    rec.add(ops::merge_qg(ctx, q, gate, back, m, heads, hd));
    rec.run();
    std::vector<float> want_q(m * width), want_gate(m * width);
    for (std::uint32_t row = 0; row < m; ++row) {
      for (std::uint32_t h = 0; h < heads; ++h) {
        for (std::uint32_t d = 0; d < hd; ++d) {
          const std::size_t base = (std::size_t{row} * heads + h) * 2 * hd;
          want_q[row * width + h * hd + d] = qg[base + d];
          want_gate[row * width + h * hd + d] = qg[base + hd + d];
        }
      }
    }
    CHECK(vkt::count_bit_diffs(q.download<float>(), want_q) == 0);
    CHECK(vkt::count_bit_diffs(gate.download<float>(), want_gate) == 0);
    CHECK(vkt::count_bit_diffs(back.download<float>(), qg) == 0);
  }
}

GPU_TEST("merge_qg interleaves independent q and gate exactly", "[ops]") {
  const std::uint32_t m = 33, heads = 5, hd = 7, width = heads * hd;
  const auto q = vkt::random_floats(m * width, 511, 1.0f), gate = vkt::random_floats(m * width, 512, 1.0f);
  Buffer bq = ctx.upload(q), bgate = ctx.upload(gate), qg = poisoned(ctx, 2 * m * width);
  Recorder rec(ctx);
  rec.add(ops::merge_qg(ctx, bq, bgate, qg, m, heads, hd));
  rec.run();
  std::vector<float> want(2 * m * width);
  for (std::uint32_t row = 0; row < m; ++row) {
    for (std::uint32_t c = 0; c < width; ++c) {
      const std::uint32_t h = c / hd, d = c % hd;
      want[(row * heads + h) * 2 * hd + d] = q[row * width + c];
      want[(row * heads + h) * 2 * hd + hd + d] = gate[row * width + c];
    }
  }
  CHECK(vkt::count_bit_diffs(qg.download<float>(), want) == 0);
}

GPU_TEST("split_qg and merge_qg refuse bad shapes and small buffers", "[ops][errors]") {
  Buffer qg = ctx.buffer(2 * 8 * 12 * 4), q = ctx.buffer(8 * 12 * 4), gate = ctx.buffer(8 * 12 * 4);
  CHECK_THROWS_WITH(ops::split_qg(ctx, qg, q, gate, 8, 0, 4), ContainsSubstring("split_qg: heads = 0"));
  CHECK_THROWS_WITH(ops::split_qg(ctx, qg, q, gate, 8, 3, 5),
                    ContainsSubstring("split_qg") && ContainsSubstring("qg holds 768 bytes"));
  Buffer qg9 = ctx.buffer(2 * 9 * 12 * 4);
  CHECK_THROWS_WITH(ops::merge_qg(ctx, q, gate, qg9, 9, 3, 4),
                    ContainsSubstring("merge_qg") && ContainsSubstring("q holds 384 bytes"));
  CHECK_THROWS_WITH(ops::merge_qg(ctx, q, q, qg, 8, 3, 4),
                    ContainsSubstring("merge_qg") && ContainsSubstring("different"));
}
