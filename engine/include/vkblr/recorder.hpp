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
//
// Transients (vkblr/dispatch.hpp): the Recorder gives each op that binds a
// Transient a device buffer of its own for as long as the op is recorded,
// from the start of its Ops to their end. After that the buffer serves
// later ops, but only once a barrier has followed its last use (the hazard
// tracker proves this op done with it), so that a reuse never adds a
// barrier; ops that run side by side (between the same barriers) get
// distinct buffers. The batch owns these buffers: the Graph keeps them until
// it is destroyed. A transient must be recorded with its whole Ops (add(Ops)
// or parallel); add(Dispatch) refuses a dispatch that binds one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

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
  // Bytes of the transient buffers the graph owns.
  std::uint64_t transient_bytes() const noexcept;
  explicit operator bool() const noexcept { return static_cast<bool>(batch_); }

  explicit Graph(std::unique_ptr<detail::RecordedBatch> batch) noexcept;

 private:
  std::unique_ptr<detail::RecordedBatch> batch_;
};

// Ops recorded under a profiler tag ("": the recorder's tag).
struct TaggedOps {
  std::string tag;
  Ops ops;
};

// One list of work for Recorder::parallel: its steps in order, each step one
// or more ops.
using Branch = std::vector<std::vector<TaggedOps>>;

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
  // Records independent branches side by side: step t of every branch,
  // then step t + 1 (a branch with fewer steps has none there); within a
  // step, the first dispatch of every op of every branch (branch order, then
  // op order), then every second dispatch, and so on, each op under its tag.
  // Independent work so falls between the same barriers and runs together.
  // Every conflict still gets its barrier (no access races), but the
  // interleaving sets the order of conflicting accesses: a buffer that
  // several branches write in the same step and pass (an output accumulated
  // over branches) is written in branch order. Branches must not otherwise
  // touch what another writes: the result would depend on the interleaving.
  // The ops of a step never share a transient. The recorder's tag is as
  // before afterwards.
  Recorder& parallel(std::span<const Branch> branches);
  Recorder& barrier();
  // Profiler attribution of the dispatches recorded from now on ("" = none).
  Recorder& tag(std::string name);

  std::uint32_t dispatches() const noexcept;
  std::uint32_t barriers() const noexcept;
  // Bytes of the transient buffers the batch owns so far.
  std::uint64_t transient_bytes() const noexcept;
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
