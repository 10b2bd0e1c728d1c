// The GEMM in every B mode, on the cooperative-matrix and the plain path:
// against f64, exact on small integers, bitmaps ≡ expanded planes bit for
// bit, ldo/ocol block writes, accumulation, composites and refusals.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <bit>
#include <cstdlib>
#include <string>

#include "support/gemm_ref.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/record_pair.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;

namespace {

// One GEMM problem with its operands on the host and the device.
struct Problem {
  std::uint32_t m, n, k;
  GemmB mode;
  std::vector<float> act;    // [m][k], f16-exact
  std::vector<float> plane;  // [n][k], the B the mode encodes
  Buffer act_buf, b_buf;
};

Problem make_problem(Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k, GemmB mode, std::uint64_t seed,
                     bool small_ints = false) {
  Problem p{m, n, k, mode, {}, {}, {}, {}};
  p.act = small_ints ? vkt::random_small_ints(std::size_t{m} * k, seed, 3) : vkt::f16_rounded(vkt::random_floats(std::size_t{m} * k, seed, 2.0f));
  p.act_buf = ctx.upload(to_f16(p.act));
  if (mode == GemmB::plane) {
    p.plane = small_ints ? vkt::random_small_ints(std::size_t{n} * k, seed + 1, 3)
                         : vkt::f16_rounded(vkt::random_floats(std::size_t{n} * k, seed + 1, 1.0f));
    p.b_buf = ctx.upload(to_f16(p.plane));
  } else if (mode == GemmB::bits_n) {
    p.plane = vkt::random_signs(n, k, seed + 2);  // the plane's own rows
    p.b_buf = ctx.upload(vkt::pack_signs(p.plane, n, k));
  } else {
    const auto bt = vkt::random_signs(k, n, seed + 3);  // bitmap [k][n/32]
    p.plane = vkt::transpose(bt, k, n);
    p.b_buf = ctx.upload(vkt::pack_signs(bt, k, n));
  }
  return p;
}

std::vector<float> run_gemm(Context& ctx, const Problem& p, const GemmShape& shape, const GemmTile* tile = nullptr,
                            Buffer* keep = nullptr) {
  const std::uint32_t ldo = shape.ldo ? shape.ldo : p.n;
  Buffer out = ctx.buffer(std::size_t{p.m} * ldo * 4);
  out.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(gemm(ctx, p.act_buf, p.b_buf, p.mode, out, shape, tile));
  rec.run();
  auto v = out.download<float>();
  if (keep) *keep = std::move(out);
  return v;
}

// Outputs that differ from the exact product of p's operands (for
// small-integer problems, whose every f32 summation order is exact).
std::size_t inexact_outputs(const std::vector<float>& got, const Problem& p) {
  const auto want = vkt::matmul_nt(p.act, p.plane, p.m, p.n, p.k);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += got[i] != static_cast<float>(want[i]);
  return bad;
}

// The plane-mode twin of a bitmap problem: the same activations, the
// bitmap expanded to ±1 on the host.
Problem expanded_twin(Context& ctx, const Problem& bits) {
  return Problem{bits.m,    bits.n,     bits.k, GemmB::plane, bits.act, bits.plane, ctx.upload(to_f16(bits.act)),
                 ctx.upload(to_f16(bits.plane))};
}

// p with its operands copied into another context's buffers.
Problem on_context(Context& ctx, const Problem& p) {
  return Problem{p.m,      p.n,     p.k, p.mode, p.act, p.plane, ctx.upload(p.act_buf.download<std::byte>()),
                 ctx.upload(p.b_buf.download<std::byte>())};
}

// The library's tile for `kernel` on p's shape.
GemmTile tile_of(const Context& ctx, const Problem& p, GemmKernel kernel) {
  return gemm_tile_for(ctx, p.m, p.n, p.k, kernel);
}

// The kernels this device runs, best first (plain everywhere).
std::vector<GemmKernel> device_kernels(const Context& ctx) {
  std::vector<GemmKernel> out;
  for (const GemmKernel k : {GemmKernel::coopmat2, GemmKernel::coopmat, GemmKernel::plain}) {
    if (device_has_gemm_kernel(ctx.caps(), k)) out.push_back(k);
  }
  return out;
}

#define GENERATE_KERNEL() GENERATE_REF(Catch::Generators::from_range(device_kernels(ctx)))

}  // namespace

GPU_TEST("gemm matches f64 in every mode and on every kernel", "[gemm]") {
  const GemmB mode = GENERATE(GemmB::plane, GemmB::bits_n, GemmB::bits_t);
  const GemmKernel kernel = GENERATE_KERNEL();
  struct Shape {
    std::uint32_t m, n, k;
  };
  // partial row tiles, a column tile past n, a K tile past k, one row;
  // whole and partial tiles of the largest tiles
  const Shape shapes[] = {{1, 64, 64},   {70, 96, 160},   {129, 160, 96},
                          {33, 32, 32},  {512, 64, 64},   {300, 512, 192}};
  for (const Shape& s : shapes) {
    INFO(to_string(mode) << " " << to_string(kernel) << " " << s.m << "x" << s.n << "x" << s.k);
    const Problem p = make_problem(ctx, s.m, s.n, s.k, mode, 100 + s.m);
    const GemmShape shape{s.m, s.n, s.k, 0, 0, 0, 0.5f, false};
    const GemmTile tile = tile_of(ctx, p, kernel);
    INFO(tile.to_string());
    const auto got = run_gemm(ctx, p, shape, &tile);
    const auto want = vkt::matmul_nt(p.act, p.plane, s.m, s.n, s.k, 0.5);
    // f16-exact operands: only f32 accumulation separates the two
    CHECK(vkt::rel_error(got, want) < 1e-5);
  }
}

GPU_TEST("the default GEMM kernel and the policy's kernel switches", "[gemm]") {
  const Caps& c = ctx.caps();
  const GemmKernel best = c.coopmat && c.f16_fragment() ? GemmKernel::coopmat : GemmKernel::plain;
  const auto kernel_under = [](const GemmPolicy& policy) {
    return vkt::with_gemm_policy(policy, [](Context& policy_ctx) {
      CHECK(gemm_tile_for(policy_ctx, 512, 512, 512).kernel == default_gemm_kernel(policy_ctx));
      return default_gemm_kernel(policy_ctx);
    });
  };
  GemmPolicy policy;  // every switch at its default
  CHECK(kernel_under(policy) == best);
  policy.coopmat2 = true;
  CHECK(kernel_under(policy) == (c.coopmat2 && best == GemmKernel::coopmat ? GemmKernel::coopmat2 : best));
  policy.coopmat = false;  // no cooperative matrices of either kind
  CHECK(kernel_under(policy) == GemmKernel::plain);
}

GPU_TEST("gemm is exact on small integers", "[gemm]") {
  const GemmB mode = GENERATE(GemmB::plane, GemmB::bits_n, GemmB::bits_t);
  const GemmKernel kernel = GENERATE_KERNEL();
  const Problem p = make_problem(ctx, 77, 64, 96, mode, 7, true);
  const GemmTile tile = tile_of(ctx, p, kernel);
  const auto got = run_gemm(ctx, p, {77, 64, 96}, &tile);
  INFO(to_string(mode) << " " << to_string(kernel));
  CHECK(inexact_outputs(got, p) == 0);
}

GPU_TEST("gemm bitmaps equal the expanded plane bit for bit", "[gemm]") {
  const GemmKernel kernel = GENERATE_KERNEL();
  // partial tiles, and whole ones of the largest tiles
  for (const std::uint32_t m : {150u, 256u}) {
    const std::uint32_t n = m == 150 ? 96 : 512, k = 128;
    for (const GemmB mode : {GemmB::bits_n, GemmB::bits_t}) {
      const Problem bits = make_problem(ctx, m, n, k, mode, 21);
      const Problem plane = expanded_twin(ctx, bits);
      const GemmShape shape{m, n, k, 0, 0, 0, 0.25f, false};
      const GemmTile tile = tile_of(ctx, bits, kernel);
      const auto a = run_gemm(ctx, bits, shape, &tile);
      const auto b = run_gemm(ctx, plane, shape, &tile);
      INFO(to_string(mode) << " " << to_string(kernel) << " " << m << "x" << n << "x" << k);
      CHECK(vkt::count_bit_diffs(a, b) == 0);
    }
  }
}

GPU_TEST("without bitmap staging (expand + plane GEMM) the bitmap GEMM's bits", "[gemm]") {
  const std::uint32_t m = 129, n = 96, k = 160;
  GemmPolicy expand_first = ctx.gemm_policy();
  expand_first.bitmap_staging = false;
  vkt::with_gemm_policy(expand_first, [&](Context& expand_ctx) {
    for (const GemmB mode : {GemmB::bits_n, GemmB::bits_t}) {
      const Problem p = make_problem(ctx, m, n, k, mode, 25);
      const GemmShape shape{m, n, k, 0, 0, 0, 0.5f, false};
      const auto direct = run_gemm(ctx, p, shape);
      const Problem q = on_context(expand_ctx, p);
      Buffer scratch_out = expand_ctx.buffer(std::size_t{m} * n * 4);
      const Ops expanded = gemm(expand_ctx, q.act_buf, q.b_buf, mode, scratch_out, shape);
      const std::vector<float> via_plane = run_gemm(expand_ctx, q, shape);
      INFO(to_string(mode));
      CHECK(expanded.size() == 2);  // expand + plane GEMM
      CHECK(vkt::count_bit_diffs(direct, via_plane) == 0);
    }
  });
}

GPU_TEST("gemm with ldo/ocol writes only its column block", "[gemm]") {
  const std::uint32_t m = 70, n = 64, k = 96, ldo = 160, ocol = 48;
  const Problem p = make_problem(ctx, m, n, k, GemmB::bits_n, 31);
  const auto block = run_gemm(ctx, p, {m, n, k, 0, ldo, ocol, 1.0f, false});
  const auto dense = run_gemm(ctx, p, {m, n, k, 0, 0, 0, 1.0f, false});
  std::size_t touched = 0, wrong = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t c = 0; c < ldo; ++c) {
      const float v = block[i * ldo + c];
      if (c < ocol || c >= ocol + n) {
        touched += std::bit_cast<std::uint32_t>(v) != vkt::kPoison32;
      } else {
        wrong += std::bit_cast<std::uint32_t>(v) != std::bit_cast<std::uint32_t>(dense[i * n + c - ocol]);
      }
    }
  }
  CHECK(touched == 0);
  CHECK(wrong == 0);
}

GPU_TEST("gemm accumulates as out + product", "[gemm]") {
  const std::uint32_t m = 45, n = 32, k = 64;
  const Problem p = make_problem(ctx, m, n, k, GemmB::bits_t, 41);
  const auto prior = vkt::random_floats(std::size_t{m} * n, 42, 3.0f);
  const auto product = run_gemm(ctx, p, {m, n, k, 0, 0, 0, 0.125f, false});
  Buffer out = ctx.upload(prior);
  Recorder rec(ctx);
  rec.add(gemm(ctx, p.act_buf, p.b_buf, p.mode, out, {m, n, k, 0, 0, 0, 0.125f, true}));
  rec.run();
  const auto got = out.download<float>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != prior[i] + product[i];
  CHECK(wrong == 0);
}

GPU_TEST("split-K: every K range once, bitmaps ≡ plane, ldo/ocol, accumulate, deterministic", "[gemm]") {
  const GemmKernel kernel = GENERATE_KERNEL();
  // K of 10 tiles of 32 (5 of 64): 3 layers of 4, 4, 2 tiles; 16 asked
  // gives 10 layers (5)
  const std::uint32_t m = 70, n = 64, k = 320, ldo = 160, ocol = 48;
  const GemmTile tile_value = gemm_tile_for(ctx, m, n, k, kernel);
  const GemmTile* tile = &tile_value;
  for (const std::uint32_t splits : {2u, 3u, 16u}) {
    for (const GemmB mode : {GemmB::plane, GemmB::bits_n, GemmB::bits_t}) {
      INFO(to_string(mode) << " " << to_string(kernel) << ", " << splits << " layers");
      // small integers: every order of summation gives the exact sum, so a
      // K range summed twice or missed shows as a wrong value
      const Problem ints = make_problem(ctx, m, n, k, mode, 70 + splits, true);
      CHECK(inexact_outputs(run_gemm(ctx, ints, {m, n, k, 0, 0, 0, 1.0f, false, splits}, tile), ints) == 0);

      const Problem p = make_problem(ctx, m, n, k, mode, 80 + splits);
      const GemmShape shape{m, n, k, 0, 0, 0, 0.5f, false, splits};
      const auto got = run_gemm(ctx, p, shape, tile);
      CHECK(vkt::rel_error(got, vkt::matmul_nt(p.act, p.plane, m, n, k, 0.5)) < 1e-5);
      CHECK(vkt::count_bit_diffs(got, run_gemm(ctx, p, shape, tile)) == 0);  // run after run
      if (mode != GemmB::plane) {  // the bitmap expanded on the host, the same layers
        CHECK(vkt::count_bit_diffs(got, run_gemm(ctx, expanded_twin(ctx, p), shape, tile)) == 0);
      }

      // a column block of a wider output, accumulated onto a prior value:
      // out = prior + sum·oscale, the columns outside the block untouched
      auto prior = vkt::random_floats(std::size_t{m} * ldo, 90 + splits, 3.0f);
      for (std::uint32_t i = 0; i < m; ++i) {
        for (std::uint32_t c = 0; c < ldo; ++c) {
          if (c < ocol || c >= ocol + n) prior[i * ldo + c] = std::bit_cast<float>(vkt::kPoison32);
        }
      }
      Buffer out = ctx.upload(prior);
      Recorder rec(ctx);
      rec.add(gemm(ctx, p.act_buf, p.b_buf, p.mode, out, {m, n, k, 0, ldo, ocol, 0.5f, true, splits}, tile));
      rec.run();
      const auto acc = out.download<float>();
      std::size_t touched = 0, wrong = 0;
      for (std::uint32_t i = 0; i < m; ++i) {
        for (std::uint32_t c = 0; c < ldo; ++c) {
          const float v = acc[i * ldo + c];
          if (c < ocol || c >= ocol + n) {
            touched += std::bit_cast<std::uint32_t>(v) != vkt::kPoison32;
          } else {
            // got = sum·0.5 exactly as the epilogue rounds it
            wrong += v != prior[i * ldo + c] + got[i * n + c - ocol];
          }
        }
      }
      CHECK(touched == 0);
      CHECK(wrong == 0);
    }
  }
}

GPU_TEST("K tiles of 16: half bitmap words, f64, bitmaps ≡ plane, split-K layers from mid-word", "[gemm]") {
  // bits_n reads 16 signs per word read (a word's low or high half); the
  // split-K layers of 3 K tiles start at k = 48, 96, ...: on odd halves
  // (the cooperative-matrix kernel: the plain one's 256 invocations need
  // K tiles of 32 to share the loads)
  const GemmKernel kernel = GemmKernel::coopmat;
  if (!device_has_gemm_kernel(ctx.caps(), kernel)) return;  // (lavapipe and the H200 have it)
  const std::uint32_t m = 70, n = 96, k = 160;
  GemmTile tile = gemm_tile_for(ctx, m, n, k, kernel);
  tile.bk = 16;
  for (const std::uint32_t stages : {1u, 2u}) {
    tile.stages = stages;
    INFO(tile.to_string());
    REQUIRE_NOTHROW(check_gemm_tile(ctx, tile));
    for (const std::uint32_t splits : {1u, 4u}) {
      for (const GemmB mode : {GemmB::plane, GemmB::bits_n, GemmB::bits_t}) {
        INFO(to_string(mode) << ", " << splits << " layers");
        const Problem ints = make_problem(ctx, m, n, k, mode, 110 + splits, true);
        CHECK(inexact_outputs(run_gemm(ctx, ints, {m, n, k, 0, 0, 0, 1.0f, false, splits}, &tile), ints) == 0);

        const Problem p = make_problem(ctx, m, n, k, mode, 120 + splits);
        const GemmShape shape{m, n, k, 0, 0, 0, 0.5f, false, splits};
        const auto got = run_gemm(ctx, p, shape, &tile);
        CHECK(vkt::rel_error(got, vkt::matmul_nt(p.act, p.plane, m, n, k, 0.5)) < 1e-5);
        if (mode != GemmB::plane) {
          CHECK(vkt::count_bit_diffs(got, run_gemm(ctx, expanded_twin(ctx, p), shape, &tile)) == 0);
        }
      }
    }
  }
}

GPU_TEST("K tiles prefetched two ahead equal one ahead bit for bit; bad prefetch refused", "[gemm]") {
  // 1, 2, 3 and 5 K tiles (the loop steps two tiles at a time, each with
  // its own register set), alone and in split-K layers, one and two stages
  const GemmKernel kernel = GemmKernel::coopmat;
  if (!device_has_gemm_kernel(ctx.caps(), kernel)) return;  // (lavapipe and the H200 have it)
  const std::uint32_t m = 70, n = 96;
  GemmTile tile = gemm_tile_for(ctx, m, n, 512, kernel);
  for (const std::uint32_t stages : {1u, 2u}) {
    tile.stages = stages;
    for (const std::uint32_t k_tiles : {1u, 2u, 3u, 5u}) {
      const std::uint32_t k = k_tiles * tile.bk;
      for (const std::uint32_t splits : {1u, 2u}) {
        if (splits > 1 && k_tiles < 2) continue;
        for (const GemmB mode : {GemmB::plane, GemmB::bits_n, GemmB::bits_t}) {
          const Problem p = make_problem(ctx, m, n, k, mode, 130 + k_tiles);
          const GemmShape shape{m, n, k, 0, 0, 0, 0.5f, false, splits};
          tile.prefetch = 1;
          const auto one = run_gemm(ctx, p, shape, &tile);
          tile.prefetch = 2;
          INFO(tile.to_string() << ", " << to_string(mode) << ", k " << k << ", " << splits << " layers");
          const auto two = run_gemm(ctx, p, shape, &tile);
          CHECK(vkt::rel_error(two, vkt::matmul_nt(p.act, p.plane, m, n, k, 0.5)) < 1e-5);
          CHECK(vkt::count_bit_diffs(one, two) == 0);
        }
      }
    }
  }
  tile.prefetch = 3;
  CHECK_THROWS_WITH(check_gemm_tile(ctx, tile), Catch::Matchers::ContainsSubstring("prefetch must be 1 or 2"));
  GemmTile plain = gemm_tile_for(ctx, m, n, 512, GemmKernel::plain);
  plain.prefetch = 2;
  CHECK_THROWS_WITH(check_gemm_tile(ctx, plain), Catch::Matchers::ContainsSubstring("prefetch is the cooperative-matrix kernel's"));
}

GPU_TEST("bits_n words read four K tiles at a time equal one at a time bit for bit", "[gemm]") {
  // K of 4 to 20 tiles of 32 (groups advanced 0 to 4 times), alone and in
  // split-K layers whose first words are multiples of 4 (2 layers of 128 or
  // 256 of K: grouped) or not (2 layers of 64, 192 or 320: a word at a
  // time, the same kernel as without GemmPolicy::word_groups); one and two
  // stages; the next tile or the next two in flight
  const GemmKernel kernel = GemmKernel::coopmat;
  if (!device_has_gemm_kernel(ctx.caps(), kernel)) return;  // (lavapipe and the H200 have it)
  const std::uint32_t m = 70, n = 96;
  GemmTile tile = gemm_tile_for(ctx, m, n, 512, kernel);
  REQUIRE(tile.bk == 32);
  GemmPolicy by_word = ctx.gemm_policy();
  by_word.word_groups = false;
  vkt::with_gemm_policy(by_word, [&](Context& word_ctx) {
    Buffer out = ctx.buffer(std::size_t{m} * n * 4), word_out = word_ctx.buffer(std::size_t{m} * n * 4);
    // each context's kernel of a K that is never grouped (not a multiple of 128)
    const auto ungrouped = [&](Context& c, const Problem& p, const Buffer& o) {
      return gemm(c, p.act_buf, p.b_buf, GemmB::bits_n, o, {m, n, 96, 0, 0, 0, 0.5f, false, 1}, &tile)[0].kernel;
    };
    for (const std::uint32_t stages : {1u, 2u}) {
      tile.stages = stages;
      for (const std::uint32_t prefetch : {1u, 2u}) {
        tile.prefetch = prefetch;
        for (const std::uint32_t k : {128u, 256u, 384u, 512u, 640u}) {
          for (const std::uint32_t splits : {1u, 2u}) {
            const Problem p = make_problem(ctx, m, n, k, GemmB::bits_n, 140 + k / 32);
            const Problem q = on_context(word_ctx, p);
            const GemmShape shape{m, n, k, 0, 0, 0, 0.5f, false, splits};
            const std::uint32_t layer_k = (k / 32 + splits - 1) / splits * 32;
            const bool grouped = layer_k % 128 == 0;
            INFO(tile.to_string() << ", k " << k << ", " << splits << " layers");
            const Ops grouped_ops = gemm(ctx, p.act_buf, p.b_buf, GemmB::bits_n, out, shape, &tile);
            const auto got = run_gemm(ctx, p, shape, &tile);
            CHECK(vkt::rel_error(got, vkt::matmul_nt(p.act, p.plane, m, n, k, 0.5)) < 1e-5);
            // another pipeline where grouped; a word at a time under the policy
            CHECK((grouped_ops[0].kernel != ungrouped(ctx, p, out)) == grouped);
            const Ops word_ops = gemm(word_ctx, q.act_buf, q.b_buf, GemmB::bits_n, word_out, shape, &tile);
            CHECK(word_ops[0].kernel == ungrouped(word_ctx, q, word_out));
            CHECK(vkt::count_bit_diffs(got, run_gemm(word_ctx, q, shape, &tile)) == 0);
          }
        }
      }
    }
  });
}

GPU_TEST("the policy's tile is every GEMM's, on whichever kernel it runs", "[gemm]") {
  GemmPolicy policy = ctx.gemm_policy();
  policy.tile = GemmTile{64, 64, 32, 32, 32, 1, GemmKernel::plain, 2};
  vkt::with_gemm_policy(policy, [&](Context& tile_ctx) {
    const GemmTile t = gemm_tile_for(tile_ctx, 256, 256, 256, GemmKernel::coopmat);
    CHECK(t == GemmTile{64, 64, 32, 32, 32, 1, GemmKernel::coopmat, 2});
    CHECK(t.to_string().find("prefetch 2") != std::string::npos);
    CHECK(gemm_tile_for(tile_ctx, 16, 16, 16).kernel == default_gemm_kernel(tile_ctx));
    CHECK(gemm_tile_for(tile_ctx, 16, 16, 16).bm == 64);
  });
}

GPU_TEST("split-K layers: automatic choice, forced choice, dispatches", "[gemm]") {
  const Problem p = make_problem(ctx, 64, 64, 4096, GemmB::plane, 5);
  Buffer out = ctx.buffer(64 * 64 * 4);
  CHECK(gemm(ctx, p.act_buf, p.b_buf, p.mode, out, {64, 64, 4096, 0, 0, 0, 1.0f, false, 1}).size() == 1);
  CHECK(gemm(ctx, p.act_buf, p.b_buf, p.mode, out, {64, 64, 4096, 0, 0, 0, 1.0f, false, 4}).size() == 2);
  const GemmTile tile = gemm_tile_for(ctx, 64, 64, 4096);
  const std::uint32_t automatic = gemm_splits_for(ctx, tile, 64, 64, 4096);
  const auto f = ctx.caps().f16_fragment();
  if (tile.kernel != GemmKernel::plain && f && f->m >= 16) {
    CHECK(automatic == 8);  // 1 tile: 256 groups wanted, 4096 / 512 layers at most
  } else {
    CHECK(automatic == 1);  // small fragments, the plain kernel: never split by itself
  }
  CHECK(gemm_splits_for(ctx, tile, 4096, 4096, 4096) == 1);  // enough tiles
  GemmPolicy policy = ctx.gemm_policy();
  policy.k_splits = 3;  // every automatic choice, none that a shape makes
  vkt::with_gemm_policy(policy, [&](Context& split_ctx) {
    CHECK(gemm_splits_for(split_ctx, tile, 4096, 4096, 4096) == 3);
    const Problem q = on_context(split_ctx, p);
    Buffer split_out = split_ctx.buffer(64 * 64 * 4);
    CHECK(gemm(split_ctx, q.act_buf, q.b_buf, q.mode, split_out, {64, 64, 4096, 0, 0, 0, 1.0f, false}).size() == 2);
    CHECK(gemm(split_ctx, q.act_buf, q.b_buf, q.mode, split_out, {64, 64, 4096, 0, 0, 0, 1.0f, false, 1}).size() == 1);
  });
}

GPU_TEST("split-K GEMMs side by side get their own workspaces, share their barriers and keep their bits", "[gemm]") {
  // two products of one size, 4 layers each, with no data in common: one
  // after the other, the second cannot take the first's workspace before a
  // barrier, so it gets its own; side by side, their layers and then their
  // reduces run together
  const std::uint32_t m = 96, n = 64, k = 512;
  const std::uint64_t workspace = std::uint64_t{4} * m * n * 4;
  const Problem p0 = make_problem(ctx, m, n, k, GemmB::bits_n, 31), p1 = make_problem(ctx, m, n, k, GemmB::plane, 32);
  const auto alone0 = run_gemm(ctx, p0, {.m = m, .n = n, .k = k, .k_splits = 4});
  const auto alone1 = run_gemm(ctx, p1, {.m = m, .n = n, .k = k, .k_splits = 4});
  auto together = [&](bool side_by_side, std::uint32_t& barriers) {
    Buffer out0 = ctx.buffer(std::size_t{m} * n * 4), out1 = ctx.buffer(std::size_t{m} * n * 4);
    out0.fill(vkt::kPoison32);
    out1.fill(vkt::kPoison32);
    const Ops g0 = gemm(ctx, p0.act_buf, p0.b_buf, p0.mode, out0, {.m = m, .n = n, .k = k, .k_splits = 4});
    const Ops g1 = gemm(ctx, p1.act_buf, p1.b_buf, p1.mode, out1, {.m = m, .n = n, .k = k, .k_splits = 4});
    Recorder rec(ctx);
    barriers = vkt::record_pair(rec, g0, g1, side_by_side);
    CHECK(rec.transient_bytes() == 2 * workspace);
    rec.run();
    return std::pair{out0.download<float>(), out1.download<float>()};
  };
  std::uint32_t in_turn = 0, side_by_side = 0;
  const auto [a0, a1] = together(false, in_turn);
  const auto [b0, b1] = together(true, side_by_side);
  CHECK(in_turn == 2);       // layers 0 | reduce 0, layers 1 | reduce 1
  CHECK(side_by_side == 1);  // layers 0 and 1 | reduces
  CHECK(vkt::count_bit_diffs(a0, alone0) == 0);
  CHECK(vkt::count_bit_diffs(a1, alone1) == 0);
  CHECK(vkt::count_bit_diffs(b0, alone0) == 0);
  CHECK(vkt::count_bit_diffs(b1, alone1) == 0);
  CHECK(vkt::rel_error(b1, vkt::matmul_nt(p1.act, p1.plane, m, n, k)) < 1e-5);

  // a GEMM whose input the first one's output is waits for it: after that
  // barrier it takes the first's workspace (its own is smaller: K = 64 is 2
  // layers of whole K tiles at most)
  Buffer out = ctx.buffer(std::size_t{m} * n * 4), x16 = ctx.buffer(std::size_t{m} * n * 2);
  Buffer chained = ctx.buffer(std::size_t{m} * n * 4), again = ctx.buffer(std::size_t{m} * n * 4);
  const Problem p2 = make_problem(ctx, m, n, n, GemmB::plane, 33);
  const GemmShape second{.m = m, .n = n, .k = n, .k_splits = 4};
  Recorder chain(ctx);
  chain.add(gemm(ctx, p0.act_buf, p0.b_buf, p0.mode, out, {.m = m, .n = n, .k = k, .k_splits = 4}));
  chain.add(ops::cvt(ctx, out, x16, m, n, 1.0f));
  chain.add(gemm(ctx, x16, p2.b_buf, p2.mode, chained, second));
  CHECK(chain.transient_bytes() == workspace);
  chain.run();
  Recorder alone2(ctx);
  alone2.add(gemm(ctx, x16, p2.b_buf, p2.mode, again, second));
  alone2.run();
  CHECK(vkt::count_bit_diffs(out.download<float>(), alone0) == 0);
  CHECK(vkt::count_bit_diffs(chained.download<float>(), again.download<float>()) == 0);

  // the automatic choice shares the device among the GEMMs of one shape that the work holds
  const GemmTile small = gemm_tile_for(ctx, 64, 64, 4096), large = gemm_tile_for(ctx, 4096, 512, 1024);
  const auto f = ctx.caps().f16_fragment();
  if (large.kernel != GemmKernel::plain && f && f->m >= 16) {
    REQUIRE(large.bm * large.bn == 128 * 128);
    CHECK(gemm_splits_for(ctx, small, 64, 64, 4096, 2) == 8);    // 2 tiles: 128 groups each, K caps at 8
    CHECK(gemm_splits_for(ctx, large, 4096, 512, 1024, 1) == 2);  // 128 tiles alone
    CHECK(gemm_splits_for(ctx, large, 4096, 512, 1024, 2) == 1);  // 2 × 128 tiles fill it
  } else {
    CHECK(gemm_splits_for(ctx, small, 64, 64, 4096, 2) == 1);
    CHECK(gemm_splits_for(ctx, large, 4096, 512, 1024, 2) == 1);
  }
}

GPU_TEST("gemm on f32 data staged by cvt stays within f16 tolerance", "[gemm]") {
  const std::uint32_t m = 96, n = 64, k = 256;
  const auto x = vkt::random_floats(std::size_t{m} * k, 51, 1.0f);
  const auto w = vkt::random_floats(std::size_t{n} * k, 52, 1.0f);
  Buffer bx = ctx.upload(x), plane = ctx.upload(to_f16(w)), act16 = ctx.buffer(std::size_t{m} * k * 2),
         y = ctx.buffer(std::size_t{m} * n * 4);
  y.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(plane_linear(ctx, plane, bx, act16, y, m, n, k, 64.0f));
  rec.run();
  const auto want = vkt::matmul_nt(x, vkt::f16_rounded(w), m, n, k);
  CHECK(vkt::rel_error(y.download<float>(), want) < 3e-3);
}

GPU_TEST("weight_grad and gram_acc match f64", "[gemm]") {
  const std::uint32_t ntok = 70, m = 48, k = 80;
  const auto x = vkt::random_floats(std::size_t{ntok} * k, 61, 1.0f);
  const auto dy = vkt::random_floats(std::size_t{ntok} * m, 62, 1e-3f);
  const std::uint32_t t32 = 96, m32 = 64, k32 = 96;
  Buffer bx = ctx.upload(x), bdy = ctx.upload(dy), xt = ctx.buffer(std::size_t{k32} * t32 * 2),
         dyt = ctx.buffer(std::size_t{m32} * t32 * 2), dw = ctx.buffer(std::size_t{m} * k * 4);
  dw.fill(vkt::kPoison32);
  const auto g0 = vkt::random_floats(std::size_t{k} * k, 63, 1.0f);
  Buffer gram = ctx.upload(g0);
  Recorder rec(ctx);
  rec.add(weight_grad(ctx, bx, bdy, xt, dyt, dw, ntok, m, k, 1024.0f));
  rec.add(gram_acc(ctx, bx, xt, gram, ntok, k));
  rec.run();
  std::vector<double> want_dw(std::size_t{m} * k, 0.0), want_gram(g0.begin(), g0.end());
  for (std::uint32_t t = 0; t < ntok; ++t) {
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < k; ++j) want_dw[i * k + j] += double(dy[t * m + i]) * x[t * k + j];
    }
    for (std::uint32_t i = 0; i < k; ++i) {
      for (std::uint32_t j = 0; j < k; ++j) want_gram[i * k + j] += double(x[t * k + i]) * x[t * k + j];
    }
  }
  CHECK(vkt::rel_error(dw.download<float>(), want_dw) < 3e-3);
  CHECK(vkt::rel_error(gram.download<float>(), want_gram) < 3e-3);
}

GPU_TEST("gemm refuses bad shapes, small buffers and impossible tiles", "[gemm][errors]") {
  Buffer act = ctx.buffer(64 * 64 * 2), b = ctx.buffer(64 * 64 * 2), out = ctx.buffer(64 * 64 * 4);
  auto message = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {64, 40, 64}); }).find("n = 40") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {64, 64, 24}); }).find("k = 24") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::bits_n, out, {64, 64, 48}); }).find("bits_n") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::bits_t, out, {64, 48, 64}); }).find("bits_t") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {65, 64, 64}); }).find("act") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {0, 64, 64}); }).find("m = 0") != std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {32, 64, 64, 0, 64, 16}); }).find("ldo") !=
        std::string::npos);
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {64, 64, 64, 0, 0, 0, 1.0f, false, 65}); })
            .find("k_splits = 65") != std::string::npos);
  const GemmTile huge{256, 256, 64, 64, 64, 2, ctx.caps().coopmat ? GemmKernel::coopmat : GemmKernel::plain};
  CHECK(message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {64, 64, 64}, &huge); }).find("shared memory") !=
        std::string::npos);
  // a workgroup-scope tile of 4096 invocations; where the kernel is missing,
  // the refusal says so
  const GemmTile crowded{128, 256, 64, 16, 16, 1, GemmKernel::coopmat2};
  const std::string why = message([&] { (void)gemm(ctx, act, b, GemmB::plane, out, {64, 64, 64}, &crowded); });
  CHECK(why.find(ctx.caps().coopmat2 ? "invocations" : "no VK_NV_cooperative_matrix2") != std::string::npos);
}
