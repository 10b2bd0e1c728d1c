#include "vkblr/profiler.hpp"

#include <algorithm>
#include <format>

#include "file_io.hpp"

namespace vkblr {

void Profiler::add_timed(const char* name, const std::string& tag, std::uint64_t begin_ticks,
                         std::uint64_t end_ticks, double period_ns, std::uint64_t submit) {
  if (!has_epoch_) {
    epoch_ticks_ = begin_ticks;
    has_epoch_ = true;
  }
  ProfileEvent e;
  e.name = name;
  e.tag = tag;
  e.submit = submit;
  // ticks before the epoch (another queue's clock drift) clamp to 0
  e.start_us = begin_ticks >= epoch_ticks_ ? static_cast<double>(begin_ticks - epoch_ticks_) * period_ns * 1e-3 : 0.0;
  e.duration_us = end_ticks >= begin_ticks ? static_cast<double>(end_ticks - begin_ticks) * period_ns * 1e-3 : 0.0;
  ProfileTotal& t = totals_[e.name];
  ++t.count;
  t.total_us += e.duration_us;
  if (!e.tag.empty()) {
    ProfileTotal& tt = tag_totals_[e.tag];
    ++tt.count;
    tt.total_us += e.duration_us;
  }
  if (events_.size() < kMaxEvents) events_.push_back(std::move(e));
}

std::map<std::string, ProfileTotal> Profiler::totals() const { return totals_; }
std::map<std::string, ProfileTotal> Profiler::tag_totals() const { return tag_totals_; }

void Profiler::reset() {
  counters_ = {};
  events_.clear();
  totals_.clear();
  tag_totals_.clear();
  has_epoch_ = false;
}

namespace {
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += std::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string Profiler::chrome_trace() const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const ProfileEvent& e = events_[i];
    out += std::format(
        "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":{:.3f},\"dur\":{:.3f},"
        "\"args\":{{\"submit\":{}}}}}{}\n",
        json_escape(e.name), json_escape(e.tag.empty() ? std::string("vkblr") : e.tag), e.start_us, e.duration_us,
        e.submit, i + 1 < events_.size() ? "," : "");
  }
  out += "]}\n";
  return out;
}

void Profiler::write_chrome_trace(const std::string& path) const { detail::write_file_atomic(path, chrome_trace()); }

std::string Profiler::summary() const {
  std::vector<std::pair<std::string, ProfileTotal>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  double all = 0;
  for (const auto& r : rows) all += r.second.total_us;
  std::string out = std::format("{:<28} {:>8} {:>12} {:>10} {:>6}\n", "dispatch", "count", "total ms", "mean us", "%");
  for (const auto& [name, t] : rows) {
    out += std::format("{:<28} {:>8} {:>12.3f} {:>10.2f} {:>6.1f}\n", name, t.count, t.total_us * 1e-3,
                       t.count ? t.total_us / static_cast<double>(t.count) : 0.0,
                       all > 0 ? 100.0 * t.total_us / all : 0.0);
  }
  out += std::format("counters: {} dispatches, {} barriers, {} submits, {} B up, {} B down\n", counters_.dispatches,
                     counters_.barriers, counters_.submits, counters_.bytes_uploaded, counters_.bytes_downloaded);
  return out;
}

}  // namespace vkblr
