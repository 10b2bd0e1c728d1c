// Rotary position embedding against an f64 reference (angles and cos/sin
// in f64) at positions to 8191, head_dim 64 and 128, bases 10000 and
// 500000, several sequences per batch; the backward against the reference's
// transpose and finite differences; backward ∘ forward ≈ identity; an
// out-of-range position gives NaNs; same bits run after run; q and k in one
// dispatch ≡ one each; bad shapes refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/llama_ref.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {
// Tolerance in f32 ulps of the terms' magnitudes (|a·cos| + |b·sin| for
// x[i], |b·cos| + |a·sin| for x[i + h]): the table's two roundings
// (½ ulp each of cos and sin), the two products' and the sum's (½ ulp
// each): under 3; 4 with room.
constexpr double kTol = 4 * 0x1p-24;

// HF's rotation in f64, θ = pos · base^(−2i/d); inverse: by −θ.
vkt::RefValues rope_ref(const std::vector<float>& x, const std::vector<std::uint32_t>& pos, std::uint32_t heads,
                        std::uint32_t d, double base, bool inverse) {
  vkt::RefValues r(x.size());
  const std::uint32_t h = d / 2;
  for (std::size_t t = 0; t < pos.size(); ++t) {
    for (std::uint32_t hd = 0; hd < heads; ++hd) {
      const std::size_t row = (t * heads + hd) * d;
      for (std::uint32_t i = 0; i < h; ++i) {
        const double theta = pos[t] * std::pow(base, -2.0 * i / d);
        const double c = std::cos(theta), s = inverse ? -std::sin(theta) : std::sin(theta);
        const double a = x[row + i], b = x[row + i + h];
        r.value[row + i] = a * c - b * s;
        r.value[row + i + h] = b * c + a * s;
        r.magnitude[row + i] = std::abs(a * c) + std::abs(b * s);
        r.magnitude[row + i + h] = std::abs(b * c) + std::abs(a * s);
      }
    }
  }
  return r;
}

// Three sequences of 5, 7 and 4 tokens from 0, then a stretch far in:
// 4090..4101 and 8180..8191.
std::vector<std::uint32_t> batch_positions() {
  std::vector<std::uint32_t> pos;
  for (std::uint32_t len : {5u, 7u, 4u}) {
    for (std::uint32_t p = 0; p < len; ++p) pos.push_back(p);
  }
  for (std::uint32_t p = 4090; p < 4102; ++p) pos.push_back(p);
  for (std::uint32_t p = 8180; p < 8192; ++p) pos.push_back(p);
  return pos;
}

void check(const char* name, const std::vector<float>& got, const vkt::RefValues& want, double tol) {
  const vkt::Worst w = vkt::worst_error(got, want, tol);
  INFO(name << ": worst error " << w.ratio << " of the tolerance at " << w.at << ": got " << got[w.at] << ", want "
            << want.value[w.at] << " (magnitude " << want.magnitude[w.at] << ")");
  CHECK(w.ratio <= 1.0);
}
}  // namespace

GPU_TEST("rope forward and backward match the f64 rotation at positions to 8191", "[ops][rope]") {
  const std::vector<std::uint32_t> pos = batch_positions();
  const auto tokens = static_cast<std::uint32_t>(pos.size());
  for (const auto& [d, base] : {std::pair{64u, 10000.0}, std::pair{128u, 500000.0}, std::pair{128u, 10000.0}}) {
    INFO("head_dim = " << d << ", base = " << base);
    const std::uint32_t heads = 3;
    const ops::Rope shape{tokens, heads, d, 8192};
    const auto x_h = vkt::random_floats(std::size_t{tokens} * heads * d, 980 + d, 2.0f);
    const auto dy_h = vkt::random_floats(x_h.size(), 981 + d, 1.0f);
    Buffer x = ctx.upload(x_h), dy = ctx.upload(dy_h), positions = ctx.upload(pos),
           table = ctx.upload(ops::rope_table(d, base, 8192)), round_trip = ctx.upload(x_h);
    Recorder rec(ctx);
    rec.add(ops::rope_fwd(ctx, x, positions, table, shape));
    rec.add(ops::rope_bwd(ctx, dy, positions, table, shape));
    rec.add(ops::rope_fwd(ctx, round_trip, positions, table, shape));
    rec.add(ops::rope_bwd(ctx, round_trip, positions, table, shape));
    rec.run();
    check("forward", x.download<float>(), rope_ref(x_h, pos, heads, d, base, false), kTol);
    check("backward", dy.download<float>(), rope_ref(dy_h, pos, heads, d, base, true), kTol);
    // back to x: two rotations' errors, of |a| + |b| at most
    vkt::RefValues identity(x_h.size());
    const std::uint32_t h = d / 2;
    for (std::size_t i = 0; i < x_h.size(); ++i) {
      const std::size_t j = (i % d) < h ? i + h : i - h;
      identity.value[i] = x_h[i];
      identity.magnitude[i] = std::abs(x_h[i]) + std::abs(x_h[j]);
    }
    check("backward of forward", round_trip.download<float>(), identity, 3 * kTol);
  }
}

GPU_TEST("rope's gradient matches finite differences; out-of-range positions give NaN; same bits every run",
         "[ops][rope]") {
  const std::uint32_t heads = 2, d = 8, max_positions = 64;
  const std::vector<std::uint32_t> pos{0, 1, 2, 0, 1, 63};
  const auto tokens = static_cast<std::uint32_t>(pos.size());
  const ops::Rope shape{tokens, heads, d, max_positions};
  const auto x_h = vkt::random_floats(std::size_t{tokens} * heads * d, 990, 1.0f);
  const auto dy_h = vkt::random_floats(x_h.size(), 991, 1.0f);
  // L(x) = Σ dy·rope(x) in f64: its gradient is the backward of dy
  const auto dy64 = vkt::widen(dy_h);
  auto loss = [&](const std::vector<double>& x) {
    double l = 0;
    const std::uint32_t h = d / 2;
    for (std::size_t t = 0; t < pos.size(); ++t) {
      for (std::uint32_t hd = 0; hd < heads; ++hd) {
        const std::size_t row = (t * heads + hd) * d;
        for (std::uint32_t i = 0; i < h; ++i) {
          const double theta = pos[t] * std::pow(10000.0, -2.0 * i / d);
          const double c = std::cos(theta), s = std::sin(theta), a = x[row + i], b = x[row + i + h];
          l += dy64[row + i] * (a * c - b * s) + dy64[row + i + h] * (b * c + a * s);
        }
      }
    }
    return l;
  };
  std::vector<std::size_t> all(x_h.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  vkt::RefValues fd = rope_ref(dy_h, pos, heads, d, 10000.0, true);
  fd.value = vkt::finite_differences(vkt::widen(x_h), loss, all);
  for (auto& m : fd.magnitude) m = std::max(m, 1e-3);

  Buffer dy = ctx.upload(dy_h), dy2 = ctx.upload(dy_h), positions = ctx.upload(pos),
         table = ctx.upload(ops::rope_table(d, 10000.0, max_positions));
  auto bad_pos = pos;
  bad_pos[2] = max_positions;
  Buffer x_bad = ctx.upload(x_h), positions_bad = ctx.upload(bad_pos), x_ok = ctx.upload(x_h);
  Recorder rec(ctx);
  rec.add(ops::rope_bwd(ctx, dy, positions, table, shape));
  rec.add(ops::rope_bwd(ctx, dy2, positions, table, shape));
  rec.add(ops::rope_fwd(ctx, x_bad, positions_bad, table, shape));
  rec.add(ops::rope_fwd(ctx, x_ok, positions, table, shape));
  rec.run();
  const auto got = dy.download<float>();
  check("backward against differences", got, fd, kTol + 1e-6);
  CHECK(vkt::count_bit_diffs(dy2.download<float>(), got) == 0);
  const auto bad = x_bad.download<float>(), ok = x_ok.download<float>();
  for (std::size_t i = 0; i < bad.size(); ++i) {
    const std::size_t t = i / (heads * d);
    if (t == 2) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &bad[i], 4);
      CHECK(bits == 0x7fc00000u);
    } else {
      CHECK(std::memcmp(&bad[i], &ok[i], 4) == 0);
    }
  }
}

GPU_TEST("rope on q and k in one dispatch gives the bits of rope on each", "[ops][rope]") {
  // 14 and 2 heads (Qwen-0.5B's), head_dim 64: q's pairs end inside a
  // workgroup (17.5 of them), so k starts at a workgroup of its own; one
  // position past the table (NaN rows in both)
  auto pos = batch_positions();
  pos[9] = 8192;
  const auto tokens = static_cast<std::uint32_t>(pos.size());
  const std::uint32_t heads = 14, kv_heads = 2, d = 64;
  const auto q_h = vkt::random_floats(std::size_t{tokens} * heads * d, 995, 2.0f);
  const auto k_h = vkt::random_floats(std::size_t{tokens} * kv_heads * d, 996, 2.0f);
  Buffer positions = ctx.upload(pos), table = ctx.upload(ops::rope_table(d, 1e6, 8192));
  for (const bool backward : {false, true}) {
    INFO((backward ? "backward" : "forward"));
    Buffer q = ctx.upload(q_h), k = ctx.upload(k_h), q1 = ctx.upload(q_h), k1 = ctx.upload(k_h);
    auto one = [&](const Buffer& x, const ops::Rope& shape) {
      return backward ? ops::rope_bwd(ctx, x, positions, table, shape) : ops::rope_fwd(ctx, x, positions, table, shape);
    };
    Recorder rec(ctx);
    rec.add(backward ? ops::rope_bwd(ctx, q, k, positions, table, {tokens, heads, kv_heads, d, 8192})
                     : ops::rope_fwd(ctx, q, k, positions, table, {tokens, heads, kv_heads, d, 8192}));
    rec.add(one(q1, {tokens, heads, d, 8192}));
    rec.add(one(k1, {tokens, kv_heads, d, 8192}));
    rec.run();
    const auto got_q = q.download<float>(), got_k = k.download<float>();
    CHECK(vkt::count_bit_diffs(got_q, q1.download<float>()) == 0);
    CHECK(vkt::count_bit_diffs(got_k, k1.download<float>()) == 0);
    CHECK(vkt::count_bit_diffs(got_k, k_h) > k_h.size() / 2);  // k was rotated
  }
}

GPU_TEST("rope refuses bad shapes, small buffers and overlaps", "[ops][rope][errors]") {
  const ops::Rope shape{4, 2, 8, 16};
  Buffer x = ctx.buffer(64 * 4), positions = ctx.buffer(4 * 4), table = ctx.buffer(16 * 8 * 4),
         small = ctx.buffer(3 * 4);
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, positions, table, {4, 2, 7, 16}),
                    ContainsSubstring("rope_fwd: head_dim = 7 (must be even, 2..1024)"));
  CHECK_THROWS_WITH(ops::rope_bwd(ctx, x, positions, table, {0, 2, 8, 16}), ContainsSubstring("rope_bwd: tokens = 0"));
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, small, table, shape),
                    ContainsSubstring("rope_fwd: positions holds 12 bytes, needs 16"));
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, positions, small, shape),
                    ContainsSubstring("rope_fwd: table holds 12 bytes, needs 512"));
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, x, table, shape), ContainsSubstring("rope_fwd: x overlaps positions"));
  Buffer k = ctx.buffer(32 * 4);
  const ops::RopeQk qk{4, 2, 1, 8, 16};
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, k, positions, table, {4, 2, 0, 8, 16}),
                    ContainsSubstring("rope_fwd: kv_heads = 0"));
  CHECK_THROWS_WITH(ops::rope_bwd(ctx, x, small, positions, table, qk),
                    ContainsSubstring("rope_bwd: k holds 12 bytes, needs 128"));
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, x, positions, table, qk), ContainsSubstring("rope_fwd: q overlaps k"));
  CHECK_THROWS_WITH(ops::rope_fwd(ctx, x, table, positions, table, qk), ContainsSubstring("rope_fwd: k overlaps table"));
  CHECK_THROWS_WITH(ops::rope_table(8, 1.0, 16), ContainsSubstring("rope_table: base = 1"));
  CHECK_THROWS_WITH(ops::rope_table(0, 10000.0, 16), ContainsSubstring("rope_table: head_dim = 0"));
}
