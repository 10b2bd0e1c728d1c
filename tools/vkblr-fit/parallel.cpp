#include "vkblr-fit/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vkblr::fit {

void parallel_ranges(std::size_t count, std::size_t min_per_thread,
                     const std::function<void(std::size_t, std::size_t)>& body) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t pieces = std::clamp<std::size_t>(count / std::max<std::size_t>(min_per_thread, 1), 1, cores);
  if (pieces == 1) {
    body(0, count);
    return;
  }
  std::vector<std::thread> threads;
  std::exception_ptr error;
  std::mutex error_mutex;
  for (std::size_t p = 0; p < pieces; ++p) {
    threads.emplace_back([&, p] {
      try {
        body(count * p / pieces, count * (p + 1) / pieces);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace vkblr::fit
