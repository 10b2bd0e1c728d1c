#include "vkblr-fit/refit/block_choice.hpp"

#include <cstddef>

#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

std::size_t check_sizes(std::span<const double> own, std::span<const double> cross) {
  const std::size_t rows = own.size();
  require(cross.size() == rows * rows, "block choice: cross terms of {} values for {} rows", cross.size(), rows);
  return rows;
}

double symmetric(std::span<const double> cross, std::size_t rows, std::size_t a, std::size_t b) {
  return 0.5 * (cross[a * rows + b] + cross[b * rows + a]);
}

}  // namespace

double block_delta(std::span<const double> own, std::span<const double> cross, std::span<const std::uint32_t> accept) {
  const std::size_t rows = check_sizes(own, cross);
  require(accept.size() == rows, "block choice: {} choices for {} rows", accept.size(), rows);
  double delta = 0;
  for (std::size_t a = 0; a < rows; ++a) {
    if (accept[a] == 0) continue;
    delta += own[a];
    for (std::size_t b = 0; b < rows; ++b) {
      if (b != a && accept[b] != 0) delta += symmetric(cross, rows, a, b);
    }
  }
  return delta;
}

BlockChoice choose_block_rows(std::span<const double> own, std::span<const double> cross) {
  const std::size_t rows = check_sizes(own, cross);
  BlockChoice out;
  out.accept.assign(rows, 0);
  // contribution[j] = own[j] + 2·Σ_{j'∈S, j'≠j} cross[j][j']: what removing j takes off ΔL(S)
  std::vector<double> contribution(rows, 0.0);
  std::size_t in_set = 0;
  for (std::size_t a = 0; a < rows; ++a) {
    if (own[a] != 0) {
      out.accept[a] = 1;
      ++in_set;
    }
  }
  double delta = 0;
  for (std::size_t a = 0; a < rows; ++a) {
    if (out.accept[a] == 0) continue;
    double c = own[a];
    for (std::size_t b = 0; b < rows; ++b) {
      if (b != a && out.accept[b] != 0) c += 2 * symmetric(cross, rows, a, b);
    }
    contribution[a] = c;
    delta += own[a] + 0.5 * (c - own[a]);
  }
  while (in_set > 0) {
    std::size_t worst = rows;
    for (std::size_t a = 0; a < rows; ++a) {
      if (out.accept[a] != 0 && contribution[a] > 0 && (worst == rows || contribution[a] > contribution[worst])) {
        worst = a;
      }
    }
    if (worst == rows) break;  // no removal lowers ΔL(S)
    out.accept[worst] = 0;
    --in_set;
    delta -= contribution[worst];
    for (std::size_t a = 0; a < rows; ++a) {
      if (out.accept[a] != 0) contribution[a] -= 2 * symmetric(cross, rows, a, worst);
    }
  }
  // the best single row, when it alone does better
  std::size_t best = rows;
  for (std::size_t a = 0; a < rows; ++a) {
    if (own[a] < 0 && (best == rows || own[a] < own[best])) best = a;
  }
  if (best != rows && own[best] < delta) {
    out.accept.assign(rows, 0);
    out.accept[best] = 1;
    in_set = 1;
    delta = own[best];
  }
  if (in_set == 0 || delta > 0) {  // rounding only: the empty set is always available
    out.accept.assign(rows, 0);
    in_set = 0;
    delta = 0;
  }
  out.delta = delta;
  out.accepted = static_cast<std::uint32_t>(in_set);
  return out;
}

}  // namespace vkblr::fit
