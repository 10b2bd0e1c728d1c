// block_choice.hpp — which rows of a block of S_V the GPU refit commits
// (docs/sign-optimizer.md, "GPU refit").
//
// Each row j of a block ran its own exact coordinate descent against the
// same half-gradient; alone, its change D_j lowers the loss by own[j] (< 0
// when the row flipped anything, 0 when it did not). Together the rows
// interact: committing a subset S changes the loss by exactly
//   ΔL(S) = Σ_{j∈S} own[j] + Σ_{j≠j'∈S} cross[j][j'],
// cross[j][j'] = K_jj'·(D_j·QA·D_j'ᵀ) (symmetric; its diagonal is not used).
// The choice starts from every row that changed and drops, one at a time,
// the row whose removal lowers ΔL(S) most, while some removal lowers it;
// then it takes the single best row instead if that alone does better. So
// ΔL(S) <= min(0, min_j own[j]): a committed block never raises the loss
// (up to the rounding of own and cross), and it lowers it whenever any
// row alone would. Deterministic (ties go to the lower row).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vkblr::fit {

struct BlockChoice {
  std::vector<std::uint32_t> accept;  // [rows]: 1 = commit the row's change
  double delta = 0;                   // ΔL(S) of the accepted rows (0 when none)
  std::uint32_t accepted = 0;         // rows with accept = 1
};

// own [rows], cross [rows][rows] row-major (read as its symmetric part
// (cross + crossᵀ)/2). Throws vkblr::Error when the sizes do not match.
BlockChoice choose_block_rows(std::span<const double> own, std::span<const double> cross);

// ΔL(S) of a choice `accept` [rows] (the formula above; the check of a choice).
double block_delta(std::span<const double> own, std::span<const double> cross, std::span<const std::uint32_t> accept);

}  // namespace vkblr::fit
