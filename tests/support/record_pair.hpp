// record_pair.hpp — records two independent two-pass ops (split-K GEMMs,
// column reductions) one after the other or side by side, for the tests of
// their transients.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <cstdint>

#include "vkblr/recorder.hpp"

namespace vkt {

// Records `a` then `b`, or with `side_by_side` both as branches of
// Recorder::parallel (both first passes, then both second passes); returns
// the batch's barriers.
inline std::uint32_t record_pair(vkblr::Recorder& rec, const vkblr::Ops& a, const vkblr::Ops& b, bool side_by_side) {
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  if (side_by_side) {
    const vkblr::Branch branches[] = {{{{"", a}}}, {{{"", b}}}};
    rec.parallel(branches);
  } else {
    rec.add(a).add(b);
  }
  return rec.barriers();
}

}  // namespace vkt
