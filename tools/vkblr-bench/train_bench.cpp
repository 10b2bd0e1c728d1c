// vkblr-bench train: BlrTrainer steps per second and GPU time per step.
#include "train_bench.hpp"

#include <algorithm>
#include <chrono>
#include <format>

namespace bench {

MemoryNeed train_memory(const vkblr::Context& ctx, const TrainCase& c, const TrainBenchOptions& o) {
  // the layer with sign gradients stands for the trainer's too: it keeps
  // G_U, G_V of the same sizes in its sign matrices (SignInit::deferred)
  MemoryNeed need = layer_memory(ctx, c, o.train_signs, vkblr::BlrTrainerConfig{}.path_lanes);
  const double m = c.m, n = c.n, r = c.r, t = c.ntok;
  const double x = t * n * 4, y = t * m * 4;
  const double scales = layer_scale_floats(ctx, c) * 4;
  // x and target (and the staging buffer), the trainer's y, dy, dx; its
  // mask, floors and Adam moments (each as large as the layer's scales)
  need.device_bytes += 2 * x + 3 * y + std::max(x, y) + 4 * scales;
  need.largest_buffer = std::max({need.largest_buffer, x, y});
  if (o.train_signs) {
    // per sign matrix of e elements: w, m, v (at most f32 each), flip
    // scores (with a budget), flipped and initial bits
    for (const double rows : {m, n}) {
      const double e = rows * r;
      need.device_bytes += c.paths * (e * 4 * (o.flip_budget > 0 ? 4 : 3) + e / 4);
    }
  }
  need.host_bytes += x + 2 * y + 2 * scales;  // inputs and target, mask and floors
  return need;
}

std::vector<TrainResult> run_train_bench(vkblr::Context& ctx, const TrainBenchOptions& o) {
  std::vector<TrainResult> out;
  for (const TrainCase& c : o.cases) {
    TrainResult res;
    res.c = c;
    res.train_signs = o.train_signs;
    try {
      require_fits(ctx.caps(), train_memory(ctx, c, o), "train " + to_string(c));
      const auto target_h = random_floats(std::size_t{c.ntok} * c.m, 61, -1.0f, 1.0f);
      double target_sq = 0;
      for (float v : target_h) target_sq += double{v} * v;
      vkblr::Buffer x = ctx.upload(random_floats(std::size_t{c.ntok} * c.n, 60, -2.0f, 2.0f));
      vkblr::Buffer target = ctx.upload(target_h);
      vkblr::BlrTrainerConfig config;
      config.sign_init.opt = o.sign_opt;
      config.sign_step.flip_budget = o.flip_budget;
      config.train_signs = o.train_signs;
      config.loss_norm = static_cast<float>(target_sq);

      // wall clock: the trainer vkblr-fit uses, one replayed graph per step
      {
        vkblr::BlrLayer layer = random_layer(ctx, c, false);
        vkblr::BlrTrainer trainer(ctx, layer, c.ntok, config);
        const std::size_t batch = trainer.add_batch(x, target);
        warm_up(o.warmup, [&] { trainer.step(batch, 0.02f, 2e-3f); });
        std::vector<double> ms;
        const auto t0 = std::chrono::steady_clock::now();
        for (std::uint32_t s = 0; s < o.steps; ++s) {
          const auto a = std::chrono::steady_clock::now();
          trainer.step(batch, 0.02f, 2e-3f);
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
        }
        const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        res.steps_per_s = o.steps / total;
        res.step_wall = stats_of(ms);
      }

      // GPU time: a second trainer whose graphs carry timestamps
      vkblr::Profiler& prof = ctx.profiler();
      prof.enable(true);
      vkblr::BlrLayer layer = random_layer(ctx, c, false);
      vkblr::BlrTrainer trainer(ctx, layer, c.ntok, config);
      const std::size_t batch = trainer.add_batch(x, target);
      prof.enable(false);
      warm_up(o.warmup, [&] { trainer.step(batch, 0.02f, 2e-3f); });
      std::vector<double> busy;
      std::map<std::string, double> names;
      const std::uint32_t profiled = std::min<std::uint32_t>(o.steps, 50);
      for (std::uint32_t s = 0; s < profiled; ++s) {
        prof.reset();
        trainer.step(batch, 0.02f, 2e-3f);
        double sum = 0;
        for (const vkblr::ProfileEvent& e : prof.events()) {
          sum += e.duration_us;
          names[(e.tag.empty() ? "" : e.tag + "/") + e.name] += e.duration_us * 1e-3 / profiled;
        }
        res.dispatches = static_cast<std::uint32_t>(prof.events().size());
        busy.push_back(sum * 1e-3);
      }
      res.gpu = stats_of(busy);
      res.per_name_ms = names;
    } catch (const std::exception& e) {  // vkblr::Error, or host memory
      res.error = e.what();
    }
    if (!o.quiet) std::fprintf(stderr, "%s\n", format_train_result(res).c_str());
    out.push_back(res);
  }
  return out;
}

std::string format_train_result(const TrainResult& r) {
  std::string s = std::format("train m={} n={} r={} ntok={} P={}{}: ", r.c.m, r.c.n, r.c.r, r.c.ntok, r.c.paths,
                              r.train_signs ? "" : " (signs frozen)");
  if (!r.error.empty()) return s + "error: " + r.error;
  s += std::format("{:.0f} steps/s (wall, median step {:.3f} ms), GPU {:.3f} ms/step in {} dispatches",
                   r.steps_per_s, r.step_wall.median_ms, r.gpu.median_ms, r.dispatches);
  for (const auto& [name, ms] : r.per_name_ms) s += std::format("\n    {:<28} {:.4f} ms/step", name, ms);
  return s;
}

nlohmann::json to_json(const TrainResult& r) {
  nlohmann::json j = {{"m", r.c.m}, {"n", r.c.n}, {"r", r.c.r}, {"ntok", r.c.ntok}, {"paths", r.c.paths}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j["train_signs"] = r.train_signs;
  j["steps_per_s"] = r.steps_per_s;
  j["step_wall_ms"] = {{"median", r.step_wall.median_ms}, {"min", r.step_wall.min_ms}, {"max", r.step_wall.max_ms}};
  j["gpu_ms"] = {{"median", r.gpu.median_ms}, {"min", r.gpu.min_ms}, {"max", r.gpu.max_ms}};
  j["dispatches"] = r.dispatches;
  j["per_name_ms"] = r.per_name_ms;
  return j;
}

}  // namespace bench
