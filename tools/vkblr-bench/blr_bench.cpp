// vkblr-bench blr: step time of a blr layer, with the share of each kind of
// dispatch and the gaps between them.
#include "blr_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <format>
#include <vkblr/ops/blr_lane.hpp>

namespace bench {
namespace {

double torch_compile_reference(const BlrCase& c) {
  if (c.ntok != 4096 || c.paths != 2) return 0;
  if (c.m == 3584 && c.n == 1024 && c.r == 512) return 1.02;
  if (c.m == 1024 && c.n == 3584 && c.r == 512) return 0.60;
  if (c.m == 6144 && c.n == 1024 && c.r == 512) return 0.76;
  if (c.m == 1024 && c.n == 1024 && c.r == 256) return 0.97;
  return 0;
}

// Dispatch class for the shares: the sign part, the GEMMs, the column
// reductions, and everything else (staging, scaling).
std::string class_of(const vkblr::ProfileEvent& e) {
  if (e.tag == "sign") return "sign";
  if (e.name.rfind("gemm", 0) == 0) return "gemm";
  if (e.name.rfind("colsum", 0) == 0) return "reductions";
  return "elementwise";
}

}  // namespace

MemoryNeed blr_memory(const vkblr::Context& ctx, const BlrCase& c, const BlrBenchOptions& o) {
  MemoryNeed need = layer_memory(ctx, c, o.sign_grads, o.lanes);
  // x, dy (uploaded from host copies, through a staging buffer as large), y, dx
  const double x = static_cast<double>(c.ntok) * c.n * 4, y = static_cast<double>(c.ntok) * c.m * 4;
  need.device_bytes += 2 * x + 2 * y + std::max(x, y);
  need.largest_buffer = std::max({need.largest_buffer, x, y});
  need.host_bytes += x + y;
  return need;
}

std::vector<BlrResult> run_blr_bench(vkblr::Context& ctx, const BlrBenchOptions& o) {
  std::vector<BlrResult> out;
  for (const BlrCase& c : o.cases) {
    BlrResult res;
    res.c = c;
    res.lanes = o.lanes;
    res.torch_compile_ms = torch_compile_reference(c);
    try {
      require_fits(ctx.caps(), blr_memory(ctx, c, o), "blr " + to_string(c));
      vkblr::BlrLayer layer = random_layer(ctx, c, o.sign_grads);
      vkblr::ops::BlrShared shared(ctx, c.ntok, c.m, c.n, c.r, o.lanes);  // its lane_bytes() is reported
      vkblr::BlrScratch scratch(ctx, layer, shared);
      vkblr::Buffer x = ctx.upload(random_floats(std::size_t{c.ntok} * c.n, 60, -2.0f, 2.0f));
      vkblr::Buffer dy = ctx.upload(random_floats(std::size_t{c.ntok} * c.m, 61, -1e-3f, 1e-3f));
      vkblr::Buffer y = ctx.buffer(std::size_t{c.ntok} * c.m * 4), dx = ctx.buffer(std::size_t{c.ntok} * c.n * 4);
      vkblr::BlrBackward options;
      options.sign_grads = o.sign_grads;
      auto record_step = [&](vkblr::Recorder& rec) {
        vkblr::blr_forward(rec, ctx, layer, scratch, x, y, c.ntok);
        vkblr::blr_backward(rec, ctx, layer, scratch, x, dy, dx, c.ntok, options);
      };

      // profiled: per-step span, busy time and shares
      vkblr::Profiler& prof = ctx.profiler();
      prof.enable(true);
      vkblr::Recorder rec(ctx);
      std::vector<std::uint32_t> per_step;
      for (std::uint32_t s = 0; s < o.reps; ++s) {
        const std::uint32_t before = rec.dispatches();
        record_step(rec);
        per_step.push_back(rec.dispatches() - before);
      }
      res.dispatches = per_step.empty() ? 0 : per_step[0];
      res.barriers = rec.barriers() / std::max(1u, o.reps);
      res.lane_bytes = shared.lane_bytes();
      res.transient_bytes = rec.transient_bytes();  // reused from step to step
      vkblr::Graph profiled = rec.finish();
      prof.enable(false);
      warm_up(o.warmup, [&] { profiled.run(); });
      prof.reset();
      profiled.run();
      std::map<std::string, double> cls;
      double all = 0;
      const RepTimes times = rep_times(
          prof.events(), o.reps, [&](std::uint32_t s) { return per_step[s]; },
          [&](const vkblr::ProfileEvent& ev) {
            cls[class_of(ev)] += ev.duration_us;
            res.per_name_ms[(ev.tag.empty() ? "" : ev.tag + "/") + ev.name] +=
                ev.duration_us * 1e-3 / static_cast<double>(o.reps);
            all += ev.duration_us;
          });
      res.span = times.span;
      res.busy = times.busy;
      for (auto& [k, v] : cls) res.share[k] = all > 0 ? v / all : 0;

      // unprofiled replay: wall time of `reps` steps in one submit
      vkblr::Recorder plain(ctx);
      for (std::uint32_t s = 0; s < o.reps; ++s) record_step(plain);
      vkblr::Graph graph = plain.finish();
      res.replay_ms = replay_ms(graph, o.warmup, o.reps);
    } catch (const std::exception& err) {  // vkblr::Error, or host memory
      res.error = err.what();
    }
    if (!o.quiet) std::fprintf(stderr, "%s\n", format_blr_result(res).c_str());
    out.push_back(std::move(res));
  }
  return out;
}

std::string format_blr_result(const BlrResult& r) {
  const BlrCase& c = r.c;
  std::string s = std::format("blr m={} n={} r={} ntok={} P={} lanes={}: ", c.m, c.n, c.r, c.ntok, c.paths, r.lanes);
  if (!r.error.empty()) return s + "error: " + r.error;
  // (the profiled run's timestamps keep dispatches from overlapping, so busy
  // stays below span; the overlap of paths side by side shows in replay)
  s += std::format("step {:.3f} ms (replay {:.3f} ms), busy {:.3f} ms, gaps {:.1f}%, {} dispatches, {} barriers;",
                   r.span.median_ms, r.replay_ms, r.busy.median_ms,
                   r.span.median_ms > 0 ? 100.0 * (1.0 - r.busy.median_ms / r.span.median_ms) : 0.0, r.dispatches,
                   r.barriers);
  for (const auto& [k, v] : r.share) s += std::format(" {} {:.0f}%", k, 100 * v);
  s += std::format("; memory {:.1f} MiB per lane, transients {:.1f} MiB", static_cast<double>(r.lane_bytes) / (1 << 20),
                   static_cast<double>(r.transient_bytes) / (1 << 20));
  if (r.torch_compile_ms > 0) {
    s += std::format("; torch.compile {:.2f} ms = {:.2f}x", r.torch_compile_ms, r.torch_compile_ms / r.replay_ms);
  }
  for (const auto& [name, ms] : r.per_name_ms) s += std::format("\n    {:<28} {:.4f} ms/step", name, ms);
  return s;
}

nlohmann::json to_json(const BlrResult& r) {
  const BlrCase& c = r.c;
  nlohmann::json j = {{"m", c.m}, {"n", c.n}, {"r", c.r}, {"ntok", c.ntok}, {"paths", c.paths}, {"lanes", r.lanes}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j["step_ms"] = r.span.median_ms;
  j["step_min_ms"] = r.span.min_ms;
  j["replay_ms"] = r.replay_ms;
  j["busy_ms"] = r.busy.median_ms;
  j["share"] = r.share;
  j["dispatches"] = r.dispatches;
  j["barriers"] = r.barriers;
  j["lane_bytes"] = r.lane_bytes;
  j["transient_bytes"] = r.transient_bytes;
  j["per_name_ms"] = r.per_name_ms;
  j["reps"] = r.span.reps;
  if (r.torch_compile_ms > 0) {
    j["torch_compile_ms"] = r.torch_compile_ms;
    j["speedup_vs_torch_compile"] = r.torch_compile_ms / r.replay_ms;
  }
  return j;
}

}  // namespace bench
