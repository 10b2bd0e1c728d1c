// Column reductions: colsum (prod, prod_row, plain; overwrite and
// accumulate) and colsum_prod against f64 sums, their determinism, and the
// seed's bit-exact equivalences: colsum_fused ≡ colsum_prod + cvt_col /
// scale_acc, colsum_fused_t ≡ colsum_fused + cvt_t. Tolerance of the f32
// sums against f64: relative (Frobenius over the k sums) < 1e-5.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "support/record_pair.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;
using vkt::poisoned16;

namespace {

constexpr double kSumTolerance = 1e-5;

std::vector<std::uint32_t> words(const Buffer& b, std::size_t n) { return b.download<std::uint32_t>(n); }
std::vector<std::uint16_t> halves(const Buffer& b, std::size_t n) { return b.download<std::uint16_t>(n); }

struct Shape {
  std::uint32_t m, k;
};

// The inputs of one shape: a, b f32 [m][k], row factors [m], column factors
// [k] and initial sums [k], all seeded random and nonzero.
struct Inputs {
  Inputs(Context& ctx, Shape s, std::uint64_t seed)
      : m(s.m),
        k(s.k),
        a(vkt::random_floats(std::size_t{m} * k, seed, 3.0f)),
        b(vkt::random_floats(std::size_t{m} * k, seed + 1, 2.0f)),
        row_factor(vkt::random_floats(m, seed + 2, 1.5f)),
        col(vkt::random_floats(k, seed + 3, 2.0f)),
        init(vkt::random_floats(k, seed + 4, 10.0f)),
        ba(ctx.upload(a)),
        bb(ctx.upload(b)),
        brow(ctx.upload(row_factor)),
        bcol(ctx.upload(col)) {}
  std::uint32_t m, k;
  std::vector<float> a, b, row_factor, col, init;
  Buffer ba, bb, brow, bcol;
  std::size_t elements() const { return std::size_t{m} * k; }
};

// f64 column sums of a term, added to `init` when accumulating.
std::vector<double> host_colsum(const Inputs& in, ops::ColTerm::Kind kind, bool accumulate) {
  std::vector<double> sum(in.k, 0.0);
  for (std::uint32_t c = 0; c < in.k; ++c) {
    if (accumulate) sum[c] = in.init[c];
  }
  for (std::uint32_t row = 0; row < in.m; ++row) {
    for (std::uint32_t c = 0; c < in.k; ++c) {
      const std::size_t i = std::size_t{row} * in.k + c;
      double term = in.a[i];
      if (kind != ops::ColTerm::Kind::plain) term *= in.b[i];
      if (kind == ops::ColTerm::Kind::prod_row) term *= in.row_factor[row];
      sum[c] += term;
    }
  }
  return sum;
}

ops::ColTerm term_of(const Inputs& in, ops::ColTerm::Kind kind) {
  switch (kind) {
    case ops::ColTerm::Kind::prod: return ops::ColTerm::prod(in.bb);
    case ops::ColTerm::Kind::prod_row: return ops::ColTerm::prod_row(in.bb, in.brow);
    case ops::ColTerm::Kind::plain: return ops::ColTerm::plain();
  }
  return {};
}

const char* name_of(ops::ColTerm::Kind kind) {
  switch (kind) {
    case ops::ColTerm::Kind::prod: return "prod";
    case ops::ColTerm::Kind::prod_row: return "prod_row";
    case ops::ColTerm::Kind::plain: return "plain";
  }
  return "?";
}

// The fused ops of the equivalence tests: the three kinds, scale_b both ways.
struct FuseCase {
  ops::Fuse::Kind kind;
  bool accumulate;
  const char* name;
};
constexpr FuseCase kFuseCases[] = {
    {ops::Fuse::Kind::cvt_a, false, "cvt_a"},
    {ops::Fuse::Kind::cvt_b, false, "cvt_b"},
    {ops::Fuse::Kind::scale_b, false, "scale_b overwrite"},
    {ops::Fuse::Kind::scale_b, true, "scale_b accumulate"},
};
// Staging scales that are not powers of two, so that (x·col)·scale and
// x·(col·scale) round differently and the evaluation order shows.
constexpr float kStagingScale = 1000.0f;
constexpr float kTransposedScale = 3.0f;

}  // namespace

GPU_TEST("colsum sums prod, prod_row and plain terms within 1e-5 of f64, deterministically", "[ops]") {
  using Kind = ops::ColTerm::Kind;
  // m = 20000 > 16384: blocks of 79 rows, not 64; k never a multiple of 256.
  for (const Shape shape : {Shape{70, 200}, Shape{1000, 1000}, Shape{20000, 130}}) {
    const Inputs in(ctx, shape, 10);
    struct Run {
      Kind kind;
      bool accumulate;
      Buffer out, again;
    };
    std::vector<Run> runs;
    Recorder rec(ctx);
    for (const Kind kind : {Kind::prod, Kind::prod_row, Kind::plain}) {
      for (const bool accumulate : {false, true}) {
        Run run{kind, accumulate, accumulate ? ctx.upload(in.init) : poisoned(ctx, in.k),
                accumulate ? ctx.upload(in.init) : poisoned(ctx, in.k)};
        rec.add(ops::colsum(ctx, in.ba, term_of(in, kind), run.out, in.m, in.k, accumulate));
        rec.add(ops::colsum(ctx, in.ba, term_of(in, kind), run.again, in.m, in.k, accumulate));
        runs.push_back(std::move(run));
      }
    }
    Buffer prod_out = ctx.upload(in.init);
    rec.add(ops::colsum_prod(ctx, in.ba, in.bb, prod_out, in.m, in.k));
    rec.run();
    for (const Run& run : runs) {
      INFO("m = " << in.m << ", k = " << in.k << ", " << name_of(run.kind) << ", accumulate " << run.accumulate);
      const auto got = run.out.download<float>(in.k);
      CHECK(vkt::rel_error(got, host_colsum(in, run.kind, run.accumulate)) < kSumTolerance);
      CHECK(vkt::count_bit_diffs(words(run.out, in.k), words(run.again, in.k)) == 0);
    }
    INFO("colsum_prod, m = " << in.m << ", k = " << in.k);
    CHECK(vkt::rel_error(prod_out.download<float>(in.k), host_colsum(in, Kind::prod, true)) < kSumTolerance);
  }
}

GPU_TEST("colsum_fused equals colsum_prod plus the separate op bit for bit", "[ops]") {
  for (const Shape shape : {Shape{70, 1000}, Shape{20000, 130}}) {
    const Inputs in(ctx, shape, 20);
    const std::size_t n = in.elements();
    const auto out_init = vkt::random_floats(n, 25, 4.0f);
    for (const FuseCase& fc : kFuseCases) {
      INFO("m = " << in.m << ", k = " << in.k << ", " << fc.name);
      const bool scales = fc.kind == ops::Fuse::Kind::scale_b;
      Buffer sum_fused = ctx.upload(in.init), sum_separate = ctx.upload(in.init);
      auto output = [&] {
        if (!scales) return poisoned16(ctx, n);
        return fc.accumulate ? ctx.upload(out_init) : poisoned(ctx, n);
      };
      Buffer dst_fused = output(), dst_separate = output();
      Recorder rec(ctx);
      switch (fc.kind) {
        case ops::Fuse::Kind::cvt_a:
          rec.add(ops::colsum_fused(ctx, in.ba, in.bb, sum_fused, in.m, in.k,
                                    ops::Fuse::cvt_a(in.bcol, dst_fused, kStagingScale)));
          rec.add(ops::cvt_col(ctx, in.ba, in.bcol, dst_separate, in.m, in.k, kStagingScale));
          break;
        case ops::Fuse::Kind::cvt_b:
          rec.add(ops::colsum_fused(ctx, in.ba, in.bb, sum_fused, in.m, in.k,
                                    ops::Fuse::cvt_b(in.bcol, dst_fused, kStagingScale)));
          rec.add(ops::cvt_col(ctx, in.bb, in.bcol, dst_separate, in.m, in.k, kStagingScale));
          break;
        case ops::Fuse::Kind::scale_b:
          rec.add(ops::colsum_fused(ctx, in.ba, in.bb, sum_fused, in.m, in.k,
                                    ops::Fuse::scale_b(in.bcol, dst_fused, fc.accumulate)));
          rec.add(ops::scale_acc(ctx, in.bb, in.bcol, dst_separate, in.m, in.k, fc.accumulate));
          break;
      }
      rec.add(ops::colsum_prod(ctx, in.ba, in.bb, sum_separate, in.m, in.k));
      rec.run();
      CHECK(vkt::count_bit_diffs(words(sum_fused, in.k), words(sum_separate, in.k)) == 0);
      if (scales) {
        CHECK(vkt::count_bit_diffs(words(dst_fused, n), words(dst_separate, n)) == 0);
      } else {
        const auto staged = halves(dst_fused, n);
        CHECK(vkt::count_bit_diffs(staged, halves(dst_separate, n)) == 0);
        // and exactly the host's f16 of the same f32 expression, (x·col)·scale
        const std::vector<float>& x = fc.kind == ops::Fuse::Kind::cvt_a ? in.a : in.b;
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) bad += staged[i] != f32_to_f16(x[i] * in.col[i % in.k] * kStagingScale);
        CHECK(bad == 0);
      }
    }
  }
}

GPU_TEST("colsum_fused_t equals colsum_fused plus cvt_t bit for bit", "[ops]") {
  // m = 96: a full block of 64 rows and one of 32; m = 2080: 33 blocks, the
  // last 32 rows. k = 200, 300: the last workgroup of 128 columns is partial.
  for (const Shape shape : {Shape{96, 200}, Shape{2080, 300}}) {
    const Inputs in(ctx, shape, 30);
    REQUIRE(ops::colsum_fused_t_fits(in.m, in.k));
    const std::size_t n = in.elements();
    const std::uint32_t k_rows = (in.k + 31) / 32 * 32;
    const auto out_init = vkt::random_floats(n, 35, 4.0f);
    for (const FuseCase& fc : kFuseCases) {
      INFO("m = " << in.m << ", k = " << in.k << ", " << fc.name);
      const bool scales = fc.kind == ops::Fuse::Kind::scale_b;
      Buffer sum_t = ctx.upload(in.init), sum_plain = ctx.upload(in.init);
      auto output = [&] {
        if (!scales) return poisoned16(ctx, n);
        return fc.accumulate ? ctx.upload(out_init) : poisoned(ctx, n);
      };
      Buffer dst_t = output(), dst_plain = output();
      Buffer transposed = poisoned16(ctx, n), cvt_t_out = poisoned16(ctx, std::size_t{k_rows} * in.m);
      auto fuse = [&](const Buffer& dst) {
        switch (fc.kind) {
          case ops::Fuse::Kind::cvt_a: return ops::Fuse::cvt_a(in.bcol, dst, kStagingScale);
          case ops::Fuse::Kind::cvt_b: return ops::Fuse::cvt_b(in.bcol, dst, kStagingScale);
          case ops::Fuse::Kind::scale_b: break;
        }
        return ops::Fuse::scale_b(in.bcol, dst, fc.accumulate, kTransposedScale);
      };
      // cvt_t of the operand the transposed output stages, with its scale
      const Buffer& src = fc.kind == ops::Fuse::Kind::cvt_b ? in.bb : in.ba;
      const float scale = scales ? kTransposedScale : kStagingScale;
      Recorder rec(ctx);
      rec.add(ops::colsum_fused_t(ctx, in.ba, in.bb, sum_t, in.m, in.k, fuse(dst_t), transposed));
      rec.add(ops::colsum_fused(ctx, in.ba, in.bb, sum_plain, in.m, in.k, fuse(dst_plain)));
      rec.add(ops::cvt_t(ctx, src, &in.bcol, cvt_t_out, in.m, in.k, scale, k_rows, in.m));
      rec.run();
      CHECK(vkt::count_bit_diffs(words(sum_t, in.k), words(sum_plain, in.k)) == 0);
      if (scales) {
        CHECK(vkt::count_bit_diffs(words(dst_t, n), words(dst_plain, n)) == 0);
      } else {
        CHECK(vkt::count_bit_diffs(halves(dst_t, n), halves(dst_plain, n)) == 0);
      }
      // dst_t [k][m] is the first k rows of cvt_t's [k_rows][m]
      CHECK(vkt::count_bit_diffs(halves(transposed, n), halves(cvt_t_out, n)) == 0);
    }
  }
}

GPU_TEST("reductions side by side get their own partials, share their barriers and keep their bits", "[ops]") {
  // two reductions of one shape: one after the other they run in turn; side
  // by side both first passes, then both second passes, run together, each
  // with its own partials
  const Inputs in0(ctx, Shape{300, 200}, 40), in1(ctx, Shape{300, 200}, 50);
  auto reduce = [&](bool side_by_side, std::uint32_t& barriers) {
    Buffer sum0 = ctx.upload(in0.init), sum1 = ctx.upload(in1.init);
    const Ops r0 = ops::colsum_prod(ctx, in0.ba, in0.bb, sum0, in0.m, in0.k);
    const Ops r1 = ops::colsum_prod(ctx, in1.ba, in1.bb, sum1, in1.m, in1.k);
    Recorder rec(ctx);
    barriers = vkt::record_pair(rec, r0, r1, side_by_side);
    rec.run();
    return std::pair{words(sum0, in0.k), words(sum1, in1.k)};
  };
  std::uint32_t in_turn = 0, side_by_side = 0;
  const auto [a0, a1] = reduce(false, in_turn);
  const auto [b0, b1] = reduce(true, side_by_side);
  CHECK(in_turn == 2);
  CHECK(side_by_side == 1);
  CHECK(vkt::count_bit_diffs(a0, b0) == 0);
  CHECK(vkt::count_bit_diffs(a1, b1) == 0);
  std::vector<float> got1(in1.k);
  std::memcpy(got1.data(), b1.data(), got1.size() * 4);
  CHECK(vkt::rel_error(got1, host_colsum(in1, ops::ColTerm::Kind::prod, true)) < kSumTolerance);
}

TEST_CASE("colsum predicates say which forms take a shape", "[ops]") {
  CHECK(ops::colsum_fits(70, 200));
  CHECK(ops::colsum_fits(16384, 32768));  // 256 blocks × 32768: the partials buffer exactly
  CHECK_FALSE(ops::colsum_fits(16384, 32769));
  CHECK(ops::colsum_fits(1u << 20, 1u << 11));
  CHECK_FALSE(ops::colsum_fits(1u << 20, 1u << 12));  // 2^32 elements
  CHECK_FALSE(ops::colsum_fits(0, 8));
  CHECK_FALSE(ops::colsum_fits(8, 0));
  CHECK(ops::colsum_fused_t_fits(96, 200));
  CHECK(ops::colsum_fused_t_fits(16384, 512));
  CHECK_FALSE(ops::colsum_fused_t_fits(70, 200));     // m not a multiple of 32
  CHECK_FALSE(ops::colsum_fused_t_fits(16416, 200));  // blocks of 65 rows
  CHECK_FALSE(ops::colsum_fused_t_fits(16384, 32769));
}

GPU_TEST("colsum builders refuse bad shapes and small buffers", "[ops][errors]") {
  const std::uint32_t m = 96, k = 40;
  Buffer a = ctx.buffer(m * k * 4), b = ctx.buffer(m * k * 4), f = ctx.buffer(m * 4), col = ctx.buffer(k * 4);
  Buffer sum = ctx.buffer(k * 4), dst16 = ctx.buffer(m * k * 2), dst32 = ctx.buffer(m * k * 4);
  Buffer small = ctx.buffer(16);
  using ops::ColTerm;
  using ops::Fuse;
  CHECK_THROWS_WITH(ops::colsum(ctx, a, ColTerm::plain(), sum, 0, k, false), ContainsSubstring("colsum: m = 0"));
  CHECK_THROWS_WITH(ops::colsum(ctx, a, ColTerm::prod(b), sum, m, 0, false), ContainsSubstring("colsum: k = 0"));
  CHECK_THROWS_WITH(ops::colsum(ctx, small, ColTerm::plain(), sum, m, k, false), ContainsSubstring("colsum: a holds"));
  CHECK_THROWS_WITH(ops::colsum(ctx, a, ColTerm::plain(), small, m, k, true), ContainsSubstring("colsum: out holds"));
  CHECK_THROWS_WITH(ops::colsum(ctx, a, ColTerm::prod_row(b, small), sum, m, k, true),
                    ContainsSubstring("colsum: row_factor holds"));
  CHECK_THROWS_WITH(ops::colsum(ctx, a, ColTerm::plain(), sum, 16384, 40000, false),
                    ContainsSubstring("colsum: 256 row blocks × k = 40000"));
  CHECK_THROWS_WITH(ops::colsum_prod(ctx, a, small, sum, m, k), ContainsSubstring("colsum_prod: b holds"));
  CHECK_THROWS_WITH(ops::colsum_fused(ctx, a, b, sum, m, k, Fuse::cvt_a(col, small, 1.0f)),
                    ContainsSubstring("colsum_fused: dst holds"));
  CHECK_THROWS_WITH(ops::colsum_fused(ctx, a, b, sum, m, k, Fuse::scale_b(col, dst16, true)),
                    ContainsSubstring("colsum_fused: dst holds"));  // scale_b writes f32
  CHECK_THROWS_WITH(ops::colsum_fused(ctx, a, b, sum, m, k, Fuse::cvt_b(small, dst16, 1.0f)),
                    ContainsSubstring("colsum_fused: col holds"));
  CHECK_THROWS_WITH(ops::colsum_fused_t(ctx, a, b, sum, 70, k, Fuse::cvt_a(col, dst16, 1.0f), dst16),
                    ContainsSubstring("colsum_fused_t: m = 70 is not a multiple of 32"));
  CHECK_THROWS_WITH(ops::colsum_fused_t(ctx, a, b, sum, 16416, 8, Fuse::cvt_a(col, dst16, 1.0f), dst16),
                    ContainsSubstring("colsum_fused_t: m = 16416 exceeds 16384"));
  CHECK_THROWS_WITH(ops::colsum_fused_t(ctx, a, b, sum, m, k, Fuse::scale_b(col, dst32, false), small),
                    ContainsSubstring("colsum_fused_t: dst_t holds"));
  CHECK_NOTHROW(ops::colsum_fused_t(ctx, a, b, sum, m, k, Fuse::scale_b(col, dst32, false), dst16));
  CHECK_NOTHROW(ops::colsum(ctx, a, ColTerm::prod_row(b, f), sum, m, k, false));
}
