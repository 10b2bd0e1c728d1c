// The dense-weight route of a blr layer (vkblr/blr_dense.hpp): forward,
// input, scale and sign gradients against the f64 host layer (blr_ref.hpp),
// the same bits run after run, accumulation exact, bad calls refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "support/blr_ref.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/blr_dense.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// A layer on the device with poisoned outputs, x staged to f16 and a
// BlrDense of its shape.
struct DenseSetup {
  std::uint32_t m, n, r, ntok;
  vkt::HostLayer host;
  std::vector<float> x, dy;
  BlrLayer layer;
  BlrDense dense;
  Buffer bx, bdy, x16, y, dx;

  DenseSetup(Context& ctx, std::uint32_t m_, std::uint32_t n_, std::uint32_t r_, std::uint32_t paths,
             std::uint32_t ntok_)
      : m(m_), n(n_), r(r_), ntok(ntok_), host(vkt::random_layer(m, n, r, paths, 300 + paths)),
        x(vkt::random_floats(std::size_t{ntok} * n, 61, 2.0f)),
        dy(vkt::random_floats(std::size_t{ntok} * m, 62, 1e-3f)),
        layer(make_blr_layer(ctx, m, n, r, host.init(), true)), dense(ctx, ntok, m, n, r, paths) {
    bx = ctx.upload(x, "x");
    bdy = ctx.upload(dy, "dy");
    x16 = ctx.buffer(std::uint64_t{ntok} * n * 2, "x16");
    y = vkt::poisoned(ctx, std::size_t{ntok} * m);
    dx = vkt::poisoned(ctx, std::size_t{ntok} * n);
    for (BlrPath& p : layer.paths) {
      p.g_u.write(std::vector<std::uint32_t>(std::size_t{m} * r, vkt::kPoison32).data(), std::uint64_t{m} * r * 4);
      p.g_v.write(std::vector<std::uint32_t>(std::size_t{n} * r, vkt::kPoison32).data(), std::uint64_t{n} * r * 4);
    }
  }

  void step(Context& ctx, const BlrBackward& options, bool accumulate = false, const Buffer* xt_staged = nullptr) {
    Recorder rec(ctx);
    rec.add(ops::cvt(ctx, bx, x16, ntok, n, 1.0f));
    blr_dense_forward(rec, ctx, layer, dense, x16, y, ntok, accumulate);
    blr_dense_backward(rec, ctx, layer, dense, bx, bdy, dx, ntok, {}, options, accumulate, xt_staged);
    rec.run();
  }

  // dx and every path's scale and sign gradients within 3e-3 of the f64
  // layer's (`want`: vkt::host_blr of x and dy)
  void check_gradients(const vkt::HostResult& want) const {
    CHECK(vkt::rel_error(dx.download<float>(), want.dx) < 3e-3);
    for (std::size_t p = 0; p < layer.paths.size(); ++p) {
      INFO("path " << p);
      const BlrPath& dp = layer.paths[p];
      CHECK(vkt::rel_error(dp.dh.download<float>(), want.paths[p].dh) < 3e-3);
      CHECK(vkt::rel_error(dp.dl.download<float>(), want.paths[p].dl) < 3e-3);
      CHECK(vkt::rel_error(dp.dg.download<float>(), want.paths[p].dg) < 3e-3);
      CHECK(vkt::rel_error(dp.g_u.download<float>(), want.paths[p].gu) < 3e-3);
      CHECK(vkt::rel_error(dp.g_v.download<float>(), want.paths[p].gv) < 3e-3);
    }
  }

  // y, dx, then every path's dh, dl, dg, G_U, G_V as words.
  std::vector<std::vector<std::uint32_t>> results() const {
    std::vector<std::vector<std::uint32_t>> out{y.download<std::uint32_t>(), dx.download<std::uint32_t>()};
    for (const BlrPath& p : layer.paths) {
      for (const Buffer* b : {&p.dh, &p.dl, &p.dg, &p.g_u, &p.g_v}) out.push_back(b->download<std::uint32_t>());
    }
    return out;
  }
};

}  // namespace

GPU_TEST("blr dense route: forward, input, scale and sign gradients match the f64 layer", "[blr][dense]") {
  const std::uint32_t paths = GENERATE(1u, 2u, 3u);
  // m ≠ n, tokens a multiple of nothing (the transposed staging pads them)
  DenseSetup s(ctx, 96, 160, 64, paths, 70);
  BlrBackward options;
  options.gscale = 1024.0f;
  s.step(ctx, options);
  const auto want = vkt::host_blr(s.host, s.x, s.dy, s.ntok);
  INFO(paths << " paths");
  CHECK(vkt::rel_error(s.y.download<float>(), want.y) < 3e-3);
  s.check_gradients(want);
}

GPU_TEST("blr dense route: many tokens whose gradients agree do not overflow dŴ's f16 staging", "[blr][dense]") {
  // 2048 tokens of positive x and dy: dŴ = dyᵀ·x is about 2048 times one
  // token's product, ~1.5e3, which at gscale 64 (one token's dy in f16 is
  // far from overflow) would be ~1e5, past f16's 65504
  DenseSetup s(ctx, 64, 96, 32, 2, 2048);
  for (float& v : s.x) v = 1.0f + std::fabs(v);
  for (float& v : s.dy) v = 0.5f + 500.0f * std::fabs(v);
  s.bx.upload(s.x);
  s.bdy.upload(s.dy);
  BlrBackward options;
  options.gscale = 64.0f;
  s.step(ctx, options);
  const auto want = vkt::host_blr(s.host, s.x, s.dy, s.ntok);
  double largest = 0;
  for (std::uint32_t t = 0; t < s.ntok; ++t) largest += double(s.dy[t * s.m]) * s.x[t * s.n];
  REQUIRE(largest * options.gscale > 65504.0);  // the case the staging scale is for
  s.check_gradients(want);
}

GPU_TEST("blr dense route: the same bits run after run; accumulation adds exactly", "[blr][dense]") {
  DenseSetup a(ctx, 64, 96, 32, 2, 40), b(ctx, 64, 96, 32, 2, 40);
  BlrBackward options;
  options.gscale = 256.0f;
  a.step(ctx, options);
  b.step(ctx, options);
  const auto first = a.results(), again = b.results();
  REQUIRE(first.size() == again.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    INFO("output " << i);
    CHECK(first[i] == again[i]);
    CHECK(first[i][0] != vkt::kPoison32);
  }
  // x's transposed staging taken from another layer of the same x (a's):
  // the same bits, and this one's own staging buffer is never written
  DenseSetup c(ctx, 64, 96, 32, 2, 40);
  const std::vector<std::uint32_t> poison(c.dense.xt.size() / 4, vkt::kPoison32);
  c.dense.xt.write(poison.data(), c.dense.xt.size());
  c.step(ctx, options, false, &a.dense.xt);
  CHECK(c.results() == first);
  CHECK(c.dense.xt.download<std::uint32_t>() == poison);
  // a second step that accumulates doubles every output, bit for bit (the
  // scale gradients accumulate in any case)
  options.accumulate_sign_grads = true;
  b.step(ctx, options, true);
  const auto twice = b.results();
  for (std::size_t i = 0; i < first.size(); ++i) {
    INFO("output " << i);
    for (std::size_t e = 0; e < first[i].size(); ++e) {
      const float one = std::bit_cast<float>(first[i][e]);
      REQUIRE(std::bit_cast<float>(twice[i][e]) == one + one);
    }
  }
}

GPU_TEST("blr dense route: bad shapes and calls are refused", "[blr][dense][errors]") {
  CHECK_THROWS_WITH(BlrDense(ctx, 8, 48, 64, 32, 1), ContainsSubstring("BlrDense: layer 48x64 rank 32"));
  CHECK_THROWS_WITH(BlrDense(ctx, 0, 64, 64, 32, 1), ContainsSubstring("BlrDense: ntok = 0"));
  DenseSetup s(ctx, 64, 96, 32, 2, 40);
  Recorder rec(ctx);
  BlrBackward options;
  CHECK_THROWS_WITH(blr_dense_forward(rec, ctx, s.layer, s.dense, s.x16, s.y, 41),
                    ContainsSubstring("blr_dense_forward: ntok = 41 exceeds the BlrDense's 40"));
  BlrDense other(ctx, 40, 96, 64, 32, 2);
  CHECK_THROWS_WITH(blr_dense_forward(rec, ctx, s.layer, other, s.x16, s.y, 40),
                    ContainsSubstring("the BlrDense is for 96x64 rank 32 with 2 paths"));
  options.gscale = 100.0f;
  CHECK_THROWS_WITH(blr_dense_backward(rec, ctx, s.layer, s.dense, s.bx, s.bdy, s.dx, 40, {}, options),
                    ContainsSubstring("blr_dense_backward: gscale = 100 is not a power of two"));
  options.gscale = 64.0f;
  const Buffer tiny = ctx.buffer(64, "tiny");
  CHECK_THROWS_WITH(blr_dense_backward(rec, ctx, s.layer, s.dense, s.bx, tiny, s.dx, 40, {}, options),
                    ContainsSubstring("blr_dense_backward: dy holds"));
  CHECK_THROWS_WITH(blr_dense_backward(rec, ctx, s.layer, s.dense, s.bx, s.bdy, s.dx, 40, {}, options, false, &tiny),
                    ContainsSubstring("blr_dense_backward: xt_staged holds"));
  const std::vector<BlrSignGrads> one{{&s.layer.paths[0].g_u, &s.layer.paths[0].g_v}};
  CHECK_THROWS_WITH(blr_dense_backward(rec, ctx, s.layer, s.dense, s.bx, s.bdy, s.dx, 40, one, options),
                    ContainsSubstring("1 sign-gradient destinations for 2 paths"));
  BlrLayer odd = make_blr_layer(ctx, 48, 64, 32, vkt::random_layer(48, 64, 32, 1, 5).init(), false);
  CHECK_FALSE(blr_dense_fits(odd));
  CHECK(blr_dense_fits(s.layer));
}
