// vkblr-fit-result-same A B — exit 0 when two vkblr-fit result files hold
// the same layer bit for bit (shape, scale dtype, every path's sign bits and
// scales), 1 otherwise, naming what differs. Metadata (command line, tool
// version) is not compared. For tests/mpi/fit_ranks.cmake.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "vkblr/io/blr_result.hpp"
#include "vkblr-fit/io_names.hpp"

namespace {

// Words of `a` and `b` that differ (bit patterns; a length mismatch counts
// every word of the longer one).
template <class T>
std::size_t diffs(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: vkblr-fit-result-same A.safetensors B.safetensors\n");
    return 2;
  }
  try {
    const vkblr::fit::BlrResult a = vkblr::fit::read_blr_result(argv[1]);
    const vkblr::fit::BlrResult b = vkblr::fit::read_blr_result(argv[2]);
    if (!(a.shape == b.shape) || a.scale_dtype != b.scale_dtype) {
      std::printf("different layers: %ux%u rank %u, %u paths vs %ux%u rank %u, %u paths (or scale dtypes)\n",
                  a.shape.m, a.shape.n, a.shape.rank, a.shape.paths, b.shape.m, b.shape.n, b.shape.rank,
                  b.shape.paths);
      return 1;
    }
    std::size_t total = 0;
    for (std::size_t p = 0; p < a.paths.size(); ++p) {
      const vkblr::BlrPathInit &x = a.paths[p], &y = b.paths[p];
      const std::size_t d[5] = {diffs(x.bits_u, y.bits_u), diffs(x.bits_v, y.bits_v), diffs(x.h, y.h),
                                diffs(x.l, y.l), diffs(x.g, y.g)};
      const char* names[5] = {"bits_u", "bits_v", "h", "l", "g"};
      for (int k = 0; k < 5; ++k) {
        if (d[k] != 0) std::printf("path%zu.%s: %zu words differ\n", p, names[k], d[k]);
        total += d[k];
      }
    }
    std::printf("%s and %s: %s\n", argv[1], argv[2], total == 0 ? "the same layer, bit for bit" : "differ");
    return total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-fit-result-same: %s\n", e.what());
    return 2;
  }
}
