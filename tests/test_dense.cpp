// Small dense linears: dense_fwd / dense_bwd against f64 references, plain
// and tiled kernels, and the seed's bit-exact equivalences dense_fwd_t ≡
// dense_fwd, dense_bwd_t ≡ dense_bwd.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <string>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::uint32_t kM = 70, kK = 200;  // neither a multiple of any workgroup size
constexpr std::uint32_t kTail = 64;         // poisoned floats past every output: nothing may write there

// A device buffer of `n` floats (plus kTail) filled with the poison pattern.
Buffer poisoned(Context& ctx, std::size_t n) {
  Buffer b = ctx.buffer((n + kTail) * 4);
  b.fill(vkt::kPoison32);
  return b;
}

// Counts poison words left in [n, n + kTail): must all still be there.
bool tail_untouched(const Buffer& b, std::size_t n) {
  const auto tail = b.download<std::uint32_t>(kTail, n);
  for (std::uint32_t v : tail) {
    if (v != vkt::kPoison32) return false;
  }
  return true;
}

// Number of elements of `got` outside |got − want| <= tol · scale (scale: the
// sum of the magnitudes that went into the element, so the bound is the
// error analysis of an f32 sum of that many terms, not a guess).
std::size_t outside(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& scale,
                    double tol) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got[i];
    bad += !(std::abs(g - want[i]) <= tol * scale[i]);
  }
  return bad;
}

const char* kernel_name(ops::DenseKernel k) {
  switch (k) {
    case ops::DenseKernel::automatic: return "automatic";
    case ops::DenseKernel::plain: return "plain";
    case ops::DenseKernel::tiled: return "tiled";
  }
  return "?";
}

// Relative error bound of a k-term f32 sum: k units in the last place (2^-24).
double sum_tolerance(std::uint32_t terms) { return (terms + 1) * std::ldexp(1.0, -24); }

}  // namespace

GPU_TEST("dense_fwd matches an f64 reference: plain and tiled, overwrite and accumulate", "[ops]") {
  const auto a = vkt::random_floats(kM * kK, 101, 2.0f);
  Buffer ba = ctx.upload(a);
  for (const std::uint32_t r : {3u, 17u, 48u, 64u}) {
    const auto w = vkt::random_floats(r * kK, 102 + r, 0.5f);
    const auto init = vkt::random_floats(kM * r, 103 + r, 4.0f);
    Buffer bw = ctx.upload(w);
    std::vector<double> want(kM * r), scale(kM * r);
    for (std::uint32_t i = 0; i < kM; ++i) {
      for (std::uint32_t o = 0; o < r; ++o) {
        double s = 0, mag = 0;
        for (std::uint32_t j = 0; j < kK; ++j) {
          s += double(a[i * kK + j]) * w[o * kK + j];
          mag += std::abs(double(a[i * kK + j]) * w[o * kK + j]);
        }
        want[i * r + o] = s;
        scale[i * r + o] = mag;
      }
    }
    std::vector<double> want_acc(want), scale_acc(scale);
    for (std::size_t i = 0; i < want.size(); ++i) {
      want_acc[i] += init[i];
      scale_acc[i] += std::abs(init[i]);
    }
    for (const auto kernel : {ops::DenseKernel::plain, ops::DenseKernel::tiled}) {
      if (kernel == ops::DenseKernel::tiled && r > 48) continue;  // the tiled kernel refuses (see the errors test)
      INFO("r = " << r << ", kernel " << kernel_name(kernel));
      Buffer out = poisoned(ctx, kM * r), acc = poisoned(ctx, kM * r);
      acc.upload(init);
      Recorder rec(ctx);
      rec.add(ops::dense_fwd(ctx, ba, bw, out, kM, kK, r, false, kernel));
      rec.add(ops::dense_fwd(ctx, ba, bw, acc, kM, kK, r, true, kernel));
      rec.run();
      CHECK(outside(out.download<float>(kM * r), want, scale, sum_tolerance(kK)) == 0);
      CHECK(outside(acc.download<float>(kM * r), want_acc, scale_acc, sum_tolerance(kK + 1)) == 0);
      CHECK(tail_untouched(out, kM * r));
      CHECK(tail_untouched(acc, kM * r));
    }
  }
}

GPU_TEST("dense_fwd_t equals dense_fwd bit for bit", "[ops]") {
  // k = 200: three full 64-column chunks and a partial one; m = 70 and 130:
  // a partial last workgroup of rows.
  for (const std::uint32_t m : {kM, 130u}) {
    const auto a = vkt::random_floats(m * kK, 201 + m, 3.0f);
    Buffer ba = ctx.upload(a);
    for (const std::uint32_t r : {3u, 17u, 48u}) {
      INFO("m = " << m << ", r = " << r);
      Buffer bw = ctx.upload(vkt::random_floats(r * kK, 202 + r, 1.0f));
      const auto init = vkt::random_floats(m * r, 203 + r, 1.0f);
      Buffer plain = poisoned(ctx, m * r), tiled = poisoned(ctx, m * r);
      Buffer plain_acc = ctx.upload(init), tiled_acc = ctx.upload(init);
      Recorder rec(ctx);
      rec.add(ops::dense_fwd(ctx, ba, bw, plain, m, kK, r, false, ops::DenseKernel::plain));
      rec.add(ops::dense_fwd(ctx, ba, bw, tiled, m, kK, r, false, ops::DenseKernel::tiled));
      rec.add(ops::dense_fwd(ctx, ba, bw, plain_acc, m, kK, r, true, ops::DenseKernel::plain));
      rec.add(ops::dense_fwd(ctx, ba, bw, tiled_acc, m, kK, r, true, ops::DenseKernel::tiled));
      rec.run();
      const auto p = plain.download<float>(m * r);
      CHECK(vkt::count_bit_diffs(p, tiled.download<float>(m * r)) == 0);
      CHECK(vkt::count_bit_diffs(plain_acc.download<float>(), tiled_acc.download<float>()) == 0);
      CHECK(std::all_of(p.begin(), p.end(), [](float v) { return std::isfinite(v); }));
    }
  }
}

GPU_TEST("dense_bwd matches an f64 reference: plain and tiled", "[ops]") {
  for (const std::uint32_t r : {3u, 17u, 48u, 64u}) {
    const auto dy = vkt::random_floats(kM * r, 301 + r, 2.0f);
    const auto w = vkt::random_floats(r * kK, 302 + r, 0.5f);
    const auto init = vkt::random_floats(kM * kK, 303 + r, 4.0f);
    Buffer bdy = ctx.upload(dy), bw = ctx.upload(w);
    std::vector<double> want(kM * kK), scale(kM * kK);
    for (std::uint32_t i = 0; i < kM; ++i) {
      for (std::uint32_t j = 0; j < kK; ++j) {
        double s = 0, mag = 0;
        for (std::uint32_t o = 0; o < r; ++o) {
          s += double(dy[i * r + o]) * w[o * kK + j];
          mag += std::abs(double(dy[i * r + o]) * w[o * kK + j]);
        }
        want[i * kK + j] = s + init[i * kK + j];
        scale[i * kK + j] = mag + std::abs(init[i * kK + j]);
      }
    }
    for (const auto kernel : {ops::DenseKernel::plain, ops::DenseKernel::tiled}) {
      INFO("r = " << r << ", kernel " << kernel_name(kernel));
      Buffer dx = poisoned(ctx, kM * kK);
      dx.upload(init);
      Recorder rec(ctx);
      rec.add(ops::dense_bwd(ctx, bdy, bw, dx, kM, kK, r, kernel));
      rec.run();
      CHECK(outside(dx.download<float>(kM * kK), want, scale, sum_tolerance(r + 1)) == 0);
      CHECK(tail_untouched(dx, kM * kK));
    }
  }
}

GPU_TEST("dense_bwd_t equals dense_bwd bit for bit", "[ops]") {
  // m = 70 and 131: the last invocation's 4-row block is partial.
  for (const std::uint32_t m : {kM, 131u}) {
    for (const std::uint32_t r : {3u, 17u, 48u, 64u}) {
      INFO("m = " << m << ", r = " << r);
      Buffer bdy = ctx.upload(vkt::random_floats(m * r, 401 + r, 3.0f));
      Buffer bw = ctx.upload(vkt::random_floats(r * kK, 402 + r, 1.0f));
      const auto init = vkt::random_floats(m * kK, 403 + r, 1.0f);
      Buffer plain = ctx.upload(init), tiled = ctx.upload(init);
      Recorder rec(ctx);
      rec.add(ops::dense_bwd(ctx, bdy, bw, plain, m, kK, r, ops::DenseKernel::plain));
      rec.add(ops::dense_bwd(ctx, bdy, bw, tiled, m, kK, r, ops::DenseKernel::tiled));
      rec.run();
      CHECK(vkt::count_bit_diffs(plain.download<float>(), tiled.download<float>()) == 0);
    }
  }
}

GPU_TEST("dense builders choose the tiled kernels where the seed does", "[ops]") {
  Buffer a = ctx.buffer(kM * 204 * 4), w = ctx.buffer(64 * 204 * 4), out = ctx.buffer(kM * 204 * 4);
  auto fwd = [&](std::uint32_t k, std::uint32_t r) {
    return std::string(ops::dense_fwd(ctx, a, w, out, kM, k, r, false).name);
  };
  CHECK(fwd(200, 48) == "dense_fwd_t");
  CHECK(fwd(200, 3) == "dense_fwd_t");
  CHECK(fwd(200, 49) == "dense_fwd");  // too many outputs
  CHECK(fwd(202, 17) == "dense_fwd");  // k not a multiple of 4
  CHECK(std::string(ops::dense_bwd(ctx, a, w, out, kM, 200, 17).name) == "dense_bwd_t");
}

GPU_TEST("dense builders refuse bad shapes and small buffers", "[ops][errors]") {
  Buffer a = ctx.buffer(kM * kK * 4), w = ctx.buffer(64 * kK * 4), out = ctx.buffer(kM * 64 * 4);
  Buffer small = ctx.buffer(16);
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, w, out, 0, kK, 3, false), ContainsSubstring("dense_fwd: m = 0"));
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, w, out, kM, kK, 64, false, ops::DenseKernel::tiled),
                    ContainsSubstring("dense_fwd") && ContainsSubstring("r = 64"));
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, w, out, kM, 198, 17, false, ops::DenseKernel::tiled),
                    ContainsSubstring("dense_fwd") && ContainsSubstring("k = 198"));
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, small, out, kM, kK, 3, false),
                    ContainsSubstring("dense_fwd") && ContainsSubstring("w holds 16 bytes"));
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, w, small, kM, kK, 3, false),
                    ContainsSubstring("dense_fwd") && ContainsSubstring("out holds 16 bytes"));
  CHECK_THROWS_WITH(ops::dense_fwd(ctx, a, w, a, kM, 3, 3, false), ContainsSubstring("dense_fwd: out is the same"));
  CHECK_THROWS_WITH(ops::dense_bwd(ctx, out, w, a, kM, kK, 0), ContainsSubstring("dense_bwd: r = 0"));
  CHECK_THROWS_WITH(ops::dense_bwd(ctx, small, w, a, kM, kK, 3),
                    ContainsSubstring("dense_bwd") && ContainsSubstring("dy holds 16 bytes"));
  CHECK_THROWS_WITH(ops::dense_bwd(ctx, out, w, small, kM, kK, 3),
                    ContainsSubstring("dense_bwd") && ContainsSubstring("dx holds 16 bytes"));
  // more rows than the tiled backward's grid holds (4 · 65535)
  const std::uint32_t tall = 4 * 65535 + 1;
  Buffer tall_buf = ctx.buffer(std::uint64_t{tall} * 4), tall_dx = ctx.buffer(std::uint64_t{tall} * 4);
  CHECK_THROWS_WITH(ops::dense_bwd(ctx, tall_buf, w, tall_dx, tall, 1, 1, ops::DenseKernel::tiled),
                    ContainsSubstring("dense_bwd") && ContainsSubstring("m = 262141"));
  CHECK(std::string(ops::dense_bwd(ctx, tall_buf, w, tall_dx, tall, 1, 1).name) == "dense_bwd");
}
