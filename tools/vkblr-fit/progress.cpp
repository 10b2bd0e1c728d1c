#include "vkblr-fit/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <format>

namespace vkblr::fit {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<std::uint64_t>(seconds + 0.5);
  return std::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

// 1234567 -> "1.23M".
std::string format_rate(double x) {
  if (!std::isfinite(x) || x < 0) return "?";
  if (x >= 1e9) return std::format("{:.2f}G", x / 1e9);
  if (x >= 1e6) return std::format("{:.2f}M", x / 1e6);
  if (x >= 1e3) return std::format("{:.2f}k", x / 1e3);
  return std::format("{:.0f}", x);
}

}  // namespace

ProgressStyle progress_style_for(std::FILE* out, bool quiet) {
  if (quiet) return ProgressStyle::quiet;
  return ::isatty(::fileno(out)) ? ProgressStyle::bar : ProgressStyle::lines;
}

std::string format_progress_line(const ProgressSample& sample, std::uint64_t total_steps) {
  const double eta = sample.step == 0 ? NAN
                                      : sample.elapsed_s / static_cast<double>(sample.step) *
                                            static_cast<double>(total_steps - std::min(sample.step, total_steps));
  const std::size_t digits = std::to_string(total_steps).size();
  return std::format("{:>{}}/{}  err {}  flips/step {:.1f}  tok/s {}  ETA {}", sample.step, digits, total_steps,
                     std::isnan(sample.error) ? std::string("-") : std::format("{:.3e}", sample.error),
                     sample.flips_per_step, format_rate(sample.tokens_per_s), format_duration(eta));
}

std::string format_progress_bar(const ProgressSample& sample, std::uint64_t total_steps, std::size_t bar_width) {
  const double fraction =
      total_steps == 0 ? 1.0 : std::min(1.0, static_cast<double>(sample.step) / static_cast<double>(total_steps));
  const auto filled = static_cast<std::size_t>(fraction * static_cast<double>(bar_width));
  return "[" + std::string(filled, '#') + std::string(bar_width - filled, '-') + "]  " +
         format_progress_line(sample, total_steps);
}

ProgressReporter::ProgressReporter(std::FILE* out, ProgressStyle style, std::uint64_t total_steps,
                                   double line_interval_s)
    : out_(out),
      style_(style),
      total_steps_(total_steps),
      interval_s_(style == ProgressStyle::bar ? 0.1 : line_interval_s) {}

void ProgressReporter::update(const ProgressSample& sample) {
  if (style_ == ProgressStyle::quiet) return;
  const bool last = sample.step >= total_steps_;
  if (!last && sample.elapsed_s - last_shown_s_ < interval_s_) return;
  last_shown_s_ = sample.elapsed_s;
  if (style_ == ProgressStyle::bar) {
    std::fputs(("\r" + format_progress_bar(sample, total_steps_) + "\x1b[K").c_str(), out_);
    bar_open_ = true;
  } else {
    std::fputs(("step " + format_progress_line(sample, total_steps_) + "\n").c_str(), out_);
  }
  std::fflush(out_);
}

void ProgressReporter::finish() {
  if (bar_open_) {
    std::fputs("\n", out_);
    std::fflush(out_);
    bar_open_ = false;
  }
}

}  // namespace vkblr::fit
