// attention_ref.hpp — naive causal self-attention with grouped-query heads
// in f64 on the host: the reference of vkblr::ops::attention_forward and
// attention_backward (the same layouts, vkblr/ops/attention.hpp).
//
// Per sequence b, query head h (kv head g = h / (heads / kv_heads)) and
// query i: s_j = scale·q_i·k_j for keys j ≤ i of the sequence,
// p = softmax(s), o_i = Σ_j p_j v_j, lse_i = log Σ_j exp(s_j); backward
// from dout: dp_j = dout_i·v_j, delta = Σ_j p_j dp_j, ds_j = p_j (dp_j −
// delta), dq_i = scale Σ_j ds_j k_j, dk_j += scale ds_j q_i, dv_j += p_j
// dout_i (dk, dv of a kv head summed over its query heads).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace vkt {

struct AttentionDims {
  std::uint32_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  double scale = 0;  // 0: 1/sqrt(head_dim)

  std::size_t tokens() const { return std::size_t{batch} * seq; }
  std::size_t q_elements() const { return tokens() * heads * head_dim; }
  std::size_t kv_elements() const { return tokens() * kv_heads * head_dim; }
  double softmax_scale() const { return scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }
};

struct AttentionRef {
  std::vector<double> o, lse;       // forward
  std::vector<double> dq, dk, dv;   // backward (when dout was given)
};

// The forward (and, with dout, the backward) of every head, O(batch · heads ·
// seq² · head_dim): for small shapes.
template <class T>
AttentionRef attention_reference(const AttentionDims& a, const std::vector<T>& q, const std::vector<T>& k,
                                 const std::vector<T>& v, const std::vector<T>* dout = nullptr) {
  const std::size_t qs = std::size_t{a.heads} * a.head_dim, ks = std::size_t{a.kv_heads} * a.head_dim;
  const std::uint32_t group = a.heads / a.kv_heads, d_len = a.head_dim;
  const double scale = a.softmax_scale();
  AttentionRef r;
  r.o.assign(a.q_elements(), 0.0);
  r.lse.assign(a.tokens() * a.heads, 0.0);
  if (dout) {
    r.dq.assign(a.q_elements(), 0.0);
    r.dk.assign(a.kv_elements(), 0.0);
    r.dv.assign(a.kv_elements(), 0.0);
  }
  std::vector<double> s(a.seq), dp(a.seq);
  for (std::uint32_t b = 0; b < a.batch; ++b) {
    const std::size_t row0 = std::size_t{b} * a.seq;
    for (std::uint32_t h = 0; h < a.heads; ++h) {
      const std::uint32_t g = h / group;
      for (std::uint32_t i = 0; i < a.seq; ++i) {
        // raw pointers in the inner loops: the suite's Debug builds do not
        // inline operator[], and finite differences call this many times
        const std::size_t qrow = (row0 + i) * qs + std::size_t{h} * d_len;
        const T* qp = q.data() + qrow;
        double m = -INFINITY;
        for (std::uint32_t j = 0; j <= i; ++j) {
          const T* kp = k.data() + (row0 + j) * ks + std::size_t{g} * d_len;
          double dot = 0;
          for (std::uint32_t d = 0; d < d_len; ++d) dot += static_cast<double>(qp[d]) * kp[d];
          s[j] = scale * dot;
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (std::uint32_t j = 0; j <= i; ++j) l += std::exp(s[j] - m);
        for (std::uint32_t j = 0; j <= i; ++j) s[j] = std::exp(s[j] - m) / l;  // p
        r.lse[(row0 + i) * a.heads + h] = m + std::log(l);
        double* op = r.o.data() + qrow;
        for (std::uint32_t j = 0; j <= i; ++j) {
          const T* vp = v.data() + (row0 + j) * ks + std::size_t{g} * d_len;
          for (std::uint32_t d = 0; d < d_len; ++d) op[d] += s[j] * vp[d];
        }
        if (!dout) continue;
        double delta = 0;
        const T* dop = dout->data() + qrow;
        for (std::uint32_t j = 0; j <= i; ++j) {
          const T* vp = v.data() + (row0 + j) * ks + std::size_t{g} * d_len;
          double dot = 0;
          for (std::uint32_t d = 0; d < d_len; ++d) dot += static_cast<double>(dop[d]) * vp[d];
          dp[j] = dot;
          delta += s[j] * dot;
        }
        for (std::uint32_t j = 0; j <= i; ++j) {
          const double ds = s[j] * (dp[j] - delta);
          const std::size_t krow = (row0 + j) * ks + std::size_t{g} * d_len;
          const T* kp = k.data() + krow;
          double *dqp = r.dq.data() + qrow, *dkp = r.dk.data() + krow, *dvp = r.dv.data() + krow;
          for (std::uint32_t d = 0; d < d_len; ++d) {
            dqp[d] += scale * ds * kp[d];
            dkp[d] += scale * ds * qp[d];
            dvp[d] += s[j] * dop[d];
          }
        }
      }
    }
  }
  return r;
}

}  // namespace vkt
