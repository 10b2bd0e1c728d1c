// llama_ref.hpp — f64 host references of the row-wise and elementwise ops
// of a Llama block (vkblr/ops/swiglu.hpp, rmsnorm.hpp, rope.hpp,
// embedding.hpp), their finite-difference gradients, and the per-element
// check the tests use against them.
//
// Each reference returns, with every value, its magnitude: the sum of the
// absolute values of the terms the value is made of. An f32 kernel's
// rounding error is a few f32 units of that magnitude, not of the value
// (which may cancel to near zero), so the tests bound |got − want| by a
// stated multiple of it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace vkt {

// Values with the magnitude each one's rounding error scales with.
struct RefValues {
  std::vector<double> value, magnitude;
  explicit RefValues(std::size_t n = 0) : value(n, 0.0), magnitude(n, 0.0) {}
};

// The worst |got − want| / (tol · magnitude) over every element (<= 1:
// within tolerance; NaN in got gives infinity), and where it occurred.
struct Worst {
  double ratio = 0;
  std::size_t at = 0;
};
template <class G>
Worst worst_error(const std::vector<G>& got, const RefValues& want, double tol) {
  Worst w;
  for (std::size_t i = 0; i < want.value.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double r = std::isfinite(g) ? std::abs(g - want.value[i]) / (tol * want.magnitude[i] + 1e-300) : INFINITY;
    if (!(r <= w.ratio)) w = {r, i};
  }
  return w;
}

// Central differences in f64: d loss / d x[i] ≈ (loss(x + h·e_i) −
// loss(x − h·e_i)) / 2h for every i in `which`, the other entries 0.
inline std::vector<double> finite_differences(std::vector<double> x, const std::function<double(const std::vector<double>&)>& loss,
                                              const std::vector<std::size_t>& which, double h = 1e-6) {
  std::vector<double> grad(x.size(), 0.0);
  for (std::size_t i : which) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = loss(x);
    x[i] = keep - h;
    const double down = loss(x);
    x[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

inline std::vector<double> widen(std::span<const float> v) { return {v.begin(), v.end()}; }

// ---- SwiGLU ---------------------------------------------------------------

inline double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

// h = silu(g)·u; magnitude |h|.
inline RefValues swiglu_fwd_ref(std::span<const double> g, std::span<const double> u) {
  RefValues h(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    h.value[i] = g[i] * sigmoid(g[i]) * u[i];
    h.magnitude[i] = std::abs(h.value[i]);
  }
  return h;
}

// dg = dh·u·s·(1 + g·(1 − s)), du = dh·silu(g); magnitudes: |du| and
// |dh·u|·s·(1 + |g|·(1 − s)) (the two terms of ds before they cancel).
inline void swiglu_bwd_ref(std::span<const double> g, std::span<const double> u, std::span<const double> dh,
                           RefValues& dg, RefValues& du) {
  dg = RefValues(g.size());
  du = RefValues(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double s = sigmoid(g[i]), s_bar = sigmoid(-g[i]);
    dg.value[i] = dh[i] * u[i] * s * (1.0 + g[i] * s_bar);
    dg.magnitude[i] = std::abs(dh[i] * u[i]) * s * (1.0 + std::abs(g[i]) * s_bar);
    du.value[i] = dh[i] * g[i] * s;
    du.magnitude[i] = std::abs(du.value[i]);
  }
}

// ---- RMSNorm ---------------------------------------------------------------

// y = x·inv·w per row, inv = 1/sqrt(mean(x²) + eps); magnitudes |y| and
// |inv| (every term of the sum of squares is positive: no cancellation).
struct RmsNormRef {
  RefValues y, inv;
};
inline RmsNormRef rmsnorm_fwd_ref(std::span<const double> x, std::span<const double> w, std::size_t tokens,
                                  std::size_t hidden, double eps) {
  RmsNormRef r{RefValues(tokens * hidden), RefValues(tokens)};
  for (std::size_t t = 0; t < tokens; ++t) {
    double ss = 0;
    for (std::size_t c = 0; c < hidden; ++c) ss += x[t * hidden + c] * x[t * hidden + c];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(hidden) + eps);
    r.inv.value[t] = inv;
    r.inv.magnitude[t] = inv;
    for (std::size_t c = 0; c < hidden; ++c) {
      r.y.value[t * hidden + c] = x[t * hidden + c] * inv * w[c];
      r.y.magnitude[t * hidden + c] = std::abs(r.y.value[t * hidden + c]);
    }
  }
  return r;
}

// The gradients of Σ dy·y: dx = inv·(dy·w − x̂·mean(dy·w·x̂)), x̂ = x·inv
// (magnitude inv·(|dy·w| + |x̂|·mean|dy·w·x̂|), the terms before they
// cancel), and dw = Σ_rows dy·x̂ (magnitude Σ_rows |dy·x̂|).
struct RmsNormGradRef {
  RefValues dx, dw;
};
inline RmsNormGradRef rmsnorm_bwd_ref(std::span<const double> x, std::span<const double> w,
                                      std::span<const double> dy, std::size_t tokens, std::size_t hidden,
                                      double eps) {
  RmsNormGradRef r{RefValues(tokens * hidden), RefValues(hidden)};
  const double n = static_cast<double>(hidden);
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::size_t b = t * hidden;
    double ss = 0;
    for (std::size_t c = 0; c < hidden; ++c) ss += x[b + c] * x[b + c];
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    double s = 0, s_abs = 0;
    for (std::size_t c = 0; c < hidden; ++c) {
      s += dy[b + c] * w[c] * x[b + c] * inv;
      s_abs += std::abs(dy[b + c] * w[c] * x[b + c] * inv);
    }
    for (std::size_t c = 0; c < hidden; ++c) {
      const double xh = x[b + c] * inv;
      r.dx.value[b + c] = inv * (dy[b + c] * w[c] - xh * s / n);
      r.dx.magnitude[b + c] = inv * (std::abs(dy[b + c] * w[c]) + std::abs(xh) * s_abs / n);
      r.dw.value[c] += dy[b + c] * xh;
      r.dw.magnitude[c] += std::abs(dy[b + c] * xh);
    }
  }
  return r;
}

}  // namespace vkt
