#include "vkblr-fit/report/stages.hpp"

#include <algorithm>
#include <chrono>
#include <format>

#include "vkblr/profiler.hpp"

namespace vkblr::fit {

std::string_view stage_name(Stage stage) {
  switch (stage) {
    case Stage::load: return "load";
    case Stage::statistics: return "statistics";
    case Stage::init: return "init";
    case Stage::refit: return "refit";
    case Stage::train: return "train";
    case Stage::write: return "write";
    case Stage::allocate: return "allocate";
  }
  return "?";
}

StageProgress::StageProgress(Context& ctx, std::FILE* out, ProgressStyle style)
    : ctx_(ctx), out_(out), style_(style) {}

double StageProgress::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string StageProgress::line(std::uint64_t done, const std::string& detail) const {
  constexpr std::size_t kWidth = 24;
  const double fraction = total_ == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  const auto filled = static_cast<std::size_t>(fraction * kWidth);
  std::string s = std::format("{:<11} [{}{}]  {}/{} {}", stage_, std::string(filled, '#'),
                              std::string(kWidth - filled, '-'), done, total_, unit_);
  if (!detail.empty()) s += "  " + detail;
  return s;
}

void StageProgress::begin(Stage stage, std::uint64_t total, std::string unit) {
  begin(stage_name(stage), total, std::move(unit));
}

void StageProgress::begin(std::string_view stage, std::uint64_t total, std::string unit) {
  if (running_) end();
  running_ = true;
  stage_ = stage;
  total_ = total;
  done_ = 0;
  unit_ = std::move(unit);
  detail_.clear();
  start_s_ = now_s();
  shown_s_ = -1e300;
  start_busy_ns_ = ctx_.profiler().counters().device_busy_ns;
  update(0);
}

void StageProgress::update(std::uint64_t done, const std::string& detail) {
  done_ = done;
  detail_ = detail;
  if (style_ == ProgressStyle::quiet) return;
  const double t = now_s();
  const double interval = style_ == ProgressStyle::bar ? 0.1 : 5.0;
  if (done < total_ && t - shown_s_ < interval) return;
  shown_s_ = t;
  if (style_ == ProgressStyle::bar) {
    std::fputs(("\r" + line(done, detail) + "\x1b[K").c_str(), out_);
    open_line_ = true;
  } else if (done < total_) {
    std::fputs((line(done, detail) + "\n").c_str(), out_);
  }
  std::fflush(out_);
}

void StageProgress::end() {
  if (!running_) return;
  running_ = false;
  StageTime t{stage_, now_s() - start_s_,
              static_cast<double>(ctx_.profiler().counters().device_busy_ns - start_busy_ns_) * 1e-9};
  times_.push_back(t);
  if (style_ == ProgressStyle::quiet) return;
  const std::string text = line(done_, detail_) + std::format("  {:.2f} s (device {:.2f} s)", t.wall_s, t.device_s);
  std::fputs(((style_ == ProgressStyle::bar ? "\r" : "") + text + (style_ == ProgressStyle::bar ? "\x1b[K\n" : "\n"))
                 .c_str(),
             out_);
  std::fflush(out_);
  open_line_ = false;
}

void StageProgress::say(const std::string& text) {
  if (style_ == ProgressStyle::quiet) return;
  if (open_line_) std::fputs("\r\x1b[K", out_);
  std::fputs((text + "\n").c_str(), out_);
  if (open_line_) {
    std::fputs(line(done_, detail_).c_str(), out_);
  }
  std::fflush(out_);
}

nlohmann::json StageProgress::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const StageTime& t : times_) {
    nlohmann::json& e = j[t.stage];
    if (e.is_null()) e = {{"wall_s", 0.0}, {"device_s", 0.0}};
    e["wall_s"] = e["wall_s"].get<double>() + t.wall_s;
    e["device_s"] = e["device_s"].get<double>() + t.device_s;
  }
  return j;
}

}  // namespace vkblr::fit
