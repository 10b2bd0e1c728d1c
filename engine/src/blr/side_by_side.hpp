// Recording independent ops side by side, for the blr paths of one lane group.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "vkblr/recorder.hpp"

namespace vkblr::detail {

// Ops recorded under a profiler tag ("" = none).
struct TaggedOps {
  std::string tag;
  Ops ops;
};

// Records the first dispatch of every entry, then the second of every
// entry, and so on, each under its entry's tag; the tag is "" afterwards.
// The passes of ops that touch different buffers then fall between the same
// barriers and can run together. Contract: no entry reads what another
// writes; two entries may write one buffer only in the same pass (that pass
// keeps entry order, e.g. dx written by path 0, then accumulated by path 1).
inline void record_side_by_side(Recorder& rec, const std::vector<TaggedOps>& entries) {
  std::size_t passes = 0;
  for (const TaggedOps& e : entries) passes = std::max(passes, e.ops.size());
  for (std::size_t pass = 0; pass < passes; ++pass) {
    for (const TaggedOps& e : entries) {
      if (pass >= e.ops.size()) continue;
      rec.tag(e.tag);
      rec.add(e.ops[pass]);
    }
  }
  rec.tag("");
}

// One path's work: its steps in order, each step one or more tagged ops.
using PathSteps = std::vector<std::vector<TaggedOps>>;

// Records the steps of several paths side by side: step t of every path,
// by record_side_by_side, then step t + 1. Same contract between paths; a
// buffer several paths write (dx, y) is written in path order as long as
// they write it in the same step. (Skewing the paths, each one step behind
// the one before, was slower: docs/benchmarks.md, "blr layer step".)
inline void record_paths(Recorder& rec, const std::vector<PathSteps>& paths) {
  std::size_t steps = 0;
  for (const PathSteps& p : paths) steps = std::max(steps, p.size());
  for (std::size_t t = 0; t < steps; ++t) {
    std::vector<TaggedOps> phase;
    for (const PathSteps& p : paths) {
      if (t < p.size()) phase.insert(phase.end(), p[t].begin(), p[t].end());
    }
    record_side_by_side(rec, phase);
  }
}

}  // namespace vkblr::detail
