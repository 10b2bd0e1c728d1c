// planted_fit.hpp — planted blr layers for the tests of vkblr-fit's host
// inits (test_fit_refit.cpp, test_fit_subspace_init.cpp), and how many of
// their signs a fitted path recovers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkt {

// W = diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g) + Gaussian noise of `noise` per
// entry (signs ±1 at random, scales uniform in [0.5, 1.5)), as the planted
// test of tests/test_fit_job.cpp; also the planted layer alone.
struct PlantedFit {
  vkblr::fit::Matrix w;
  vkblr::BlrPathInit layer;
  vkblr::fit::MatrixF64 clean;
};

inline PlantedFit planted_layer(std::uint32_t m, std::uint32_t n, std::uint32_t r, double noise,
                                std::uint64_t seed) {
  using namespace vkblr::fit;
  Rng rng(seed);
  std::vector<double> su(std::size_t{m} * r), sv(std::size_t{n} * r);
  for (double& v : su) v = rng.uniform_open() < 0.5 ? -1.0 : 1.0;
  for (double& v : sv) v = rng.uniform_open() < 0.5 ? -1.0 : 1.0;
  PlantedFit p;
  p.layer.bits_u = pack_signs(std::span<const double>(su), m, r);
  p.layer.bits_v = pack_signs(std::span<const double>(sv), n, r);
  for (std::uint32_t i = 0; i < m; ++i) p.layer.h.push_back(0.5f + static_cast<float>(rng.uniform_open()));
  for (std::uint32_t k = 0; k < r; ++k) p.layer.l.push_back(0.5f + static_cast<float>(rng.uniform_open()));
  for (std::uint32_t j = 0; j < n; ++j) p.layer.g.push_back(0.5f + static_cast<float>(rng.uniform_open()));
  p.clean = reconstruct_weight({m, n, r, 1}, std::span(&p.layer, 1));
  p.w = Matrix(m, n);
  for (std::size_t i = 0; i < p.w.values.size(); ++i) {
    p.w.values[i] = static_cast<float>(p.clean.values[i] + noise * rng.normal());
  }
  return p;
}

// The fraction of the planted signs a path has, up to a joint sign flip of
// column k in S_U and S_V (which changes nothing) and the column order
// (each planted column matched to the unused column that agrees best).
inline double sign_agreement(const vkblr::BlrPathInit& got, const vkblr::BlrPathInit& want, std::uint32_t m,
                             std::uint32_t n, std::uint32_t r) {
  using vkblr::fit::sign_at;
  std::vector<bool> used(r, false);
  double agree = 0;
  for (std::uint32_t k = 0; k < r; ++k) {
    double best = -1;
    std::uint32_t best_c = 0;
    for (std::uint32_t c = 0; c < r; ++c) {
      if (used[c]) continue;
      double same = 0;
      for (std::uint32_t i = 0; i < m; ++i) same += sign_at(got.bits_u, r, i, c) == sign_at(want.bits_u, r, i, k);
      for (std::uint32_t j = 0; j < n; ++j) same += sign_at(got.bits_v, r, j, c) == sign_at(want.bits_v, r, j, k);
      same = std::max(same, double(m + n) - same);
      if (same > best) {
        best = same;
        best_c = c;
      }
    }
    used[best_c] = true;
    agree += best;
  }
  return agree / (double(m + n) * r);
}

}  // namespace vkt
