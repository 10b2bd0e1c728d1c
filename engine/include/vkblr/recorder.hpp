// vkblr/recorder.hpp — batches dispatches, fills and copies into one command
// buffer with only the barriers the data needs.
//
// Hazard rule: before a command, the Recorder emits one global memory
// barrier (compute + transfer stages) when the command reads or writes a
// byte range written since the last barrier, or writes a range read since
// the last barrier; otherwise none. barrier() forces one. Every batch
// starts with one entry barrier that orders it after earlier submissions
// (not counted in barriers()). VKBLR_BARRIERS=all puts a barrier after every
// command instead (to expose a missing dependency as a changed result).
//
// run() submits once and waits; finish() turns the batch into a Graph that
// is submitted again and again without re-recording. The buffers a batch
// names must stay alive and unmoved while it can run; values that change per
// replay belong in a host_buffer the kernels read (e.g. an Adam step).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vkblr/dispatch.hpp"

namespace vkblr {

class Context;

namespace detail {
struct RecordedBatch;
}

// A finished batch: one command buffer, replayed by run().
class Graph {
 public:
  Graph() noexcept;
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  // Submits once and waits; collects profiler timestamps if recorded.
  void run();
  // Submits without waiting; wait() before the next submit or a host read.
  void submit();
  void wait();

  std::uint32_t dispatches() const noexcept;
  std::uint32_t barriers() const noexcept;
  explicit operator bool() const noexcept { return static_cast<bool>(batch_); }

  explicit Graph(std::unique_ptr<detail::RecordedBatch> batch) noexcept;

 private:
  std::unique_ptr<detail::RecordedBatch> batch_;
};

class Recorder {
 public:
  explicit Recorder(Context& ctx);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Recorder& add(const Dispatch& d);
  Recorder& add(const Ops& ops);
  // Sets 32-bit words of [offset, offset + bytes) to `word` (bytes a multiple of 4).
  Recorder& fill(const Buffer& dst, std::uint32_t word, std::uint64_t offset = 0, std::uint64_t bytes = kWholeBuffer);
  Recorder& copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes = kWholeBuffer, std::uint64_t src_offset = 0,
                 std::uint64_t dst_offset = 0);
  Recorder& barrier();
  // Profiler attribution of the dispatches recorded from now on ("" = none).
  Recorder& tag(std::string name);

  std::uint32_t dispatches() const noexcept;
  std::uint32_t barriers() const noexcept;
  bool empty() const noexcept;

  // Submit once, wait, and start a new empty batch.
  void run();
  // The batch as a reusable Graph; the recorder starts a new empty batch.
  Graph finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace vkblr
