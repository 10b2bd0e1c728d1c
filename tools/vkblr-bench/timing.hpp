// timing.hpp — how vkblr-bench times GPU work: record `reps` copies of a
// batch into one Graph with GPU timestamps around every dispatch, run it
// untimed `warmup` times and for at least kWarmupSeconds, then once more
// timed; per-rep time = the sum of that rep's dispatch durations (so host
// submission gaps are excluded); report the median (and min, max) over reps.
//
// Why a time floor on the warm-up: on the H200, cases that followed host
// work (building the next case's inputs) ran up to 5× slower after a
// warm-up of a few short batches (presumably clocks ramping up); with the
// floor, repeated runs agree within 1 %.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

namespace bench {

inline constexpr double kWarmupSeconds = 0.3;

// Calls run() `runs` times, then again until kWarmupSeconds have passed.
template <class Run>
void warm_up(std::uint32_t runs, Run&& run) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < runs; ++i) run();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < kWarmupSeconds) run();
}

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::uint32_t reps = 0;
};

// The timing fields of a case's JSON: median_ms, min_ms, max_ms, reps.
template <class Json>
void put_stats(Json& j, const Stats& s) {
  j["median_ms"] = s.median_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["reps"] = s.reps;
}

inline Stats stats_of(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.reps = static_cast<std::uint32_t>(ms.size());
  s.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

// The span (first dispatch start to last end) and the busy time (the sum
// of dispatch durations) of each rep of a profiled run whose events hold
// `reps` reps of `per_rep(r)` dispatches each, in order; `on_event(event)`
// sees every event counted.
struct RepTimes {
  Stats span, busy;
};
template <class PerRep, class OnEvent>
RepTimes rep_times(const std::vector<vkblr::ProfileEvent>& ev, std::uint32_t reps, PerRep&& per_rep,
                   OnEvent&& on_event) {
  std::vector<double> span, busy;
  std::size_t e = 0;
  for (std::uint32_t r = 0; r < reps && e < ev.size(); ++r) {
    double first = 1e300, last = 0, sum = 0;
    for (std::uint32_t d = 0; d < per_rep(r) && e < ev.size(); ++d, ++e) {
      first = std::min(first, ev[e].start_us);
      last = std::max(last, ev[e].start_us + ev[e].duration_us);
      sum += ev[e].duration_us;
      on_event(ev[e]);
    }
    span.push_back((last - first) * 1e-3);
    busy.push_back(sum * 1e-3);
  }
  return {stats_of(span), stats_of(busy)};
}

// Wall time per rep of a graph that holds `reps` reps, unprofiled: warmed
// up as warm_up does, then the median of 5 timed runs, each over `reps`.
inline double replay_ms(vkblr::Graph& graph, std::uint32_t warmup, std::uint32_t reps) {
  warm_up(warmup, [&] { graph.run(); });
  std::vector<double> wall;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    graph.run();
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return stats_of(wall).median_ms;
}

// `record(rec, rep)` adds one rep's dispatches (rep = 0 .. reps-1, e.g. to
// rotate inputs). Returns per-rep GPU time statistics.
inline Stats time_gpu(vkblr::Context& ctx, std::uint32_t warmup, std::uint32_t reps,
                      const std::function<void(vkblr::Recorder&, std::uint32_t)>& record) {
  vkblr::Profiler& prof = ctx.profiler();
  const bool was = prof.enabled();
  prof.enable(true);
  vkblr::Recorder rec(ctx);
  std::vector<std::uint32_t> dispatches_per_rep;
  for (std::uint32_t r = 0; r < reps; ++r) {
    const std::uint32_t before = rec.dispatches();
    record(rec, r);
    dispatches_per_rep.push_back(rec.dispatches() - before);
  }
  vkblr::Graph g = rec.finish();
  prof.enable(was);
  warm_up(warmup, [&] { g.run(); });
  prof.reset();
  g.run();
  return rep_times(
             prof.events(), reps, [&](std::uint32_t r) { return dispatches_per_rep[r]; },
             [](const vkblr::ProfileEvent&) {})
      .busy;
}

}  // namespace bench
