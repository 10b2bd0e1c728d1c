// blr_forward_side_by_side and blr_backward_side_by_side (vkblr/blr.hpp):
// the forwards and backwards of independent layers recorded as one
// Recorder::parallel give, bit for bit, what blr_forward and blr_backward
// give each layer alone; jobs that share transients or an output are
// refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <vector>

#include "support/blr_ref.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/ops/blr_lane.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::uint32_t kTokens = 40;

// Three layers of one input width (48), as q, k, v of a block: other
// outputs and ranks, 2, 2 and 3 paths.
struct Setup {
  std::vector<BlrLayer> layers;
  std::vector<std::unique_ptr<ops::BlrShared>> shared;
  std::vector<BlrScratch> scratch;
  std::vector<Buffer> y, dy, dx, g_u, g_v;
  std::vector<std::vector<BlrSignGrads>> sign_grads;
  Buffer x;

  explicit Setup(Context& ctx) {
    const std::uint32_t shapes[][3] = {{64, 48, 32}, {32, 48, 64}, {16, 48, 32}};
    const std::uint32_t paths[] = {2, 2, 3};
    x = ctx.upload(vkt::random_floats(std::size_t{kTokens} * 48, 1), "x");
    for (std::size_t i = 0; i < 3; ++i) {
      const auto [m, n, r] = std::array{shapes[i][0], shapes[i][1], shapes[i][2]};
      layers.push_back(make_blr_layer(ctx, m, n, r, vkt::random_layer(m, n, r, paths[i], 10 + i).init(), false));
      shared.push_back(std::make_unique<ops::BlrShared>(ctx, kTokens, m, n, r, 3));
      y.push_back(vkt::poisoned(ctx, std::size_t{kTokens} * m));
      dy.push_back(ctx.upload(vkt::random_floats(std::size_t{kTokens} * m, 20 + i), "dy"));
      dx.push_back(vkt::poisoned(ctx, std::size_t{kTokens} * n));
      std::vector<BlrSignGrads> grads;
      for (std::uint32_t p = 0; p < paths[i]; ++p) {
        g_u.push_back(ctx.upload(std::vector<float>(std::size_t{m} * r, 0.5f), "g_u"));
        g_v.push_back(ctx.upload(std::vector<float>(std::size_t{n} * r, 0.5f), "g_v"));
      }
      sign_grads.emplace_back(paths[i]);
    }
    for (std::size_t i = 0, at = 0; i < 3; ++i) {
      scratch.emplace_back(ctx, layers[i], *shared[i]);
      for (BlrSignGrads& s : sign_grads[i]) {
        s = {&g_u[at], &g_v[at]};
        ++at;
      }
    }
  }

  // Every output the forward and backward write, as words.
  std::vector<std::vector<std::uint32_t>> results() const {
    std::vector<std::vector<std::uint32_t>> out;
    for (const std::vector<Buffer>* list : {&y, &dx, &g_u, &g_v}) {
      for (const Buffer& b : *list) out.push_back(b.download<std::uint32_t>());
    }
    for (const BlrLayer& l : layers) out.push_back(l.scale_grads.download<std::uint32_t>());
    for (const BlrScratch& s : scratch) {
      for (const std::vector<Buffer>* list : {&s.a, &s.c}) {
        for (const Buffer& b : *list) out.push_back(b.download<std::uint32_t>());
      }
    }
    return out;
  }
};

}  // namespace

GPU_TEST("blr side by side: independent layers give the bits of one after another", "[blr]") {
  Setup alone(ctx), together(ctx);
  BlrBackward options;
  options.accumulate_sign_grads = true;
  {
    Recorder rec(ctx);
    for (std::size_t i = 0; i < 3; ++i) {
      blr_forward(rec, ctx, alone.layers[i], alone.scratch[i], alone.x, alone.y[i], kTokens);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      blr_backward(rec, ctx, alone.layers[i], alone.scratch[i], alone.x, alone.dy[i], alone.dx[i], kTokens,
                   alone.sign_grads[i], options);
    }
    rec.run();
  }
  {
    std::vector<BlrForwardJob> forward;
    std::vector<BlrBackwardJob> backward;
    for (std::size_t i = 0; i < 3; ++i) {
      forward.push_back({&together.layers[i], &together.scratch[i], &together.x, &together.y[i]});
      backward.push_back({&together.layers[i], &together.scratch[i], &together.x, &together.dy[i],
                          &together.dx[i], together.sign_grads[i]});
    }
    Recorder rec(ctx);
    blr_forward_side_by_side(rec, ctx, forward, kTokens);
    blr_backward_side_by_side(rec, ctx, backward, kTokens, options);
    rec.run();
  }
  const auto a = alone.results(), b = together.results();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("output " << i);
    CHECK(a[i] == b[i]);
    CHECK(a[i][0] != vkt::kPoison32);
  }
}

GPU_TEST("blr side by side: jobs sharing transients or an output are refused", "[blr]") {
  Setup s(ctx);
  BlrScratch other(ctx, s.layers[2], *s.shared[0]);  // layer 2 on layer 0's transients
  const std::vector<BlrForwardJob> shared_lanes{{&s.layers[0], &s.scratch[0], &s.x, &s.y[0]},
                                               {&s.layers[2], &other, &s.x, &s.y[2]}};
  Recorder rec(ctx);
  CHECK_THROWS_WITH(blr_forward_side_by_side(rec, ctx, shared_lanes, kTokens),
                    ContainsSubstring("jobs 0 and 1 share transients or an output"));
  const std::vector<BlrBackwardJob> shared_dx{
      {&s.layers[0], &s.scratch[0], &s.x, &s.dy[0], &s.dx[0], s.sign_grads[0]},
      {&s.layers[2], &s.scratch[2], &s.x, &s.dy[2], &s.dx[0], s.sign_grads[2]}};
  CHECK_THROWS_WITH(blr_backward_side_by_side(rec, ctx, shared_dx, kTokens),
                    ContainsSubstring("jobs 0 and 1 share transients or an output"));
  const std::vector<BlrForwardJob> missing{{&s.layers[0], nullptr, &s.x, &s.y[0]}};
  CHECK_THROWS_WITH(blr_forward_side_by_side(rec, ctx, missing, kTokens), ContainsSubstring("job 0 lacks"));
}
