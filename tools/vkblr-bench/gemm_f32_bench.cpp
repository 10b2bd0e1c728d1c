// vkblr-bench gemm-f32: f32 GEMM rates per shape, transposes and tile.
#include "gemm_f32_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <format>
#include <random>

#include "memory_need.hpp"

namespace bench {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// The largest sampled |out − f64 product| / Σ|a·b| of 256 outputs, in f32
// epsilons (the kernel promises at most about k of them).
double sampled_error(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& out,
                     const vkblr::ops::GemmF32& s) {
  std::mt19937 gen(7);
  double worst = 0;
  for (int sample = 0; sample < 256; ++sample) {
    const auto i = static_cast<std::uint32_t>(gen() % s.m), j = static_cast<std::uint32_t>(gen() % s.n);
    double ref = 0, magnitude = 0;
    for (std::uint32_t p = 0; p < s.k; ++p) {
      const double x = s.trans_a ? a[std::size_t{p} * s.m + i] : a[std::size_t{i} * s.k + p];
      const double y = s.trans_b ? b[std::size_t{j} * s.k + p] : b[std::size_t{p} * s.n + j];
      ref += x * y;
      magnitude += std::abs(x * y);
    }
    worst = std::max(worst, std::abs(out[std::size_t{i} * s.n + j] - ref) / (magnitude * 0x1p-23));
  }
  return worst;
}

}  // namespace

bool failed(const GemmF32Result& r) { return !r.error.empty() || (r.check_error >= 0 && !(r.check_error <= r.k + 2)); }

std::vector<GemmF32Result> run_gemm_f32_bench(vkblr::Context& ctx, const GemmF32BenchOptions& o) {
  std::vector<GemmF32Result> out;
  for (const auto& [m, n, k] : o.shapes) {
    std::vector<vkblr::ops::GemmF32Tile> tiles = o.tiles;
    if (tiles.empty()) tiles = {vkblr::ops::gemm_f32_tile_for(ctx, m, n)};
    auto report = [&](GemmF32Result r) {
      out.push_back(r);
      if (!o.quiet) std::fprintf(stderr, "%s\n", format_gemm_f32_result(r).c_str());
    };
    GemmF32Result base;
    base.m = m;
    base.n = n;
    base.k = k;
    base.trans_a = o.trans_a;
    base.trans_b = o.trans_b;
    std::vector<float> a_h, b_h;
    vkblr::Buffer a, b, result;
    try {
      const double a_bytes = 4.0 * m * k, b_bytes = 4.0 * k * n, out_bytes = 4.0 * m * n;
      MemoryNeed need;
      need.largest_buffer = std::max({a_bytes, b_bytes, out_bytes});
      need.device_bytes = a_bytes + b_bytes + out_bytes + need.largest_buffer;  // + staging
      need.host_bytes = a_bytes + b_bytes + (o.check ? out_bytes : 0);
      require_fits(ctx.caps(), need, std::format("gemm-f32 {}x{}x{}", m, n, k));
      // random inputs (never zeros: they run faster than real data)
      a_h = random_floats(std::size_t{m} * k, 1);
      b_h = random_floats(std::size_t{k} * n, 2);
      a = ctx.upload(a_h);
      b = ctx.upload(b_h);
      result = ctx.buffer(std::size_t{m} * n * 4);
    } catch (const std::exception& e) {  // vkblr::Error, or host memory: the shape fails
      base.error = e.what();
      report(base);
      continue;
    }
    const vkblr::ops::GemmF32 shape{.m = m, .n = n, .k = k, .trans_a = o.trans_a, .trans_b = o.trans_b};
    for (const auto& tile : tiles) {
      GemmF32Result r = base;
      r.tile = tile.to_string();
      try {
        const vkblr::Dispatch d = vkblr::ops::gemm_f32(ctx, a, b, result, shape, &tile);
        r.stats = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(d); });
        r.tflops = 2.0 * m * n * k / (r.stats.median_ms * 1e-3) / 1e12;
        if (o.check) r.check_error = sampled_error(a_h, b_h, result.download<float>(), shape);
      } catch (const vkblr::Error& e) {
        r.error = e.what();
      }
      report(r);
    }
  }
  return out;
}

std::string format_gemm_f32_result(const GemmF32Result& r) {
  const std::string ops = std::format("{}x{}x{}{}{}", r.m, r.n, r.k, r.trans_a ? " Aᵀ" : "", r.trans_b ? " Bᵀ" : "");
  if (!r.error.empty()) return std::format("{} [{}]: {}", ops, r.tile, r.error);
  std::string s = std::format("{} [{}]: median {:.4f} ms (min {:.4f}, max {:.4f}, {} reps) {:.3g} TFLOP/s", ops,
                              r.tile, r.stats.median_ms, r.stats.min_ms, r.stats.max_ms, r.stats.reps, r.tflops);
  if (r.check_error >= 0) {
    s += std::format(" check {:.2g} eps·Σ|ab| {}", r.check_error, r.check_error <= r.k + 2 ? "ok" : "FAIL");
  }
  return s;
}

nlohmann::json to_json(const GemmF32Result& r) {
  nlohmann::json j = {{"m", r.m},         {"n", r.n},       {"k", r.k},
                      {"trans_a", r.trans_a}, {"trans_b", r.trans_b}, {"tile", r.tile}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  put_stats(j, r.stats);
  j["tflops"] = r.tflops;
  if (r.check_error >= 0) j["check_eps"] = r.check_error;
  return j;
}

}  // namespace bench
