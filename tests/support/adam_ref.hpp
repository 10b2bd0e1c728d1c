// adam_ref.hpp — one Adam / AdamW step of vkblr::ops::adam (and adam_cat)
// in f64 on the host, with the error the device's f32 values may carry: the
// reference of "one step ≡ host" tests (the optimizer ops' own, a
// trainer's scales after a step).
//
// The formula (vkblr/ops/optim.hpp) with the op's f32 hyperparameters taken
// exactly, per entry i not frozen (mask[i] == 0 freezes: w, m1, m2 untouched):
//   g' = g[i]·grad_scale;  m1 = β1·m1 + (1−β1)·g';  m2 = β2·m2 + (1−β2)·g'²
//   s  = lr · (m1 / (1 − β1^t)) / (sqrt(m2 / (1 − β2^t)) + eps)
//   w' = w·(1 − lr·weight_decay)
//   w  = w' − s·max(|w'|, floor) if floor > 0 (relative steps), else w' − s
//
// Tolerances: each f32 rounding of the moments adds 2^-24 of the terms'
// magnitudes (the earlier error shrinks by β); each step adds to the
// weight's error the moments' errors through s (times the relative step's
// factor), 4 ulp of the weight (the decay's roundings, the step's
// subtraction) and 2^-11 of the step's size (pow, the division and the
// square root, which Vulkan does not round exactly: pow(β2, t) =
// exp2(t·log2 β2) with log2 exact to 2^-21 absolute, so 1 − β2^t ≈ 1e-3 at
// t = 1 may be off by ~3e-4 relative, half of that in s).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "vkblr/ops/optim.hpp"

namespace vkt {

// The distance from |x| to the next larger f32.
inline double f32_ulp(float x) {
  return std::nextafter(std::abs(x), std::numeric_limits<float>::infinity()) - std::abs(x);
}

// Adam state of n entries in f64 and each value's tolerance (the error the
// device's f32 value may carry after the same steps).
struct AdamRef {
  std::vector<double> w, m1, m2;
  std::vector<double> w_tol, m1_tol, m2_tol;
};

// A state starting from the device's f32 values (tolerances 0).
inline AdamRef adam_ref_from(std::span<const float> w, std::span<const float> m1, std::span<const float> m2) {
  const std::size_t n = w.size();
  return {{w.begin(), w.end()},      {m1.begin(), m1.end()},  {m2.begin(), m2.end()},
          std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
}

// One step with gradient g [n], learning rate lr and step t (counted from 1)
// — the op's immediates or what its live scalars held — and the rest of
// `o` (β1, β2, eps, grad_scale, weight_decay; o.lr, o.step and o.live are
// not read). mask [n] (empty: every entry trains): 0 freezes the entry;
// rel_floor [n] (empty: 0 for all): > 0 makes that entry's step relative.
inline void adam_ref_step(AdamRef& a, std::span<const double> g, const vkblr::ops::AdamOptions& o, float lr,
                          std::uint32_t step, std::span<const float> mask = {}, std::span<const float> rel_floor = {}) {
  const double b1 = o.beta1, b2 = o.beta2, t = step, rate = lr, eps = o.eps;
  const double c1 = 1.0 - std::pow(b1, t), c2 = 1.0 - std::pow(b2, t);
  const double u = std::ldexp(1.0, -24);
  for (std::size_t i = 0; i < a.w.size(); ++i) {
    if (!mask.empty() && mask[i] == 0.0f) continue;
    const double gi = g[i] * o.grad_scale;
    const double m = b1 * a.m1[i] + (1.0 - b1) * gi;
    const double v = b2 * a.m2[i] + (1.0 - b2) * gi * gi;
    a.m1_tol[i] = b1 * a.m1_tol[i] + 3 * u * (std::abs(b1 * a.m1[i]) + std::abs((1.0 - b1) * gi));
    a.m2_tol[i] = b2 * a.m2_tol[i] + 4 * u * (std::abs(b2 * a.m2[i]) + std::abs((1.0 - b2) * gi * gi));
    a.m1[i] = m;
    a.m2[i] = v;
    const double denom = std::sqrt(v / c2) + eps;
    const double s = rate * (m / c1) / denom;
    // the moments' errors through s = lr·m̂/(√v̂ + ε): ∂s/∂m·δm + ∂s/∂v·δv
    const double ds = rate / c1 / denom * a.m1_tol[i] +
                      std::abs(s) / denom * (v > 0 ? 0.5 / std::sqrt(v * c2) : 0.0) * a.m2_tol[i];
    const double before = a.w[i];
    const double decayed = o.weight_decay != 0.0f ? before * (1.0 - rate * o.weight_decay) : before;
    const double floor_i = rel_floor.empty() ? 0.0 : rel_floor[i];
    const double factor = floor_i > 0 ? std::max(std::abs(decayed), floor_i) : 1.0;
    a.w[i] = decayed - s * factor;
    a.w_tol[i] += ds * factor + 4 * f32_ulp(static_cast<float>(std::max(std::abs(before), std::abs(a.w[i])))) +
                  std::ldexp(std::abs(s * factor), -11);
  }
}

// Entries of `got` farther from `want` than `tol`; `worst` (if given) the
// largest error as a fraction of its tolerance.
inline std::size_t entries_outside(std::span<const float> got, std::span<const double> want,
                                   std::span<const double> tol, double* worst = nullptr) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]);
    bad += !(err <= tol[i]);
    if (worst && tol[i] > 0) *worst = std::max(*worst, err / tol[i]);
  }
  return bad;
}

}  // namespace vkt
