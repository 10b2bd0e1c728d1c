// blr_ref.hpp — f64 host reference of a blr layer (forward, backward, sign
// gradients) and random layers to test it on.
#pragma once

#include <cstdint>
#include <vector>

#include "support/gemm_ref.hpp"
#include "support/host.hpp"
#include "vkblr/blr.hpp"

namespace vkt {

struct HostPath {
  std::vector<float> su, sv;  // ±1 [m][r], [n][r]
  std::vector<float> h, l, g;
};

struct HostLayer {
  std::uint32_t m, n, r;
  std::vector<HostPath> paths;

  std::vector<vkblr::BlrPathInit> init() const {
    std::vector<vkblr::BlrPathInit> out;
    for (const auto& p : paths) out.push_back({pack_signs(p.su, m, r), pack_signs(p.sv, n, r), p.h, p.l, p.g});
    return out;
  }
};

// Random signs and scales; `exact`: ℓ and g powers of two (with inputs on a
// coarse grid, every f16 operand of the forward is then exact).
inline HostLayer random_layer(std::uint32_t m, std::uint32_t n, std::uint32_t r, std::uint32_t np, std::uint64_t seed,
                              bool exact = false) {
  HostLayer L{m, n, r, {}};
  for (std::uint32_t p = 0; p < np; ++p) {
    HostPath hp;
    hp.su = random_signs(m, r, seed + 10 * p + 1);
    hp.sv = random_signs(n, r, seed + 10 * p + 2);
    Rng rng(seed + 10 * p + 3);
    for (std::uint32_t i = 0; i < m; ++i) hp.h.push_back(0.02f + static_cast<float>(std::abs(rng.uniform())) * 0.05f);
    for (std::uint32_t k = 0; k < r; ++k) {
      const double u = std::abs(rng.uniform());
      hp.l.push_back(exact ? (u < 1.0 / 3 ? 0.5f : u < 2.0 / 3 ? 1.0f : 2.0f) : 0.5f + static_cast<float>(u));
    }
    for (std::uint32_t j = 0; j < n; ++j) {
      const double u = rng.uniform();
      hp.g.push_back(exact ? (u >= 0 ? 1.0f : 0.5f) : 0.1f + static_cast<float>(std::abs(u)) * 0.2f);
    }
    L.paths.push_back(std::move(hp));
  }
  return L;
}

struct HostGrads {
  std::vector<double> dh, dl, dg, gu, gv, a, b;
};

struct HostResult {
  std::vector<double> y, dx;
  std::vector<HostGrads> paths;
};

// f64 forward and backward (and sign gradients) of the layer on x, dy.
inline HostResult host_blr(const HostLayer& L, const std::vector<float>& x, const std::vector<float>& dy,
                           std::uint32_t ntok) {
  const std::uint32_t m = L.m, n = L.n, r = L.r;
  HostResult res;
  res.y.assign(std::size_t{ntok} * m, 0.0);
  res.dx.assign(std::size_t{ntok} * n, 0.0);
  for (const HostPath& P : L.paths) {
    HostGrads G;
    G.dh.assign(m, 0);
    G.dl.assign(r, 0);
    G.dg.assign(n, 0);
    G.gu.assign(std::size_t{m} * r, 0);
    G.gv.assign(std::size_t{n} * r, 0);
    G.a.assign(std::size_t{ntok} * r, 0);
    G.b.assign(std::size_t{ntok} * r, 0);
    std::vector<double> c(m), dxp(n);
    for (std::uint32_t t = 0; t < ntok; ++t) {
      double* a = &G.a[std::size_t{t} * r];
      double* b = &G.b[std::size_t{t} * r];
      for (std::uint32_t k = 0; k < r; ++k) {
        double sa = 0, sb = 0;
        for (std::uint32_t j = 0; j < n; ++j) sa += double(x[t * n + j]) * P.g[j] * P.sv[j * r + k];
        for (std::uint32_t i = 0; i < m; ++i) sb += double(dy[t * m + i]) * P.h[i] * P.su[i * r + k];
        a[k] = sa;
        b[k] = sb;
        G.dl[k] += sa * sb;
      }
      for (std::uint32_t i = 0; i < m; ++i) {
        double s = 0;
        for (std::uint32_t k = 0; k < r; ++k) s += a[k] * P.l[k] * P.su[i * r + k];
        c[i] = s;
        res.y[t * m + i] += P.h[i] * s;
        G.dh[i] += double(dy[t * m + i]) * s;
      }
      for (std::uint32_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::uint32_t k = 0; k < r; ++k) s += b[k] * P.l[k] * P.sv[j * r + k];
        G.dg[j] += double(x[t * n + j]) * s;
        res.dx[t * n + j] += P.g[j] * s;
      }
      for (std::uint32_t k = 0; k < r; ++k) {
        for (std::uint32_t i = 0; i < m; ++i) G.gu[i * r + k] += double(P.h[i]) * dy[t * m + i] * a[k] * P.l[k];
        for (std::uint32_t j = 0; j < n; ++j) G.gv[j * r + k] += double(P.g[j]) * x[t * n + j] * b[k] * P.l[k];
      }
    }
    res.paths.push_back(std::move(G));
  }
  return res;
}

}  // namespace vkt
