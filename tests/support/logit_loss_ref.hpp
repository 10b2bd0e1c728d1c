// logit_loss_ref.hpp — f64 host references of the losses over a vocabulary
// (vkblr/ops/logit_loss.hpp): cross-entropy against token ids and the
// temperature-scaled KL against a teacher, their per-token values and their
// gradients with respect to h and W, and central finite differences of
// them.
//
// The references take the operands as f64 values: the tests pass the f16
// roundings of h and W (what the ops stage), so that the device differs from
// them only by its f32 arithmetic and the f16 staging of the logits'
// gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "vkblr/half.hpp"

namespace vkt {

// A head and its inputs as f64: h [tokens][hidden], w [vocab][hidden].
struct LossSide {
  std::vector<double> h, w;
  std::uint32_t hidden = 0;
};

// f64 copies of the f16 roundings of `v` (the values the ops stage).
inline std::vector<double> staged_f64(const std::vector<float>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = vkblr::f16_to_f32(vkblr::f32_to_f16(v[i]));
  return out;
}

struct LossReference {
  std::vector<double> token_loss;  // per token (0 where not counted)
  double sum = 0, mean = 0;
  std::uint32_t counted = 0;
  std::vector<double> dh, dw;  // grad_scale · ∂Σ/∂h, ∂Σ/∂W
};

// Logits of token t: z[v] = h_t · w_v.
inline std::vector<double> ref_logits(const LossSide& s, std::uint32_t t, std::uint32_t vocab) {
  std::vector<double> z(vocab);
  const double* h = s.h.data() + std::size_t{t} * s.hidden;  // pointers: fast in Debug builds too
  for (std::uint32_t v = 0; v < vocab; ++v) {
    const double* w = s.w.data() + std::size_t{v} * s.hidden;
    double acc = 0;
    for (std::uint32_t k = 0; k < s.hidden; ++k) acc += h[k] * w[k];
    z[v] = acc;
  }
  return z;
}

// softmax(z) in place; returns logsumexp(z).
inline double ref_softmax(std::vector<double>& z) {
  const double m = *std::max_element(z.begin(), z.end());
  double s = 0;
  for (double x : z) s += std::exp(x - m);
  const double lse = m + std::log(s);
  for (double& x : z) x = std::exp(x - lse);
  return lse;
}

// Adds scale · dz_t to dh (row t) and dW: dh_t += dz·W, dW += dz ⊗ h_t.
inline void ref_backprop(const LossSide& s, std::uint32_t t, const std::vector<double>& dz, double scale,
                         LossReference& r) {
  const std::uint32_t H = s.hidden;
  const double* h = s.h.data() + std::size_t{t} * H;
  double* dh = r.dh.data() + std::size_t{t} * H;
  for (std::size_t v = 0; v < dz.size(); ++v) {
    const double g = dz[v] * scale;
    if (g == 0) continue;
    const double* w = s.w.data() + v * H;
    double* dw = r.dw.data() + v * H;
    for (std::uint32_t k = 0; k < H; ++k) {
      dh[k] += g * w[k];
      dw[k] += g * h[k];
    }
  }
}

// Cross-entropy: ℓ_t = logsumexp(z_t) − z_t[target] for targets other than
// ignore (all < vocab), the gradients of grad_scale · Σ ℓ_t.
inline LossReference ce_reference(const LossSide& s, const std::vector<std::uint32_t>& targets, std::uint32_t vocab,
                                  double grad_scale, std::uint32_t ignore = 0xFFFFFFFFu) {
  const auto tokens = static_cast<std::uint32_t>(targets.size());
  LossReference r;
  r.token_loss.assign(tokens, 0.0);
  r.dh.assign(std::size_t{tokens} * s.hidden, 0.0);
  r.dw.assign(std::size_t{vocab} * s.hidden, 0.0);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    if (targets[t] == ignore || targets[t] >= vocab) continue;
    std::vector<double> p = ref_logits(s, t, vocab);
    const double target_logit = p[targets[t]];
    const double lse = ref_softmax(p);
    r.token_loss[t] = lse - target_logit;
    r.sum += r.token_loss[t];
    ++r.counted;
    p[targets[t]] -= 1.0;
    ref_backprop(s, t, p, grad_scale, r);
  }
  r.mean = r.counted ? r.sum / r.counted : 0.0;
  return r;
}

// KL: ℓ_t = τ² Σ_v p_T (log p_T − log p_s), p = softmax(z / τ), for tokens
// with counted[t]; the gradients (student only) of grad_scale · Σ ℓ_t:
// ∂ℓ_t/∂z_s = τ (p_s − p_T).
inline LossReference kl_reference(const LossSide& student, const LossSide& teacher,
                                  const std::vector<bool>& counted, std::uint32_t vocab, double tau,
                                  double grad_scale) {
  const auto tokens = static_cast<std::uint32_t>(counted.size());
  LossReference r;
  r.token_loss.assign(tokens, 0.0);
  r.dh.assign(std::size_t{tokens} * student.hidden, 0.0);
  r.dw.assign(std::size_t{vocab} * student.hidden, 0.0);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    if (!counted[t]) continue;
    std::vector<double> ps = ref_logits(student, t, vocab), pt = ref_logits(teacher, t, vocab);
    for (double& x : ps) x /= tau;
    for (double& x : pt) x /= tau;
    const std::vector<double> a = pt, b = ps;
    const double lse_s = ref_softmax(ps), lse_t = ref_softmax(pt);
    double kl = 0;
    for (std::uint32_t v = 0; v < vocab; ++v) kl += pt[v] * ((a[v] - lse_t) - (b[v] - lse_s));
    r.token_loss[t] = tau * tau * kl;
    r.sum += r.token_loss[t];
    ++r.counted;
    std::vector<double> dz(vocab);
    for (std::uint32_t v = 0; v < vocab; ++v) dz[v] = tau * (ps[v] - pt[v]);
    ref_backprop(student, t, dz, grad_scale, r);
  }
  r.mean = r.counted ? r.sum / r.counted : 0.0;
  return r;
}

// Central differences of f(side) · grad_scale with respect to every element
// of side.h and side.w (step `eps`): {dh, dw}.
template <class LossSum>
std::pair<std::vector<double>, std::vector<double>> finite_difference_grads(LossSide side, LossSum&& f,
                                                                            double grad_scale, double eps) {
  auto diff = [&](std::vector<double>& values) {
    std::vector<double> g(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double keep = values[i];
      values[i] = keep + eps;
      const double up = f(side);
      values[i] = keep - eps;
      const double down = f(side);
      values[i] = keep;
      g[i] = grad_scale * (up - down) / (2 * eps);
    }
    return g;
  };
  std::vector<double> dh = diff(side.h);
  std::vector<double> dw = diff(side.w);
  return {dh, dw};
}

// max |got − want| / max |want|.
template <class G>
double max_rel_error(const std::vector<G>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    num = std::max(num, std::abs(g - want[i]));
    den = std::max(den, std::abs(want[i]));
  }
  return num / (den > 0 ? den : 1e-300);
}

}  // namespace vkt
