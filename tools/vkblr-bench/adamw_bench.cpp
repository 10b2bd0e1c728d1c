// vkblr-bench adamw: the bandwidth of one AdamW step over dense parameters.
#include "adamw_bench.hpp"

#include <cstdio>
#include <format>
#include <stdexcept>

#include "bench_args.hpp"
#include "layer_case.hpp"
#include "loss_bench.hpp"

namespace bench {

std::uint32_t parse_adamw_size(const std::string& text) {
  const std::uint32_t n = parse_numbers(text, ',', 1, 1, "an entry count")[0];
  if (n == 0) throw std::invalid_argument("n = 0: an AdamW step needs at least one entry");
  return n;
}

MemoryNeed adamw_memory(std::uint32_t n, bool copy, bool concat) {
  const double e = n;
  MemoryNeed need;
  // w, g, m1, m2 (+ mask and floors), the copy; the staging buffer of an upload
  need.device_bytes = e * 4 * (4 + (concat ? 2 : 0)) + (copy ? e * 2 : 0) + e * 4;
  need.largest_buffer = e * 4;
  need.host_bytes = e * 4 * 2;
  return need;
}

std::vector<AdamwResult> run_adamw_bench(vkblr::Context& ctx, const AdamwBenchOptions& o) {
  std::vector<AdamwResult> out;
  const double copy_gbs = copy_baseline(ctx, o.warmup, o.reps, o.quiet);
  for (const std::uint32_t n : o.sizes) {
    AdamwResult res;
    res.n = n;
    res.concat = o.concat;
    res.copy = !o.copy ? "none" : *o.copy == vkblr::ops::CopyType::f16 ? "f16" : "bf16";
    res.copy_gbs = copy_gbs;
    try {
      require_fits(ctx.caps(), adamw_memory(n, o.copy.has_value(), o.concat), std::format("adamw n={}", n));
      // a training run's magnitudes: weights ~ 1, gradients ~ 1e-3, moments
      // of a few steps
      vkblr::Buffer w = ctx.upload(random_floats(n, 1, -1.0f, 1.0f));
      vkblr::Buffer g = ctx.upload(random_floats(n, 2, -1e-3f, 1e-3f));
      vkblr::Buffer m1 = ctx.upload(random_floats(n, 3, -1e-4f, 1e-4f));
      vkblr::Buffer m2 = ctx.upload(random_floats(n, 4, 0.0f, 1e-6f));
      vkblr::Buffer copy = ctx.buffer((std::uint64_t{n} + 1) / 2 * 4);
      vkblr::Buffer mask, floors;
      if (o.concat) {
        mask = ctx.upload(std::vector<float>(n, 1.0f));
        floors = ctx.upload(std::vector<float>(n, 0.0f));
      }
      vkblr::Buffer scalars = ctx.host_buffer(vkblr::ops::kLiveScalarWords * 4);
      vkblr::ops::write_live_scalars(scalars, 0, 1e-3f, 10);
      vkblr::ops::AdamOptions ao;
      ao.weight_decay = o.weight_decay;
      ao.live = {&scalars, 0};
      if (o.copy) ao.copy = {&copy, *o.copy};
      const vkblr::Dispatch d = o.concat ? vkblr::ops::adam_cat(ctx, w, g, m1, m2, mask, floors, n, ao)
                                         : vkblr::ops::adam(ctx, w, g, m1, m2, nullptr, n, ao);
      res.stats = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(d); });
      res.bytes = double(n) * (28 + (o.copy ? 2 : 0) + (o.concat ? 8 : 0));
      res.gbs = res.bytes / (res.stats.median_ms * 1e-3) / 1e9;
    } catch (const std::exception& err) {  // vkblr::Error, or host memory
      res.error = err.what();
    }
    if (!o.quiet) std::fprintf(stderr, "%s\n", format_adamw_result(res).c_str());
    out.push_back(std::move(res));
  }
  return out;
}

std::string format_adamw_result(const AdamwResult& r) {
  std::string s = std::format("adamw{} n={} copy={}: ", r.concat ? " (adam_cat)" : "", r.n, r.copy);
  if (!r.error.empty()) return s + "error: " + r.error;
  s += std::format("median {:.4f} ms (min {:.4f}, max {:.4f}), {:.3g} GB at {:.0f} GB/s", r.stats.median_ms,
                   r.stats.min_ms, r.stats.max_ms, r.bytes / 1e9, r.gbs);
  if (r.copy_gbs > 0) s += std::format(" = {:.2f}x the copy's {:.0f} GB/s", r.gbs / r.copy_gbs, r.copy_gbs);
  return s;
}

nlohmann::json to_json(const AdamwResult& r) {
  nlohmann::json j = {{"n", r.n}, {"copy", r.copy}, {"concat", r.concat}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  put_stats(j, r.stats);
  j["bytes"] = r.bytes;
  j["gbs"] = r.gbs;
  j["copy_gbs"] = r.copy_gbs;
  if (r.copy_gbs > 0) j["vs_copy"] = r.gbs / r.copy_gbs;
  return j;
}

}  // namespace bench
