// The blr layer: forward, backward and sign gradients against f64; the flip
// identity; bit-exact equivalences (bitmap GEMMs ≡ expanded planes, staged ≡
// plain forward, fused ≡ unfused backward); one submit per step; refusals.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cstdlib>

#include "support/blr_ref.hpp"
#include "support/gpu.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/ops/blr_lane.hpp"
#include "vkblr/profiler.hpp"

using namespace vkblr;

namespace {

// A layer on the device with its scratch and input/output buffers.
struct DeviceLayer {
  DeviceLayer(Context& ctx, const vkt::HostLayer& host, std::uint32_t ntok_, bool sign_grads,
              std::uint32_t lanes = 2)
      : layer(make_blr_layer(ctx, host.m, host.n, host.r, host.init(), sign_grads)),
        scratch(ctx, layer, ntok_, lanes),
        ntok(ntok_) {
    y = ctx.buffer(std::size_t{ntok} * host.m * 4);
    dx = ctx.buffer(std::size_t{ntok} * host.n * 4);
    y.fill(vkt::kPoison32);
    dx.fill(vkt::kPoison32);
  }
  BlrLayer layer;
  BlrScratch scratch;  // transients of its own
  std::uint32_t ntok;
  Buffer y, dx;

  // Forward and backward in one batch (one submit); its barriers.
  std::uint32_t step(Context& ctx, const Buffer& x, const Buffer& dy, const BlrBackward& options = {}) {
    Recorder rec(ctx);
    blr_forward(rec, ctx, layer, scratch, x, y, ntok);
    blr_backward(rec, ctx, layer, scratch, x, dy, dx, ntok, options);
    const std::uint32_t barriers = rec.barriers();
    rec.run();
    return barriers;
  }
  void forward(Context& ctx, const Buffer& x) {
    Recorder rec(ctx);
    blr_forward(rec, ctx, layer, scratch, x, y, ntok);
    rec.run();
  }
};

// Every output of a step, as bits (for the equivalence tests).
std::vector<std::uint32_t> all_outputs(const DeviceLayer& d) {
  std::vector<std::uint32_t> out;
  auto add = [&](const Buffer& b) {
    if (!b) return;
    const auto v = b.download<std::uint32_t>();
    out.insert(out.end(), v.begin(), v.end());
  };
  add(d.y);
  add(d.dx);
  for (const BlrPath& p : d.layer.paths) {
    add(p.dh);
    add(p.dl);
    add(p.dg);
    add(p.g_u);
    add(p.g_v);
  }
  return out;
}

}  // namespace

GPU_TEST("blr forward, backward and sign gradients match f64", "[blr]") {
  const std::uint32_t np = GENERATE(1u, 2u, 3u);
  const std::uint32_t m = 256, n = 384, r = 128, ntok = 70;  // m ≠ n, ntok a multiple of nothing
  const auto host = vkt::random_layer(m, n, r, np, 100 * np);
  const auto x = vkt::random_floats(std::size_t{ntok} * n, 60, 2.0f);
  const auto dy = vkt::random_floats(std::size_t{ntok} * m, 61, 1e-3f);
  DeviceLayer d(ctx, host, ntok, true);
  Buffer bx = ctx.upload(x), bdy = ctx.upload(dy);
  d.step(ctx, bx, bdy);
  const auto want = vkt::host_blr(host, x, dy, ntok);
  INFO(np << " paths");
  CHECK(vkt::rel_error(d.y.download<float>(), want.y) < 3e-3);
  CHECK(vkt::rel_error(d.dx.download<float>(), want.dx) < 3e-3);
  for (std::uint32_t p = 0; p < np; ++p) {
    INFO("path " << p);
    const BlrPath& dp = d.layer.paths[p];
    CHECK(vkt::rel_error(dp.dh.download<float>(), want.paths[p].dh) < 3e-3);
    CHECK(vkt::rel_error(dp.dl.download<float>(), want.paths[p].dl) < 3e-3);
    CHECK(vkt::rel_error(dp.dg.download<float>(), want.paths[p].dg) < 3e-3);
    CHECK(vkt::rel_error(dp.g_u.download<float>(), want.paths[p].gu) < 3e-3);
    CHECK(vkt::rel_error(dp.g_v.download<float>(), want.paths[p].gv) < 3e-3);
  }
}

GPU_TEST("flipping one sign changes the loss by -2sG plus the quadratic term", "[blr][sign]") {
  // L = ½‖y − y*‖² is quadratic in each sign: flipping U[i,k] changes it by
  // −2s·G_U + 2h_i²ℓ_k²·Σ_t a_tk², and V[j,k] by −2s·G_V +
  // 2g_j²ℓ_k²·(Σ_t x_tj²)(Σ_i h_i²). Inputs on a grid that keeps every f16
  // operand of the forward exact; each flip rewrites the bitmap and reruns
  // the device forward, which also proves the bit mapping.
  const std::uint32_t m = 256, n = 384, r = 128, ntok = 70, np = 2;
  const auto host = vkt::random_layer(m, n, r, np, 7, true);
  std::vector<float> x = vkt::random_floats(std::size_t{ntok} * n, 70, 1.0f);
  for (auto& v : x) v = std::round(v * 4.0f) / 8.0f;
  DeviceLayer d(ctx, host, ntok, true);
  Buffer bx = ctx.upload(x);
  d.forward(ctx, bx);
  const auto y0 = d.y.download<float>();
  double rms = 0;
  for (float v : y0) rms += double(v) * v;
  rms = std::sqrt(rms / static_cast<double>(y0.size()));
  const auto noise = vkt::random_floats(y0.size(), 71, 1.0f);
  std::vector<float> ystar(y0.size()), dy(y0.size());
  for (std::size_t i = 0; i < y0.size(); ++i) {
    ystar[i] = y0[i] + 0.7f * static_cast<float>(rms) * noise[i];
    dy[i] = y0[i] - ystar[i];
  }
  auto loss = [&](const std::vector<float>& y) {
    std::vector<double> l(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) l[i] = 0.5 * std::pow(double(y[i]) - ystar[i], 2);
    return l;
  };
  const auto l0 = loss(y0);
  Buffer bdy = ctx.upload(dy);
  {
    Recorder rec(ctx);
    blr_backward(rec, ctx, d.layer, d.scratch, bx, bdy, d.dx, ntok);
    rec.run();
  }
  const auto want = vkt::host_blr(host, x, dy, ntok);
  double worst_dev = 0, worst_host = 0;
  const std::pair<std::uint32_t, std::uint32_t> picks[] = {{0, 0},  {1, 31},  {2, 32},  {255, 127},
                                                           {17, 63}, {100, 64}, {200, 95}, {5, 96}};
  for (std::uint32_t p = 0; p < np; ++p) {
    const auto& P = host.paths[p];
    const auto gu = d.layer.paths[p].g_u.download<float>();
    const auto gv = d.layer.paths[p].g_v.download<float>();
    double sum_h2 = 0;
    for (float v : P.h) sum_h2 += double(v) * v;
    for (int side = 0; side < 2; ++side) {
      const std::uint32_t rows = side == 0 ? m : n;
      Buffer& bits = side == 0 ? d.layer.paths[p].bits_u : d.layer.paths[p].bits_v;
      const auto base = vkt::pack_signs(side == 0 ? P.su : P.sv, rows, r);
      for (std::size_t q = 0; q < std::size(picks); ++q) {
        const std::uint32_t i = (picks[q].first + 37 * static_cast<std::uint32_t>(q) * side) % rows;
        const std::uint32_t k = (picks[q].second + 11 * p) % r;
        const double s0 = (side == 0 ? P.su : P.sv)[i * r + k];
        double gd, gh, quad;
        if (side == 0) {
          double sa = 0;
          for (std::uint32_t t = 0; t < ntok; ++t) sa += std::pow(want.paths[p].a[t * r + k], 2);
          gd = gu[i * r + k];
          gh = want.paths[p].gu[i * r + k];
          quad = 2.0 * std::pow(P.h[i], 2) * std::pow(P.l[k], 2) * sa;
        } else {
          double sx = 0;
          for (std::uint32_t t = 0; t < ntok; ++t) sx += std::pow(x[t * n + i], 2);
          gd = gv[i * r + k];
          gh = want.paths[p].gv[i * r + k];
          quad = 2.0 * std::pow(P.g[i], 2) * std::pow(P.l[k], 2) * sx * sum_h2;
        }
        auto flipped = base;
        flipped[i * (r / 32) + k / 32] ^= 1u << (k % 32);
        bits.write(flipped.data(), flipped.size() * 4);
        d.forward(ctx, bx);
        const auto l1 = loss(d.y.download<float>());
        bits.write(base.data(), base.size() * 4);
        double measured = 0;
        for (std::size_t e = 0; e < l1.size(); ++e) measured += l1[e] - l0[e];
        const double scale = 2.0 * std::abs(gh) + quad;
        worst_dev = std::max(worst_dev, std::abs(measured - (-2.0 * s0 * gd + quad)) / scale);
        worst_host = std::max(worst_host, std::abs(measured - (-2.0 * s0 * gh + quad)) / scale);
      }
    }
  }
  INFO("flip ΔL against the prediction: worst " << worst_dev << " (device G), " << worst_host << " (f64 G)");
  // f32 rounding of the two-path sum over 17920 outputs leaves ~1e-4 of the
  // term scale; a wrong bit index or formula is off by O(1)
  CHECK(worst_host < 5e-4);
  CHECK(worst_dev < 2e-3);
}

GPU_TEST("bitmap GEMMs, staged forward and fused backward equal their plain forms bit for bit", "[blr]") {
  const std::uint32_t ntok = GENERATE(64u, 70u);  // colsum_fused_t at 64; colsum_fused + cvt_t at 70
  const std::uint32_t m = 128, n = 192, r = 64, np = 2;
  const auto host = vkt::random_layer(m, n, r, np, 3);
  const auto x = vkt::random_floats(std::size_t{ntok} * n, 80, 1.0f);
  const auto dy = vkt::random_floats(std::size_t{ntok} * m, 81, 1e-2f);
  auto run = [&](Context& c, bool fuse, bool staged) {
    Buffer bx = c.upload(x), bdy = c.upload(dy);
    DeviceLayer d(c, host, ntok, true);
    Recorder rec(c);
    std::vector<Buffer> xin;
    std::vector<const Buffer*> xin_ptr;
    if (staged) {
      for (std::uint32_t p = 0; p < np; ++p) xin.push_back(c.buffer(std::size_t{ntok} * n * 2));
      for (const Buffer& b : xin) xin_ptr.push_back(&b);
      blr_stage_inputs(rec, c, d.layer, bx, xin_ptr, ntok);
      blr_forward_staged(rec, c, d.layer, d.scratch, xin_ptr, d.y, ntok);
    } else {
      blr_forward(rec, c, d.layer, d.scratch, bx, d.y, ntok);
    }
    BlrBackward options;
    options.fuse = fuse;
    blr_backward(rec, c, d.layer, d.scratch, bx, bdy, d.dx, ntok, options);
    rec.run();
    return all_outputs(d);
  };
  const auto reference = run(ctx, true, false);
  INFO("ntok " << ntok);
  CHECK(vkt::count_bit_diffs(run(ctx, false, false), reference) == 0);  // fused ≡ unfused
  CHECK(vkt::count_bit_diffs(run(ctx, true, true), reference) == 0);    // staged ≡ plain forward
  GemmPolicy expand_first = ctx.gemm_policy();
  expand_first.bitmap_staging = false;
  vkt::with_gemm_policy(expand_first, [&](Context& expand_ctx) {
    CHECK(vkt::count_bit_diffs(run(expand_ctx, true, false), reference) == 0);  // bitmap GEMMs ≡ expanded planes
  });
  CHECK(vkt::count_bit_diffs(run(ctx, true, false), reference) == 0);  // deterministic
}

GPU_TEST("paths side by side give the bits of path after path, with fewer barriers", "[blr][recorder]") {
  const std::uint32_t np = GENERATE(2u, 3u);
  const std::uint32_t ntok = GENERATE(64u, 70u);  // colsum_fused_t at 64; colsum_fused + cvt_t at 70
  const std::uint32_t m = 128, n = 192, r = 64;
  // the device's own split-K choice, and every GEMM split (each side by side
  // with its own workspace): the lanes change neither
  const bool forced_split = GENERATE(false, true);
  GemmPolicy policy = ctx.gemm_policy();
  if (forced_split) policy.k_splits = 2;
  vkt::with_gemm_policy(policy, [&](Context& c) {
    const auto host = vkt::random_layer(m, n, r, np, 11 * np);
    Buffer bx = c.upload(vkt::random_floats(std::size_t{ntok} * n, 82, 1.0f));
    Buffer bdy = c.upload(vkt::random_floats(std::size_t{ntok} * m, 83, 1e-2f));
    std::vector<std::uint32_t> barriers;
    std::vector<std::vector<std::uint32_t>> outputs;
    for (std::uint32_t lanes = 1; lanes <= np + 1; ++lanes) {
      DeviceLayer d(c, host, ntok, true, lanes);
      CHECK(d.scratch.shared->lanes.size() == std::min(lanes, np));  // allocated for the layer's paths
      barriers.push_back(d.step(c, bx, bdy));
      outputs.push_back(all_outputs(d));
    }
    // a one-path layer allocates one lane of the two it could use
    const auto single = vkt::random_layer(m, n, r, 1, 12);
    DeviceLayer one(c, single, ntok, true, 2);
    CHECK(one.scratch.shared->lanes.size() == 1);
    INFO(np << " paths, ntok " << ntok << (forced_split ? ", split" : ""));
    for (std::uint32_t lanes = 2; lanes <= np + 1; ++lanes) {
      INFO(lanes << " lanes: " << barriers[lanes - 1] << " barriers, path after path " << barriers[0]);
      CHECK(vkt::count_bit_diffs(outputs[lanes - 1], outputs[0]) == 0);
      CHECK(barriers[lanes - 1] < barriers[0]);
    }
  });
}

GPU_TEST("the lanes change no bit of a layer step where the automatic split-K differs per GEMM count",
         "[blr][recorder]") {
  // On 16-wide fragments the a GEMM (2560×32, K 2048: 40 tiles) splits 4 or
  // 3 ways when 1 or 2 such GEMMs share the device: lanes that set that
  // count would change the bits. (On small fragments nothing splits, and
  // the lanes' order and transients are what is compared.)
  const std::uint32_t np = 2, m = 128, n = 2048, r = 32, ntok = 2560;
  const auto host = vkt::random_layer(m, n, r, np, 71);
  Buffer bx = ctx.upload(vkt::random_floats(std::size_t{ntok} * n, 72, 1.0f));
  Buffer bdy = ctx.upload(vkt::random_floats(std::size_t{ntok} * m, 73, 1e-2f));
  std::vector<std::vector<std::uint32_t>> outputs;
  for (std::uint32_t lanes = 1; lanes <= np; ++lanes) {
    DeviceLayer d(ctx, host, ntok, true, lanes);
    d.step(ctx, bx, bdy);
    outputs.push_back(all_outputs(d));
  }
  CHECK(vkt::count_bit_diffs(outputs[1], outputs[0]) == 0);
}

GPU_TEST("layers lent one BlrShared give the bits of their own transients", "[blr]") {
  // two layers of different shapes (and path counts) on one BlrShared sized
  // for the larger, recorded in one batch, against each with a scratch of
  // its own
  const std::uint32_t ntok = 48;
  const auto big = vkt::random_layer(128, 96, 64, 3, 31), small = vkt::random_layer(64, 32, 32, 2, 32);
  Buffer bx = ctx.upload(vkt::random_floats(std::size_t{ntok} * 96, 33, 1.0f));
  Buffer bdy = ctx.upload(vkt::random_floats(std::size_t{ntok} * 128, 34, 1e-2f));
  const Buffer x_small = bx.view(0, std::uint64_t{ntok} * 32 * 4), dy_small = bdy.view(0, std::uint64_t{ntok} * 64 * 4);
  DeviceLayer own_big(ctx, big, ntok, true), own_small(ctx, small, ntok, true);
  own_big.step(ctx, bx, bdy);
  own_small.step(ctx, x_small, dy_small);
  ops::BlrShared shared(ctx, ntok, 128, 96, 64);
  CHECK(shared.lanes.size() == 1);
  DeviceLayer lent_big(ctx, big, ntok, true), lent_small(ctx, small, ntok, true);
  lent_big.scratch = BlrScratch(ctx, lent_big.layer, shared);
  lent_small.scratch = BlrScratch(ctx, lent_small.layer, shared);
  CHECK(shared.lanes.size() == 2);  // reserved by the three-path layer, up to max_lanes
  {
    Recorder rec(ctx);
    for (DeviceLayer* d : {&lent_big, &lent_small}) {
      const bool b = d == &lent_big;
      blr_forward(rec, ctx, d->layer, d->scratch, b ? bx : x_small, d->y, ntok);
      blr_backward(rec, ctx, d->layer, d->scratch, b ? bx : x_small, b ? bdy : dy_small, d->dx, ntok);
    }
    rec.run();
  }
  CHECK(vkt::count_bit_diffs(all_outputs(lent_big), all_outputs(own_big)) == 0);
  CHECK(vkt::count_bit_diffs(all_outputs(lent_small), all_outputs(own_small)) == 0);
  // a layer larger than the shared transients, and bad sizes of a scratch of its own
  ops::BlrShared narrow(ctx, ntok, 64, 32, 32);
  CHECK_THROWS_WITH(BlrScratch(ctx, own_big.layer, narrow),
                    Catch::Matchers::ContainsSubstring("BlrScratch") && Catch::Matchers::ContainsSubstring("128x96"));
  CHECK_THROWS_WITH(BlrScratch(ctx, own_big.layer, 0), Catch::Matchers::ContainsSubstring("BlrScratch") &&
                                                           Catch::Matchers::ContainsSubstring("ntok = 0"));
  CHECK_THROWS_WITH(BlrScratch(ctx, own_big.layer, ntok, 65),
                    Catch::Matchers::ContainsSubstring("BlrScratch: lanes = 65"));
}

GPU_TEST("a layer's forward, backward and sign gradients are one submit", "[blr][recorder]") {
  const auto host = vkt::random_layer(64, 96, 64, 2, 5);
  DeviceLayer d(ctx, host, 40, true);
  Buffer bx = ctx.upload(vkt::random_floats(40 * 96, 90)), bdy = ctx.upload(vkt::random_floats(40 * 64, 91));
  const ProfileCounters before = ctx.profiler().counters();
  d.step(ctx, bx, bdy);
  const ProfileCounters after = ctx.profiler().counters();
  CHECK(after.submits - before.submits == 1);
  CHECK(after.dispatches - before.dispatches > 20);
}

GPU_TEST("blr ops refuse bad ranks, shapes and gradient scales", "[blr][errors]") {
  auto message = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const auto host = vkt::random_layer(64, 96, 64, 1, 9);
  auto bad_rank = host;
  bad_rank.r = 48;
  CHECK(message([&] { (void)make_blr_layer(ctx, 64, 96, 48, bad_rank.init(), false); }).find("r = 48") !=
        std::string::npos);
  DeviceLayer d(ctx, host, 32, false);
  Buffer bx = ctx.buffer(64 * 96 * 4), bdy = ctx.buffer(64 * 64 * 4);
  Recorder rec(ctx);
  CHECK(message([&] { blr_forward(rec, ctx, d.layer, d.scratch, bx, d.y, 33); }).find("ntok = 33") !=
        std::string::npos);
  BlrBackward o;
  o.gscale = 1000.0f;
  CHECK(message([&] { blr_backward(rec, ctx, d.layer, d.scratch, bx, bdy, d.dx, 32, o); }).find("power of two") !=
        std::string::npos);
}
