// SwiGLU forward and backward against the f64 reference, the reference's
// gradient against finite differences, the fused gate|up layout ≡ the
// separate one bit for bit, the same bits run after run, bad shapes refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/llama_ref.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;

namespace {
// gu [tokens][2·inter] from g and u [tokens][inter].
std::vector<float> interleave_rows(const std::vector<float>& g, const std::vector<float>& u, std::uint32_t tokens,
                                   std::uint32_t inter) {
  std::vector<float> gu(2 * g.size());
  for (std::uint32_t t = 0; t < tokens; ++t) {
    for (std::uint32_t c = 0; c < inter; ++c) {
      gu[std::size_t{t} * 2 * inter + c] = g[std::size_t{t} * inter + c];
      gu[std::size_t{t} * 2 * inter + inter + c] = u[std::size_t{t} * inter + c];
    }
  }
  return gu;
}

// Tolerance, in units of each value's magnitude (llama_ref.hpp): exp is
// within 3 + 2|x| ulp (Vulkan; 15 ulp for |g| <= 6) and the division
// within 2.5 ulp, and about five more roundings follow: 30 ulp ≈ 2e-6.
constexpr double kTol = 30 * 0x1p-24;
}  // namespace

GPU_TEST("swiglu forward and backward match the f64 reference; fused layout ≡ separate, bit for bit",
         "[ops][swiglu]") {
  // 37 × 300 = 11100 elements (four passes, a partial last workgroup)
  const std::uint32_t tokens = 37, inter = 300;
  const std::size_t n = std::size_t{tokens} * inter;
  // gates in ±6: both signs, the saturating ends and the cancellation of
  // 1 + g·σ(−g) near g = −1.28
  const auto g = vkt::random_floats(n, 801, 6.0f), u = vkt::random_floats(n, 802, 2.0f),
             dh = vkt::random_floats(n, 803, 1.0f);
  Buffer bg = ctx.upload(g), bu = ctx.upload(u), bdh = ctx.upload(dh), bgu = ctx.upload(interleave_rows(g, u, tokens, inter));
  Buffer h = poisoned(ctx, n), dg = poisoned(ctx, n), du = poisoned(ctx, n);
  Buffer h_fused = poisoned(ctx, n), dgu = poisoned(ctx, 2 * n);
  Recorder rec(ctx);
  rec.add(ops::swiglu_fwd(ctx, bg, bu, h, tokens, inter));
  rec.add(ops::swiglu_bwd(ctx, bg, bu, bdh, dg, du, tokens, inter));
  rec.add(ops::swiglu_fwd_fused(ctx, bgu, h_fused, tokens, inter));
  rec.add(ops::swiglu_bwd_fused(ctx, bgu, bdh, dgu, tokens, inter));
  rec.run();

  const auto g64 = vkt::widen(g), u64 = vkt::widen(u), dh64 = vkt::widen(dh);
  const vkt::RefValues want_h = vkt::swiglu_fwd_ref(g64, u64);
  vkt::RefValues want_dg, want_du;
  vkt::swiglu_bwd_ref(g64, u64, dh64, want_dg, want_du);
  const auto got_h = h.download<float>(), got_dg = dg.download<float>(), got_du = du.download<float>();
  auto check = [](const char* name, const std::vector<float>& got, const vkt::RefValues& want) {
    const vkt::Worst w = vkt::worst_error(got, want, kTol);
    INFO(name << ": worst error " << w.ratio << " of the tolerance at " << w.at);
    CHECK(w.ratio <= 1.0);
  };
  check("h", got_h, want_h);
  check("dg", got_dg, want_dg);
  check("du", got_du, want_du);

  // the fused layout: the same bits
  CHECK(vkt::count_bit_diffs(h_fused.download<float>(), got_h) == 0);
  CHECK(vkt::count_bit_diffs(dgu.download<float>(), interleave_rows(got_dg, got_du, tokens, inter)) == 0);

  // the same bits on a second run
  Buffer h2 = poisoned(ctx, n), dg2 = poisoned(ctx, n), du2 = poisoned(ctx, n);
  rec.add(ops::swiglu_fwd(ctx, bg, bu, h2, tokens, inter));
  rec.add(ops::swiglu_bwd(ctx, bg, bu, bdh, dg2, du2, tokens, inter));
  rec.run();
  CHECK(vkt::count_bit_diffs(h2.download<float>(), got_h) == 0);
  CHECK(vkt::count_bit_diffs(dg2.download<float>(), got_dg) == 0);
  CHECK(vkt::count_bit_diffs(du2.download<float>(), got_du) == 0);
}

GPU_TEST("swiglu's gradient matches finite differences of its forward", "[ops][swiglu]") {
  // The loss L = Σ dh·h; each h depends on its own g and u only, so the
  // central difference of L in g[i] (or u[i]) is that of dh[i]·h[i].
  const std::uint32_t tokens = 4, inter = 96;
  const std::size_t n = std::size_t{tokens} * inter;
  const auto g = vkt::random_floats(n, 811, 8.0f), u = vkt::random_floats(n, 812, 2.0f),
             dh = vkt::random_floats(n, 813, 1.0f);
  Buffer bg = ctx.upload(g), bu = ctx.upload(u), bdh = ctx.upload(dh), dg = poisoned(ctx, n), du = poisoned(ctx, n);
  Recorder rec(ctx);
  rec.add(ops::swiglu_bwd(ctx, bg, bu, bdh, dg, du, tokens, inter));
  rec.run();
  const auto g64 = vkt::widen(g), u64 = vkt::widen(u), dh64 = vkt::widen(dh);
  vkt::RefValues want_dg, want_du;
  vkt::swiglu_bwd_ref(g64, u64, dh64, want_dg, want_du);
  vkt::RefValues fd_dg = want_dg, fd_du = want_du;  // the magnitudes; values from differences
  const double h = 1e-6;
  for (std::size_t i = 0; i < n; ++i) {
    auto loss = [&](double gi, double ui) { return dh64[i] * gi * vkt::sigmoid(gi) * ui; };
    fd_dg.value[i] = (loss(g64[i] + h, u64[i]) - loss(g64[i] - h, u64[i])) / (2 * h);
    fd_du.value[i] = (loss(g64[i], u64[i] + h) - loss(g64[i], u64[i] - h)) / (2 * h);
  }
  // the reference against the differences: truncation h²·f''' and
  // cancellation 1e-16/h, both far below 1e-8 of the magnitude
  std::vector<double> ref_dg = want_dg.value, ref_du = want_du.value;
  CHECK(vkt::worst_error(ref_dg, fd_dg, 1e-8).ratio <= 1.0);
  CHECK(vkt::worst_error(ref_du, fd_du, 1e-8).ratio <= 1.0);
  // the device against the differences, within its own tolerance
  const vkt::Worst wg = vkt::worst_error(dg.download<float>(), fd_dg, kTol);
  const vkt::Worst wu = vkt::worst_error(du.download<float>(), fd_du, kTol);
  INFO("dg: " << wg.ratio << " at " << wg.at << ", du: " << wu.ratio << " at " << wu.at);
  CHECK(wg.ratio <= 1.0);
  CHECK(wu.ratio <= 1.0);
}

GPU_TEST("swiglu refuses bad shapes, small buffers and overlapping outputs", "[ops][swiglu][errors]") {
  const std::uint32_t tokens = 4, inter = 8;
  Buffer g = ctx.buffer(32 * 4), u = ctx.buffer(32 * 4), h = ctx.buffer(32 * 4), gu = ctx.buffer(64 * 4),
         small = ctx.buffer(31 * 4);
  CHECK_THROWS_WITH(ops::swiglu_fwd(ctx, g, u, h, 0, inter), ContainsSubstring("swiglu_fwd: tokens = 0"));
  CHECK_THROWS_WITH(ops::swiglu_fwd(ctx, g, u, h, tokens, 0), ContainsSubstring("swiglu_fwd: inter = 0"));
  CHECK_THROWS_WITH(ops::swiglu_fwd(ctx, g, small, h, tokens, inter),
                    ContainsSubstring("swiglu_fwd: u holds 124 bytes, needs 128"));
  CHECK_THROWS_WITH(ops::swiglu_fwd(ctx, g, u, g, tokens, inter), ContainsSubstring("swiglu_fwd: h overlaps g"));
  CHECK_THROWS_WITH(ops::swiglu_bwd(ctx, g, u, h, u, small, tokens, inter),
                    ContainsSubstring("swiglu_bwd: du holds 124 bytes"));
  CHECK_THROWS_WITH(ops::swiglu_bwd(ctx, g, u, h, gu, gu.view(0, 128), tokens, inter),
                    ContainsSubstring("swiglu_bwd: dg overlaps du"));
  CHECK_THROWS_WITH(ops::swiglu_fwd_fused(ctx, g, h, tokens, inter),
                    ContainsSubstring("swiglu_fwd_fused: gu holds 128 bytes, needs 256"));
  CHECK_THROWS_WITH(ops::swiglu_bwd_fused(ctx, gu, h, gu, tokens, inter),
                    ContainsSubstring("swiglu_bwd_fused: dgu overlaps gu"));
  CHECK_THROWS_WITH(ops::swiglu_fwd(ctx, g, u, h, 65536, 65536), ContainsSubstring("exceed 32-bit indexing"));
}
