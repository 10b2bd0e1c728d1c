// progress.hpp — training progress on the terminal.
//
// On a terminal, one bar redrawn in place (at most every 0.1 s):
//   [##########----------]  500/1000  err 1.234e-02  flips/step 12.5  tok/s 1.23M  ETA 0:00:42
// otherwise (a log, a pipe) the same fields as plain lines, at most one per
// `line_interval_s`; nothing when quiet. The last step is always shown.
// The clock is the caller's (ProgressSample::elapsed_s), so output depends
// only on the samples.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace vkblr::fit {

enum class ProgressStyle { bar, lines, quiet };

// bar when `out` is a terminal, lines otherwise, quiet with `quiet`.
ProgressStyle progress_style_for(std::FILE* out, bool quiet);

struct ProgressSample {
  std::uint64_t step = 0;      // steps done, 1-based
  double error = NAN;          // latest held-out error; NaN: not measured yet
  double flips_per_step = 0;   // sign flips per step, recent average
  double tokens_per_s = 0;     // recent throughput
  double elapsed_s = 0;        // since training started
};

// The fields as text; the ETA extrapolates elapsed_s over the steps left.
std::string format_progress_line(const ProgressSample& sample, std::uint64_t total_steps);
// The bar and the fields (bar_width characters between the brackets).
std::string format_progress_bar(const ProgressSample& sample, std::uint64_t total_steps, std::size_t bar_width = 24);

class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, ProgressStyle style, std::uint64_t total_steps, double line_interval_s = 5.0);

  // Shows `sample` unless the last output was too recent (see above).
  void update(const ProgressSample& sample);
  // Ends the bar's line; call once after the last update.
  void finish();

 private:
  std::FILE* out_;
  ProgressStyle style_;
  std::uint64_t total_steps_;
  double interval_s_;
  double last_shown_s_ = -INFINITY;
  bool bar_open_ = false;
};

}  // namespace vkblr::fit
