// Staging ops: cvt, cvt_col, cvt_cols, cvt_multi, cvt_t against the host,
// and the seed's bit-exact equivalences (cvt_t ≡ cvt transposed, cvt_multi ≡
// separate cvt_col).
#include <catch2/catch_test_macros.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using vkt::poisoned16;

namespace {

std::vector<std::uint16_t> halves(const Buffer& b, std::size_t n) { return b.download<std::uint16_t>(n); }

// f16 of the f32 product, as the kernel computes it (f32 arithmetic, left to right).
std::uint16_t staged(float x, float col, float scale) { return f32_to_f16(x * col * scale); }

}  // namespace

GPU_TEST("cvt_col stages f32 as f16 with a column factor, padded rows zero", "[ops]") {
  const std::uint32_t m = 70, k = 200, rows = 96;
  const float scale = 1024.0f;
  const auto x = vkt::random_floats(m * k, 1, 3.0f);
  const auto col = vkt::random_floats(k, 2, 2.0f);
  Buffer bx = ctx.upload(x), bcol = ctx.upload(col);
  Buffer dst = poisoned16(ctx, rows * k);
  Recorder rec(ctx);
  rec.add(ops::cvt_col(ctx, bx, bcol, dst, m, k, scale, rows));
  rec.run();
  const auto got = halves(dst, rows * k);
  std::size_t worst = 0, bad = 0;
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t c = 0; c < k; ++c) {
      const std::uint16_t want = r < m ? staged(x[r * k + c], col[c], scale) : 0;
      const int d = vkt::f16_ulps(got[r * k + c], want);
      worst = std::max<std::size_t>(worst, static_cast<std::size_t>(d));
      bad += d != 0;
    }
  }
  INFO(bad << " of " << rows * k << " differ from round-to-nearest-even, worst " << worst << " ulp");
  CHECK(worst == 0);
}

GPU_TEST("cvt and cvt_cols match the host", "[ops]") {
  const std::uint32_t m = 33, k = 48, stride = 130, col0 = 17;
  const auto x = vkt::random_floats(m * stride, 3, 100.0f);
  Buffer bx = ctx.upload(x);
  Buffer a = poisoned16(ctx, (m + 3) * k), b = poisoned16(ctx, m * k);
  Recorder rec(ctx);
  rec.add(ops::cvt(ctx, bx, a, m, k, 0.25f, m + 3));
  rec.add(ops::cvt_cols(ctx, bx, b, m, k, stride, col0, 0.5f));
  rec.run();
  const auto ga = halves(a, (m + 3) * k), gb = halves(b, m * k);
  std::size_t bad = 0;
  for (std::uint32_t r = 0; r < m + 3; ++r) {
    for (std::uint32_t c = 0; c < k; ++c) {
      const std::uint16_t wa = r < m ? f32_to_f16(x[r * k + c] * 0.25f) : 0;
      bad += ga[r * k + c] != wa;
      if (r < m) bad += gb[r * k + c] != f32_to_f16(x[r * stride + col0 + c] * 0.5f);
    }
  }
  CHECK(bad == 0);
}

GPU_TEST("cvt_multi equals separate cvt_col bit for bit", "[ops]") {
  const std::uint32_t m = 45, k = 136;
  const auto x = vkt::random_floats(m * k, 4, 5.0f);
  Buffer bx = ctx.upload(x);
  std::vector<Buffer> cols, fused, separate;
  for (int j = 0; j < 4; ++j) {
    cols.push_back(ctx.upload(vkt::random_floats(k, 10 + j, 3.0f)));
    fused.push_back(poisoned16(ctx, 64 * k));
    separate.push_back(poisoned16(ctx, 64 * k));
  }
  for (std::size_t n = 1; n <= 4; ++n) {
    std::vector<const Buffer*> cp, dp;
    Recorder rec(ctx);
    for (std::size_t j = 0; j < n; ++j) {
      cp.push_back(&cols[j]);
      dp.push_back(&fused[j]);
      rec.add(ops::cvt_col(ctx, bx, cols[j], separate[j], m, k, 8.0f, 64));
    }
    rec.add(ops::cvt_multi(ctx, bx, cp, dp, m, k, 8.0f, 64));
    rec.run();
    for (std::size_t j = 0; j < n; ++j) {
      INFO("outputs " << n << ", output " << j);
      CHECK(vkt::count_bit_diffs(halves(fused[j], 64 * k), halves(separate[j], 64 * k)) == 0);
    }
  }
}

GPU_TEST("cvt_t is cvt transposed bit for bit, padding zero", "[ops]") {
  const std::uint32_t ntok = 70, k = 200, tok_rows = 96, k_rows = 224;
  const auto x = vkt::random_floats(ntok * k, 5, 3.0f);
  Buffer bx = ctx.upload(x), bcol = ctx.upload(vkt::random_floats(k, 6, 2.0f));
  for (const bool with_col : {true, false}) {
    const float scale = with_col ? 1024.0f : 0.5f;
    Buffer a = poisoned16(ctx, ntok * k), t = poisoned16(ctx, k_rows * tok_rows);
    Recorder rec(ctx);
    rec.add(with_col ? ops::cvt_col(ctx, bx, bcol, a, ntok, k, scale) : ops::cvt(ctx, bx, a, ntok, k, scale));
    rec.add(ops::cvt_t(ctx, bx, with_col ? &bcol : nullptr, t, ntok, k, scale, k_rows, tok_rows));
    rec.run();
    const auto av = halves(a, ntok * k), tv = halves(t, k_rows * tok_rows);
    std::size_t bad = 0;
    for (std::uint32_t r = 0; r < k_rows; ++r) {
      for (std::uint32_t tok = 0; tok < tok_rows; ++tok) {
        const std::uint16_t want = r < k && tok < ntok ? av[tok * k + r] : 0;
        bad += tv[r * tok_rows + tok] != want;
      }
    }
    INFO("column factor " << with_col);
    CHECK(bad == 0);
  }
}

GPU_TEST("cvt_t_rows writes cvt_t's and cvt's stagings bit for bit", "[ops]") {
  const std::uint32_t ntok = 70, k = 200, tok_rows = 96, k_rows = 224;
  const float scale = 1024.0f;
  Buffer bx = ctx.upload(vkt::random_floats(ntok * k, 7, 3.0f));
  Buffer a = poisoned16(ctx, ntok * k), t = poisoned16(ctx, k_rows * tok_rows);
  Buffer rows = poisoned16(ctx, ntok * k), both = poisoned16(ctx, k_rows * tok_rows);
  Recorder rec(ctx);
  rec.add(ops::cvt(ctx, bx, a, ntok, k, scale));
  rec.add(ops::cvt_t(ctx, bx, nullptr, t, ntok, k, scale, k_rows, tok_rows));
  rec.add(ops::cvt_t_rows(ctx, bx, both, rows, ntok, k, scale, k_rows, tok_rows));
  rec.run();
  CHECK(vkt::count_bit_diffs(halves(rows, ntok * k), halves(a, ntok * k)) == 0);
  CHECK(vkt::count_bit_diffs(halves(both, k_rows * tok_rows), halves(t, k_rows * tok_rows)) == 0);
  // the row-major copy may not overlap the transposed one
  CHECK_THROWS_AS(ops::cvt_t_rows(ctx, bx, both, both, ntok, k, scale, k_rows, tok_rows), Error);
}

GPU_TEST("staging ops refuse bad shapes and small buffers", "[ops][errors]") {
  Buffer src = ctx.buffer(64 * 4), col = ctx.buffer(8 * 4), dst = ctx.buffer(64 * 2);
  CHECK_THROWS_AS(ops::cvt_col(ctx, src, col, dst, 4, 16, 1.0f), Error);     // col too small
  CHECK_THROWS_AS(ops::cvt(ctx, src, dst, 0, 8, 1.0f), Error);               // m = 0
  CHECK_THROWS_AS(ops::cvt(ctx, src, dst, 9, 8, 1.0f), Error);               // src too small
  CHECK_THROWS_AS(ops::cvt(ctx, src, dst, 8, 8, 1.0f, 4), Error);            // rows < m
  CHECK_THROWS_AS(ops::cvt_cols(ctx, src, dst, 4, 8, 10, 4, 1.0f), Error);   // columns past stride
  CHECK_THROWS_AS(ops::cvt_t(ctx, src, nullptr, dst, 8, 8, 1.0f, 40), Error);  // k_rows not a multiple of 32
  const std::vector<const Buffer*> none;
  CHECK_THROWS_AS(ops::cvt_multi(ctx, src, none, none, 8, 8, 1.0f), Error);
  try {
    (void)ops::cvt(ctx, src, dst, 9, 8, 1.0f);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cvt") != std::string::npos);
    CHECK(std::string(e.what()).find("src") != std::string::npos);
  }
}
