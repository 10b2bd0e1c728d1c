// parallel.hpp — host work spread over every core in contiguous pieces.
// Each index is handled by exactly one piece, so a body whose results per
// index do not depend on the cut (no sums across pieces) gives the same
// bits whatever the number of cores.
#pragma once

#include <cstddef>
#include <functional>

namespace vkblr::fit {

// Runs body(begin, end) over [0, count) cut into contiguous pieces, one per
// thread (all cores; one piece when count < min_per_thread). Exceptions of
// a piece are rethrown after every thread has ended.
void parallel_ranges(std::size_t count, std::size_t min_per_thread,
                     const std::function<void(std::size_t, std::size_t)>& body);

}  // namespace vkblr::fit
