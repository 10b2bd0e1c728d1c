// stages.hpp — the stages of a vkblr-fit run (load, statistics, init,
// refit, train, write; a manifest run's allocate, for --model-bpw; any
// other program's stages by name): each with its own progress bar on the terminal
// (plain lines in a log, nothing when quiet) and its wall time and device
// busy time (the context's per-batch timestamps, Profiler counters) for
// the report.
//
// On a terminal a stage is one line redrawn in place:
//   init        [############------------]  1/2 paths
// and, when it ends, the same line with its times:
//   init        [########################]  2/2 paths  0.84 s (device 0.31 s)
// The train stage's line carries the training fields of progress.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr-fit/report/progress.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

enum class Stage { load, statistics, init, refit, train, write, allocate };
std::string_view stage_name(Stage stage);  // "load", ...

struct StageTime {
  std::string stage;  // its name
  double wall_s = 0;
  double device_s = 0;  // GPU busy time of the stage's batches
};

class StageProgress {
 public:
  StageProgress(Context& ctx, std::FILE* out, ProgressStyle style);

  // Ends the running stage (if any) and starts `stage` with `total` units
  // named `unit` ("chunks", "paths", "sweeps", "steps").
  void begin(Stage stage, std::uint64_t total, std::string unit);
  // The same for a stage of another program, by its name (vkblr-train's
  // "teacher", "evaluate", ...).
  void begin(std::string_view stage, std::uint64_t total, std::string unit);
  // Units done so far, and an optional detail after them (the train stage's
  // fields). Redrawn at most every 0.1 s on a terminal, every 5 s in lines.
  void update(std::uint64_t done, const std::string& detail = {});
  // The running stage's total, when its work is found as it goes (the
  // allocate stage's curves, measured in rounds).
  void set_total(std::uint64_t total) { total_ = total; }
  // Ends the running stage: its final line with its times.
  void end();

  // A message between stages (a finished stage's result, a warning).
  void say(const std::string& line);

  const std::vector<StageTime>& times() const { return times_; }
  nlohmann::json to_json() const;  // {"load": {"wall_s": ..., "device_s": ...}, ...}

 private:
  std::string line(std::uint64_t done, const std::string& detail) const;
  double now_s() const;

  Context& ctx_;
  std::FILE* out_;
  ProgressStyle style_;
  std::vector<StageTime> times_;
  bool running_ = false;
  std::string stage_ = "load";
  std::uint64_t total_ = 0, done_ = 0;
  std::string unit_, detail_;
  double start_s_ = 0, shown_s_ = -1e300;
  std::uint64_t start_busy_ns_ = 0;
  bool open_line_ = false;
};

}  // namespace vkblr::fit
