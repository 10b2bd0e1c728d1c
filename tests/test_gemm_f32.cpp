// The f32 GEMM: every transpose against the host's chain of fma over k (bit
// for bit) and an f64 product (the error bound), odd sizes, strides,
// offsets, alpha and accumulation on poisoned outputs; the same bits
// whatever the tile and run after run; a Gram matrix from one buffer; the
// tile choice; the builder's refusals.
//
// The device's fma() is fused on GPUs with an fma instruction and a rounded
// product then a rounded sum on lavapipe (measured): the chain checks accept
// either, but one of them for every element.
#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using ops::GemmF32;
using ops::GemmF32Tile;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr double kEps = 0x1p-23;  // f32 machine epsilon

// f32 products and sums each rounded once, whatever the host compiler
// contracts (an f64 holds an f32 product exactly; rounding an f64 sum of
// two f32 to f32 rounds correctly).
float mul_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }
float add_f32(float a, float b) { return static_cast<float>(static_cast<double>(a) + b); }

// The next link of an output's chain, as a device evaluates fma(): fused, or
// the product rounded before the sum.
float link(bool fused, float x, float y, float acc) {
  return fused ? std::fma(x, y, acc) : add_f32(acc, mul_f32(x, y));
}

// Mismatches of `got` with the chains of both kinds: one of them must be 0.
struct ChainMisses {
  std::size_t fused = 0, unfused = 0;
  std::size_t best() const { return std::min(fused, unfused); }
};

// One call: its shape and where its blocks sit (ld 0 = packed).
struct Case {
  std::uint32_t m, n, k;
  std::uint32_t lda_pad = 0, ldb_pad = 0, ldo_pad = 0;  // leading dims = packed + pad
  std::uint64_t a_offset = 0, b_offset = 0, out_offset = 0;
  float alpha = 1.0f;
  bool accumulate = false;
};

// The operands and the output buffer of a Case, on the host and the device.
// Every element of A and B, gaps between rows included, is random (a read of
// a wrong element shows); out is poison except the block, which holds
// `init` when accumulating.
struct Problem {
  GemmF32 shape;
  std::vector<float> a, b, init;
  std::uint32_t lda, ldb, ldo;
  std::size_t out_floats;
  Buffer da, db, dout;

  float op_a(std::uint32_t i, std::uint32_t p) const {
    return a[shape.a_offset + (shape.trans_a ? std::size_t{p} * lda + i : std::size_t{i} * lda + p)];
  }
  float op_b(std::uint32_t p, std::uint32_t j) const {
    return b[shape.b_offset + (shape.trans_b ? std::size_t{j} * ldb + p : std::size_t{p} * ldb + j)];
  }
  std::size_t out_at(std::uint32_t i, std::uint32_t j) const { return shape.out_offset + std::size_t{i} * ldo + j; }
};

Problem make_problem(Context& ctx, const Case& c, bool trans_a, bool trans_b, std::uint64_t seed) {
  Problem p;
  p.lda = (trans_a ? c.m : c.k) + c.lda_pad;
  p.ldb = (trans_b ? c.k : c.n) + c.ldb_pad;
  p.ldo = c.n + c.ldo_pad;
  p.shape = {c.m, c.n, c.k, trans_a, trans_b, c.lda_pad ? p.lda : 0, c.ldb_pad ? p.ldb : 0, c.ldo_pad ? p.ldo : 0,
             c.a_offset, c.b_offset, c.out_offset, c.alpha, c.accumulate};
  const std::size_t a_rows = trans_a ? c.k : c.m, b_rows = trans_b ? c.n : c.k;
  p.a = vkt::random_floats(c.a_offset + a_rows * p.lda + 3, seed);
  p.b = vkt::random_floats(c.b_offset + b_rows * p.ldb + 3, seed + 1);
  p.out_floats = c.out_offset + std::size_t{c.m} * p.ldo + 5;
  p.init = vkt::random_floats(p.out_floats, seed + 2, 4.0f);
  p.da = ctx.upload(p.a);
  p.db = ctx.upload(p.b);
  std::vector<std::uint32_t> out(p.out_floats, vkt::kPoison32);
  for (std::uint32_t i = 0; c.accumulate && i < c.m; ++i) {
    for (std::uint32_t j = 0; j < c.n; ++j) out[p.out_at(i, j)] = std::bit_cast<std::uint32_t>(p.init[p.out_at(i, j)]);
  }
  p.dout = ctx.upload(out);
  return p;
}

std::vector<std::uint32_t> run(Context& ctx, Problem& p, const GemmF32Tile* tile = nullptr) {
  Recorder rec(ctx);
  rec.add(ops::gemm_f32(ctx, p.da, p.db, p.dout, p.shape, tile));
  rec.run();
  return p.dout.download<std::uint32_t>(p.out_floats);
}

// Checks every element of `got`: the block equals the host's chain (fma or
// unfused) bit for bit and lies within (k + 2)·eps·(|alpha|·Σ|a·b| + |init|)
// of the f64 product; everything else is still poison.
void check(const Problem& p, const std::vector<std::uint32_t>& got) {
  const GemmF32& s = p.shape;
  std::vector<bool> in_block(p.out_floats, false);
  ChainMisses misses;
  std::size_t past_bound = 0, touched = 0;
  double worst = 0;
  for (std::uint32_t i = 0; i < s.m; ++i) {
    for (std::uint32_t j = 0; j < s.n; ++j) {
      const std::size_t o = p.out_at(i, j);
      in_block[o] = true;
      for (const bool fused : {true, false}) {
        float chain = 0.0f;
        for (std::uint32_t q = 0; q < s.k; ++q) chain = link(fused, p.op_a(i, q), p.op_b(q, j), chain);
        float want = mul_f32(s.alpha, chain);
        if (s.accumulate) want = add_f32(p.init[o], want);
        (fused ? misses.fused : misses.unfused) += got[o] != std::bit_cast<std::uint32_t>(want);
      }
      double exact = 0, magnitude = 0;
      for (std::uint32_t q = 0; q < s.k; ++q) {
        exact += double(p.op_a(i, q)) * p.op_b(q, j);
        magnitude += std::abs(double(p.op_a(i, q)) * p.op_b(q, j));
      }
      const double init = s.accumulate ? p.init[o] : 0.0;
      const double err = std::abs(std::bit_cast<float>(got[o]) - (init + s.alpha * exact));
      const double bound = (s.k + 2) * kEps * (std::abs(s.alpha) * magnitude + std::abs(init));
      past_bound += !(err <= bound);
      worst = std::max(worst, err / bound);
    }
  }
  for (std::size_t o = 0; o < p.out_floats; ++o) touched += !in_block[o] && got[o] != vkt::kPoison32;
  INFO("m " << s.m << " n " << s.n << " k " << s.k << " trans_a " << s.trans_a << " trans_b " << s.trans_b
            << " alpha " << s.alpha << " accumulate " << s.accumulate << ": worst error / bound " << worst
            << "; misses of the fused chain " << misses.fused << ", of the unfused " << misses.unfused);
  CHECK(misses.best() == 0);
  CHECK(past_bound == 0);
  CHECK(touched == 0);
}

const bool kTransposes[4][2] = {{false, false}, {true, false}, {false, true}, {true, true}};

}  // namespace

GPU_TEST("gemm_f32 is the f32 chain of fma within the f64 bound: transposes, strides, offsets", "[ops][gemm_f32]") {
  const Case cases[] = {
      {1, 1, 1},
      {17, 33, 100, 3, 1, 2, 5, 7, 11, -0.75f, true},
      {100, 17, 257, 0, 0, 0, 1, 0, 3, 2.0f, false},
      {33, 1, 17, 1, 4, 1, 2, 1003, 9, 1.0f, true},
      {257, 65, 33, 5, 2, 7, 13, 2, 1001, 0.5f, true},
      {1, 257, 64, 0, 3, 0, 0, 6, 0, -1.0f, false},
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    for (const auto& t : kTransposes) {
      Problem p = make_problem(ctx, c, t[0], t[1], seed += 3);
      check(p, run(ctx, p));
    }
  }
}

GPU_TEST("gemm_f32 gives the same bits whatever the tile, and run after run", "[ops][gemm_f32][determinism]") {
  // K = 77: a partial last K tile of 5 (BK 8, 6, 24), 13 (BK 16), 29 (BK 48)
  const GemmF32Tile tiles[] = {
      {128, 128, 8, 8, 8}, {64, 64, 16, 8, 8}, {64, 64, 8, 4, 4}, {32, 32, 8, 4, 4},
      {32, 32, 6, 4, 4},   {16, 32, 24, 4, 8}, {32, 16, 48, 8, 4}};
  for (const bool accumulate : {false, true}) {
    for (const auto& t : kTransposes) {
      const Case c{130, 75, 77, 1, 0, 2, 3, 5, 7, 1.5f, accumulate};
      Problem p = make_problem(ctx, c, t[0], t[1], accumulate ? 300 : 200);
      const auto initial = p.dout.download<std::uint32_t>(p.out_floats);
      const auto first = run(ctx, p);
      check(p, first);
      for (const GemmF32Tile& tile : tiles) {
        p.dout.upload(initial);
        INFO("tile " << tile.to_string() << " trans_a " << t[0] << " trans_b " << t[1] << " accumulate " << accumulate);
        CHECK(vkt::count_bit_diffs(run(ctx, p, &tile), first) == 0);
      }
      p.dout.upload(initial);
      CHECK(vkt::count_bit_diffs(run(ctx, p), first) == 0);
    }
  }
}

GPU_TEST("gemm_f32 makes a Gram matrix AᵀA from one buffer, symmetric bit for bit", "[ops][gemm_f32]") {
  const std::uint32_t rows = 300, cols = 37;
  const auto y = vkt::random_floats(std::size_t{rows} * cols, 400);
  Buffer dy = ctx.upload(y), gram = ctx.buffer(cols * cols * 4);
  gram.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::gemm_f32(ctx, dy, dy, gram, {.m = cols, .n = cols, .k = rows, .trans_a = true}));
  rec.run();
  const auto g = gram.download<float>(cols * cols);
  ChainMisses misses;
  std::size_t asymmetric = 0;
  for (std::uint32_t i = 0; i < cols; ++i) {
    for (std::uint32_t j = 0; j < cols; ++j) {
      const auto got = std::bit_cast<std::uint32_t>(g[i * cols + j]);
      for (const bool fused : {true, false}) {
        float chain = 0.0f;
        for (std::uint32_t t = 0; t < rows; ++t) chain = link(fused, y[t * cols + i], y[t * cols + j], chain);
        (fused ? misses.fused : misses.unfused) += got != std::bit_cast<std::uint32_t>(chain);
      }
      asymmetric += got != std::bit_cast<std::uint32_t>(g[j * cols + i]);
    }
  }
  CHECK(misses.best() == 0);
  CHECK(asymmetric == 0);
}

GPU_TEST("gemm_f32 tiles: by device, by the GEMM policy, impossible ones refused", "[ops][gemm_f32][errors]") {
  const GemmF32Tile chosen = ops::gemm_f32_tile_for(ctx, 4096, 4096);
  CHECK_NOTHROW(ops::check_gemm_f32_tile(ctx, chosen));
  if (ctx.caps().device_type == "discrete") {
    CHECK(chosen.to_string() == "64,64,8,4,4");
    CHECK(ops::gemm_f32_tile_for(ctx, 64, 4096).to_string() == "64,64,8,4,4");
  } else {
    CHECK(chosen.to_string() == "32,32,8,4,4");
  }
  GemmPolicy policy = ctx.gemm_policy();
  policy.f32_tile = GemmF32Tile{64, 32, 4, 8, 4};
  vkt::with_gemm_policy(policy, [](Context& tile_ctx) {
    CHECK(ops::gemm_f32_tile_for(tile_ctx, 100, 100).to_string() == "64,32,4,8,4");
    CHECK(ops::gemm_f32_tile_for(tile_ctx, 4096, 4096).to_string() == "64,32,4,8,4");
  });
  const auto problem = [&](GemmF32Tile t) {
    try {
      ops::check_gemm_f32_tile(ctx, t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(problem({32, 32, 0, 4, 4}), ContainsSubstring("zero size"));
  CHECK_THAT(problem({32, 32, 8, 2, 4}), ContainsSubstring("tm and tn must be 4 or 8"));
  CHECK_THAT(problem({36, 32, 8, 8, 4}), ContainsSubstring("multiples of tm, tn"));
  CHECK_THAT(problem({256, 256, 8, 4, 4}), ContainsSubstring("invocations exceed"));
  CHECK_THAT(problem({32, 32, 3, 4, 4}), ContainsSubstring("split bm·bk and bn·bk evenly"));
  CHECK_THAT(problem({128, 128, 512, 8, 8}), ContainsSubstring("bytes of shared memory"));
}

GPU_TEST("gemm_f32 refuses bad shapes, short strides, small or overlapping buffers", "[ops][gemm_f32][errors]") {
  Buffer a = ctx.buffer(64 * 4), b = ctx.buffer(64 * 4), out = ctx.buffer(64 * 4), big = ctx.buffer(1024 * 4);
  Buffer wide = ctx.buffer(65536 * 8 * 4);
  const auto message = [&](const Buffer& x, const Buffer& y, const Buffer& o, GemmF32 s) {
    try {
      (void)ops::gemm_f32(ctx, x, y, o, s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message(a, b, out, {.m = 0, .n = 8, .k = 8}), ContainsSubstring("gemm_f32: m = 0"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 0, .k = 8}), ContainsSubstring("gemm_f32: n = 0"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 0}), ContainsSubstring("gemm_f32: k = 0"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 8, .lda = 7}),
             ContainsSubstring("gemm_f32: lda = 7 is less than the stored row length 8"));
  CHECK_THAT(message(a, b, out, {.m = 4, .n = 8, .k = 8, .trans_a = true, .lda = 3}),
             ContainsSubstring("gemm_f32: lda = 3 is less than the stored row length 4"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 4, .k = 8, .trans_b = true, .ldb = 7}),
             ContainsSubstring("gemm_f32: ldb = 7 is less than the stored row length 8"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 8, .ldo = 4}),
             ContainsSubstring("gemm_f32: ldo = 4 is less than the stored row length 8"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 9}), ContainsSubstring("gemm_f32: a holds 256 bytes, needs 288"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 8, .b_offset = 1}),
             ContainsSubstring("gemm_f32: b holds 256 bytes, needs 260"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 8, .out_offset = 8}),
             ContainsSubstring("gemm_f32: out holds 256 bytes, needs 288"));
  CHECK_THAT(message(a, b, out, {.m = 8, .n = 8, .k = 8, .a_offset = std::uint64_t{1} << 62}),
             ContainsSubstring("gemm_f32: a offset"));
  CHECK_THAT(message(wide, wide, out, {.m = 65536, .n = 65536, .k = 8, .ldo = 65537}),
             ContainsSubstring("gemm_f32: out spans 4295032831 elements, beyond 32-bit indexing"));
  // out overlapping an operand in one buffer (views share the buffer's id)
  CHECK_THAT(message(big, b, big, {.m = 8, .n = 8, .k = 8, .out_offset = 63}),
             ContainsSubstring("gemm_f32: out (bytes 252..508) overlaps a (bytes 0..256)"));
  CHECK_THAT(message(a, big, big.view(512), {.m = 8, .n = 8, .k = 8, .b_offset = 100}),
             ContainsSubstring("overlaps b"));
  CHECK(message(big, big, big, {.m = 8, .n = 8, .k = 8, .b_offset = 64, .out_offset = 128}) == "no error");
}
