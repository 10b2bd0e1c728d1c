// blr_dense_ref.hpp — a blr layer as the dense f64 matrix it stands for,
// and a gradient with respect to that matrix mapped back onto the layer's
// scales and signs: the link between a host model with dense projections
// (llama_model_ref.hpp) and the blr layers a trainer trains.
//
// Layer m×n (out×in), rank r, P paths (vkblr/blr.hpp):
//   Ŵ = Σ_p diag(h_p)·S_U,p·diag(ℓ_p)·S_V,pᵀ·diag(g_p)   [m][n]
//   Ŵ[i][j] = Σ_p h_i g_j Σ_k S_U[i][k] ℓ_k S_V[j][k]
// With dŴ = ∂L/∂Ŵ [m][n] and E = diag(h)·dŴ·diag(g), A = S_U·diag(ℓ)·S_Vᵀ:
//   dh_i = Σ_j dŴ[i][j]·A[i][j]·g_j     dg_j = Σ_i dŴ[i][j]·A[i][j]·h_i
//   dℓ_k = Σ_i S_U[i][k]·(E·S_V)[i][k]
//   G_U[i][k] = ℓ_k·(E·S_V)[i][k]  [m][r]   G_V[j][k] = ℓ_k·(Eᵀ·S_U)[j][k]  [n][r]
// (G_U = ∂L/∂S_U treating S_U as a real matrix). For a linear layer y =
// x·Ŵᵀ on rows x [ntok][n], dy [ntok][m] and L = Σ dy·y, dŴ = dyᵀ·x and
// these are exactly blr_ref.hpp's host_blr gradients (and blr_backward's).
//
// Everything is f64 and the signs are real ±1 values, so that central
// differences can perturb a scale or a sign entry directly.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "support/blr_ref.hpp"
#include "vkblr/blr.hpp"

namespace vkt {

// One path: su [m][r] and sv [n][r] (±1 as reals, row-major), h [m], l [r], g [n].
struct RealBlrPath {
  std::vector<double> su, sv, h, l, g;
};

struct RealBlrLayer {
  std::uint32_t m = 0, n = 0, r = 0;
  std::vector<RealBlrPath> paths;
};

// One path's gradients: dh [m], dl [r], dg [n], gu [m][r], gv [n][r].
struct RealBlrGrads {
  std::vector<double> dh, dl, dg, gu, gv;
};

// ±1 [rows][r] from a bitmap u32 [rows][r/32]: bit j of word w is rank
// 32w + j, 1 = +1, 0 = −1.
inline std::vector<double> unpack_signs(std::span<const std::uint32_t> bits, std::uint32_t rows, std::uint32_t r) {
  const std::size_t words = r / 32;
  if (r % 32 != 0 || bits.size() < std::size_t{rows} * words) throw std::invalid_argument("unpack_signs: bad shape");
  std::vector<double> s(std::size_t{rows} * r);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t k = 0; k < r; ++k) s[i * r + k] = (bits[i * words + k / 32] >> (k % 32)) & 1u ? 1.0 : -1.0;
  }
  return s;
}

// The layer of the host values make_blr_layer takes (bitmaps and f32 scales).
inline RealBlrLayer real_blr_from_bits(std::uint32_t m, std::uint32_t n, std::uint32_t r,
                                       std::span<const vkblr::BlrPathInit> init) {
  RealBlrLayer L{m, n, r, {}};
  for (const auto& p : init) {
    if (p.h.size() != m || p.l.size() != r || p.g.size() != n) {
      throw std::invalid_argument("real_blr_from_bits: scales of the wrong length");
    }
    L.paths.push_back({unpack_signs(p.bits_u, m, r), unpack_signs(p.bits_v, n, r), {p.h.begin(), p.h.end()},
                       {p.l.begin(), p.l.end()}, {p.g.begin(), p.g.end()}});
  }
  return L;
}

// The layer of blr_ref.hpp's HostLayer (f32 ±1 signs and scales).
inline RealBlrLayer real_blr_from_host(const HostLayer& host) {
  RealBlrLayer L{host.m, host.n, host.r, {}};
  for (const auto& p : host.paths) {
    L.paths.push_back({{p.su.begin(), p.su.end()}, {p.sv.begin(), p.sv.end()}, {p.h.begin(), p.h.end()},
                       {p.l.begin(), p.l.end()}, {p.g.begin(), p.g.end()}});
  }
  return L;
}

// Ŵ [m][n] = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g).
inline std::vector<double> blr_dense(const RealBlrLayer& L) {
  const std::size_t m = L.m, n = L.n, r = L.r;
  std::vector<double> w(m * n, 0.0);
  std::vector<double> ul(r);
  for (const RealBlrPath& p : L.paths) {
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t k = 0; k < r; ++k) ul[k] = p.su[i * r + k] * p.l[k];  // row i of S_U·diag(ℓ)
      for (std::size_t j = 0; j < n; ++j) {
        const double* sv = p.sv.data() + j * r;  // pointers: fast in Debug builds too
        double a = 0;
        for (std::size_t k = 0; k < r; ++k) a += ul[k] * sv[k];
        w[i * n + j] += p.h[i] * a * p.g[j];
      }
    }
  }
  return w;
}

// Every path's gradients from dW = ∂L/∂Ŵ [m][n] (formulas above).
inline std::vector<RealBlrGrads> blr_grads_from_dense(const RealBlrLayer& L, std::span<const double> dw) {
  const std::size_t m = L.m, n = L.n, r = L.r;
  if (dw.size() != m * n) throw std::invalid_argument("blr_grads_from_dense: dW is not m x n");
  std::vector<RealBlrGrads> out;
  std::vector<double> e(m * n);
  for (const RealBlrPath& p : L.paths) {
    RealBlrGrads G{std::vector<double>(m, 0.0), std::vector<double>(r, 0.0), std::vector<double>(n, 0.0),
                   std::vector<double>(m * r, 0.0), std::vector<double>(n * r, 0.0)};
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        double a = 0;
        for (std::size_t k = 0; k < r; ++k) a += p.su[i * r + k] * p.l[k] * p.sv[j * r + k];
        G.dh[i] += dw[i * n + j] * a * p.g[j];
        G.dg[j] += dw[i * n + j] * a * p.h[i];
        e[i * n + j] = p.h[i] * dw[i * n + j] * p.g[j];
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t k = 0; k < r; ++k) {
        double es = 0;  // (E·S_V)[i][k]
        for (std::size_t j = 0; j < n; ++j) es += e[i * n + j] * p.sv[j * r + k];
        G.gu[i * r + k] = p.l[k] * es;
        G.dl[k] += p.su[i * r + k] * es;
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < r; ++k) {
        double es = 0;  // (Eᵀ·S_U)[j][k]
        for (std::size_t i = 0; i < m; ++i) es += e[i * n + j] * p.su[i * r + k];
        G.gv[j * r + k] = p.l[k] * es;
      }
    }
    out.push_back(std::move(G));
  }
  return out;
}

}  // namespace vkt
