// vkblr/profiler.hpp — counters, GPU timestamps per dispatch, Chrome trace.
//
// Counters (dispatches, barriers, submits, bytes moved between host and
// device, the device's busy time) are always kept: they cost an integer add
// (and two timestamps per batch). GPU timestamps are
// written around every dispatch only while the profiler is enabled
// (ContextOptions::profile or VKBLR_PROFILE=1, or enable()); a batch
// recorded while it was off has none and costs nothing extra. Times are
// collected when a batch's submit completes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vkblr {

struct ProfileCounters {
  std::uint64_t dispatches = 0;  // recorded
  std::uint64_t barriers = 0;    // recorded, data barriers only
  std::uint64_t submits = 0;     // queue submissions (every Graph run and every sync transfer)
  std::uint64_t bytes_uploaded = 0;
  std::uint64_t bytes_downloaded = 0;
  // GPU time of the recorded batches that completed: per submit, from a
  // timestamp at the batch's start to one at its end (0 on devices whose
  // queue writes no timestamps). Transfers by Buffer::write/read are not in it.
  std::uint64_t device_busy_ns = 0;
};

// One timed dispatch of one submit.
struct ProfileEvent {
  std::string name;  // dispatch name
  std::string tag;   // Recorder::tag() at record time ("" when none)
  std::uint64_t submit = 0;  // submit sequence number
  double start_us = 0;       // from the first timestamp of the profiler's epoch
  double duration_us = 0;
};

struct ProfileTotal {
  std::uint64_t count = 0;
  double total_us = 0;
};

class Profiler {
 public:
  bool enabled() const noexcept { return enabled_; }
  // Affects batches recorded afterwards.
  void enable(bool on) noexcept { enabled_ = on; }

  const ProfileCounters& counters() const noexcept { return counters_; }
  ProfileCounters& counters() noexcept { return counters_; }

  // Timed dispatches since the last reset (the most recent kMaxEvents).
  const std::vector<ProfileEvent>& events() const noexcept { return events_; }
  // Totals per dispatch name; a tagged dispatch counts as "tag/name" too
  // under the tag ("sign" for the sign part of a backward batch).
  std::map<std::string, ProfileTotal> totals() const;
  std::map<std::string, ProfileTotal> tag_totals() const;

  // Forgets events and counters.
  void reset();

  // Chrome trace ("traceEvents" JSON) of the kept events: load it in
  // chrome://tracing or ui.perfetto.dev.
  std::string chrome_trace() const;
  // Writes chrome_trace() atomically to `path`.
  void write_chrome_trace(const std::string& path) const;
  // A text table of totals per name, largest first.
  std::string summary() const;

  // Library internals: one timed dispatch of submit `submit`, in device
  // timestamp ticks of `period_ns` nanoseconds.
  void add_timed(const char* name, const std::string& tag, std::uint64_t begin_ticks, std::uint64_t end_ticks,
                 double period_ns, std::uint64_t submit);
  static constexpr std::size_t kMaxEvents = 1u << 20;

 private:
  bool enabled_ = false;
  ProfileCounters counters_;
  std::vector<ProfileEvent> events_;
  std::map<std::string, ProfileTotal> totals_;
  std::map<std::string, ProfileTotal> tag_totals_;
  bool has_epoch_ = false;
  std::uint64_t epoch_ticks_ = 0;
};

}  // namespace vkblr
