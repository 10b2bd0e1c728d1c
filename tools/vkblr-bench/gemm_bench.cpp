// vkblr-bench gemm: GEMM rates per shape, B mode and tile.
#include "gemm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <format>
#include <random>

#include "timing.hpp"

namespace bench {
namespace {

// cuBLAS f16 on the H200 (PyTorch 2.11, out = act·planeᵀ), TFLOPS, from issue 4.
double cublas_reference(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  if (m == 4096 && n == 3584 && k == 1024) return 384;
  if (m == 4096 && n == 1024 && k == 3584) return 447;
  if (m == 3584 && n == 1024 && k == 4096) return 431;
  if (m == 4096 && n == 6144 && k == 1024) return 488;
  if (m == 8192 && n == 8192 && k == 8192) return 672;
  return 0;
}

std::vector<std::uint32_t> random_words(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& w : v) w = static_cast<std::uint32_t>(gen());
  return v;
}

std::vector<std::uint16_t> random_halves(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<std::uint16_t> v(n);
  for (auto& h : v) h = vkblr::f32_to_f16(d(gen));
  return v;
}

// B[j][p] of each mode, from the host copies of the operands.
float b_value(vkblr::GemmB mode, const std::vector<std::uint16_t>& plane, const std::vector<std::uint32_t>& bn,
              const std::vector<std::uint32_t>& bt, std::uint32_t n, std::uint32_t k, std::uint32_t j, std::uint32_t p) {
  switch (mode) {
    case vkblr::GemmB::plane:
      return vkblr::f16_to_f32(plane[std::size_t{j} * k + p]);
    case vkblr::GemmB::bits_n:
      return (bn[std::size_t{j} * (k / 32) + p / 32] >> (p % 32)) & 1u ? 1.0f : -1.0f;
    case vkblr::GemmB::bits_t:
      return (bt[std::size_t{p} * (n / 32) + j / 32] >> (j % 32)) & 1u ? 1.0f : -1.0f;
  }
  return 0;
}

// The tiles a mode runs: the given ones, else (and always for "plain") the
// library's choice.
std::vector<vkblr::GemmTile> mode_tiles(const vkblr::Context& ctx, const GemmBenchOptions& o, const std::string& mode,
                                        std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  if (mode == "plain") return {vkblr::gemm_tile_for(ctx, m, n, k, vkblr::GemmKernel::plain)};
  if (o.tiles.empty()) return {vkblr::gemm_tile_for(ctx, m, n, k)};
  return o.tiles;
}

}  // namespace

MemoryNeed gemm_memory(const vkblr::Context& ctx, const GemmSize& shape, std::span<const vkblr::GemmTile> tiles,
                       bool check) {
  const auto [m, n, k] = shape;
  const double act = double(m) * k * 2, plane = double(n) * k * 2, bits = double(n) * k / 8,
               result = double(m) * n * 4;
  double workspace = 0;  // split-K layers [s][m][n]
  for (const vkblr::GemmTile& t : tiles) {
    const std::uint32_t s = vkblr::gemm_splits_for(ctx, t, m, n, k);
    if (s > 1) workspace = std::max(workspace, s * result);
  }
  MemoryNeed need;
  // operands, result, workspace, and the staging buffer of the largest upload
  need.device_bytes = act + plane + 2 * bits + result + workspace + std::max({act, plane, double(1u << 20)});
  need.largest_buffer = std::max({act, plane, result, workspace});
  need.host_bytes = act + plane + 2 * bits + (check ? result : 0);
  return need;
}

std::vector<GemmResult> run_gemm_bench(vkblr::Context& ctx, const GemmBenchOptions& o) {
  std::vector<GemmResult> out;
  auto report = [&](GemmResult r) {
    if (!o.quiet) std::fprintf(stderr, "%s\n", format_gemm_result(r).c_str());
    out.push_back(std::move(r));
  };
  for (const auto& [m, n, k] : o.shapes) {
    auto result_of = [&](const std::string& mode, const std::string& tile) {
      GemmResult r;
      r.m = m;
      r.n = n;
      r.k = k;
      r.mode = mode;
      r.tile = tile;
      return r;
    };
    std::vector<std::vector<vkblr::GemmTile>> tiles_of_mode;  // per o.modes
    std::vector<std::uint16_t> act_h, plane_h;
    std::vector<std::uint32_t> bn_h, bt_h;
    vkblr::Buffer act, plane, bits_n, bits_t, result;
    try {
      std::vector<vkblr::GemmTile> all_tiles;
      for (const std::string& mode_name : o.modes) {
        tiles_of_mode.push_back(mode_tiles(ctx, o, mode_name, m, n, k));
        all_tiles.insert(all_tiles.end(), tiles_of_mode.back().begin(), tiles_of_mode.back().end());
      }
      require_fits(ctx.caps(), gemm_memory(ctx, {m, n, k}, all_tiles, o.check), std::format("gemm {}x{}x{}", m, n, k));
      // random inputs (never zeros: they run faster than real data)
      act_h = random_halves(std::size_t{m} * k, 1);
      plane_h = random_halves(std::size_t{n} * k, 2);
      bn_h = random_words(std::size_t{n} * k / 32, 3);
      bt_h = random_words(std::size_t{k} * n / 32, 4);
      act = ctx.upload(act_h);
      plane = ctx.upload(plane_h);
      bits_n = ctx.upload(bn_h);
      bits_t = ctx.upload(bt_h);
      result = ctx.buffer(std::size_t{m} * n * 4);
    } catch (const std::exception& e) {  // vkblr::Error, or host memory: every mode of the shape fails
      for (const std::string& mode_name : o.modes) {
        GemmResult r = result_of(mode_name, "");
        r.error = e.what();
        report(std::move(r));
      }
      continue;
    }
    for (std::size_t mi = 0; mi < o.modes.size(); ++mi) {
      const std::string& mode_name = o.modes[mi];
      const vkblr::GemmB mode = mode_name == "bits_n"   ? vkblr::GemmB::bits_n
                                : mode_name == "bits_t" ? vkblr::GemmB::bits_t
                                                        : vkblr::GemmB::plane;
      const vkblr::Buffer& b = mode == vkblr::GemmB::plane ? plane : mode == vkblr::GemmB::bits_n ? bits_n : bits_t;
      for (const vkblr::GemmTile& tile : tiles_of_mode[mi]) {
        GemmResult r = result_of(mode_name, tile.to_string());
        try {
          vkblr::check_gemm_tile(ctx, tile);
          const vkblr::Ops ops = vkblr::gemm(ctx, act, b, mode, result, {m, n, k}, &tile);
          if (o.stats) {
            for (auto& e : vkblr::kernel_statistics(ops.front())) {
              r.kernel_stats.insert(r.kernel_stats.end(), e.values.begin(), e.values.end());
            }
          }
          r.stats = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(ops); });
          r.tflops = 2.0 * m * n * k / (r.stats.median_ms * 1e-3) / 1e12;
          r.cublas_tflops = cublas_reference(m, n, k);
          if (o.check) {
            const auto got = result.download<float>();
            std::mt19937 gen(7);
            double worst = 0, sumsq = 0;
            const int samples = 256;
            for (int s = 0; s < samples; ++s) {
              const auto i = static_cast<std::uint32_t>(gen() % m), j = static_cast<std::uint32_t>(gen() % n);
              double ref = 0;
              for (std::uint32_t p = 0; p < k; ++p) {
                ref += double(vkblr::f16_to_f32(act_h[std::size_t{i} * k + p])) * b_value(mode, plane_h, bn_h, bt_h, n, k, j, p);
              }
              const double diff = std::abs(double(got[std::size_t{i} * n + j]) - ref);
              if (!(diff <= worst)) worst = diff;  // a NaN stays
              sumsq += ref * ref;
            }
            r.check_error = worst / std::sqrt(sumsq / samples);
          }
        } catch (const std::exception& e) {  // vkblr::Error, or host memory
          r.error = e.what();
        }
        report(std::move(r));
      }
    }
  }
  return out;
}

bool failed(const GemmResult& r) {
  return !r.error.empty() || (r.check_error && !(*r.check_error < kCheckTolerance));
}

std::string format_gemm_result(const GemmResult& r) {
  if (!r.error.empty()) {
    return std::format("{}x{}x{} {:7}{}: error: {}", r.m, r.n, r.k, r.mode, r.tile.empty() ? "" : " [" + r.tile + "]",
                       r.error);
  }
  std::string s = std::format("{}x{}x{} {:7} [{}]: median {:.4f} ms (min {:.4f}, max {:.4f}, {} reps) {:.3g} TFLOPS",
                              r.m, r.n, r.k, r.mode, r.tile, r.stats.median_ms, r.stats.min_ms, r.stats.max_ms,
                              r.stats.reps, r.tflops);
  if (r.cublas_tflops > 0) s += std::format(" = {:.2f}x cuBLAS ({:.0f})", r.tflops / r.cublas_tflops, r.cublas_tflops);
  if (r.check_error) s += std::format(" check {:.1e} {}", *r.check_error, failed(r) ? "FAIL" : "ok");
  for (const auto& st : r.kernel_stats) s += std::format("\n    {}: {}", st.name, st.value);
  return s;
}

nlohmann::json to_json(const GemmResult& r) {
  nlohmann::json j = {{"m", r.m}, {"n", r.n}, {"k", r.k}, {"mode", r.mode}, {"tile", r.tile}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  put_stats(j, r.stats);
  j["tflops"] = r.tflops;
  if (r.check_error) j["check_error"] = *r.check_error;
  if (r.cublas_tflops > 0) {
    j["cublas_tflops"] = r.cublas_tflops;
    j["vs_cublas"] = r.tflops / r.cublas_tflops;
  }
  if (!r.kernel_stats.empty()) {
    j["kernel_stats"] = nlohmann::json::object();
    for (const auto& st : r.kernel_stats) j["kernel_stats"][st.name] = st.value;
  }
  return j;
}

}  // namespace bench
