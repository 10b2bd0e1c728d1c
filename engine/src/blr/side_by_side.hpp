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

}  // namespace vkblr::detail
