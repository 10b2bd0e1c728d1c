// llama_model_ref.hpp — the f64 host model of a whole Llama-family model:
// its forward from token ids to the final hidden states (the engine's
// vkblr/model/llama_forward.hpp, Hugging Face's LlamaForCausalLM as
// tools/model/llama.py writes it), the backward of any loss on those
// states to every block's weights, and the whole-model distillation loss
// of vkblr/model/llama_trainer.hpp with its gradients. The reference of the
// engine's forward and of the trainer's step.
//
// The model, on rows [tokens][features], tokens = sequences · seq,
// sequence s at rows s·seq .. s·seq + seq − 1 (positions t % seq):
//   x = embed[ids]
//   per block:  h = rmsnorm(x)·w_in;  q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ
//               rope(q), rope(k)  (rotate_half pairs (i, i + d/2) turned by
//                                   pos·θ^(−2i/d))
//               x += attention(q, k, v)·Woᵀ  (causal per sequence, GQA:
//                                   query head h reads kv head h / (heads/kv),
//                                   scale 1/sqrt(head_dim))
//               h = rmsnorm(x)·w_post;  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
//   out = rmsnorm(x)·w_final
// rmsnorm(x) = x / sqrt(mean(x²) + eps) per row. Every weight f64; a
// projection is a dense matrix [out][in] (nn.Linear's layout): a blr
// projection enters as its Ŵ (blr_dense_ref.hpp), and its scale and sign
// gradients come from the dense gradient (blr_grads_from_dense).
//
// Staging::f16 rounds each projection's input to f32 then f16 first, as
// the engine's dense GEMM stages it (its weights are f16 already when the
// caller passes f16-rounded values); the backward then treats the rounding
// as the identity (straight through) and forms dW from the rounded inputs,
// as the engine's GEMMs do. Finite differences need Staging::none.
//
// The losses (logit_loss_ref.hpp's kl_reference): the student's logits
// z = out·W_headᵀ, the teacher's z_T = h_T·W_T,headᵀ; the loss is the
// token SUM Σ_t τ²·KL(softmax(z_T/τ) ‖ softmax(z/τ)), ∂/∂z_t = τ (p_s − p_T).
// The heads and the teacher are constants (no gradient to them).
//
// Cost O(tokens · (layers · weights + vocab · hidden) + layers · heads ·
// sequences · seq² · head_dim): toy models only (a 64-wide, 2-block model
// on 16 tokens forwards in about a millisecond).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <format>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/attention_ref.hpp"
#include "support/host.hpp"
#include "support/llama_ref.hpp"
#include "support/logit_loss_ref.hpp"
#include "vkblr/half.hpp"
#include "vkblr/io/llama_config.hpp"

namespace vkt {

// A block's projections in the engine's order (LlamaWeights::Block, the
// trainer's sign_matrices()).
enum class Proj : std::uint8_t { q, k, v, o, gate, up, down };
inline constexpr std::size_t kProjections = 7;
inline constexpr std::array<Proj, kProjections> kAllProjections{Proj::q,    Proj::k,  Proj::v,   Proj::o,
                                                                Proj::gate, Proj::up, Proj::down};

// "self_attn.q_proj", ..., "mlp.down_proj".
inline const char* proj_module(Proj p) {
  static constexpr const char* names[kProjections] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                      "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                      "mlp.down_proj"};
  return names[static_cast<std::size_t>(p)];
}
// The Hugging Face parameter name: "model.layers.{block}.mlp.down_proj.weight".
inline std::string proj_parameter(std::uint32_t block, Proj p) {
  return std::format("model.layers.{}.{}.weight", block, proj_module(p));
}

// A projection's weight shape {out, in} under `c`.
inline std::array<std::uint32_t, 2> proj_shape(const vkblr::io::LlamaConfig& c, Proj p) {
  switch (p) {
    case Proj::q: return {c.q_size(), c.hidden_size};
    case Proj::k:
    case Proj::v: return {c.kv_size(), c.hidden_size};
    case Proj::o: return {c.hidden_size, c.q_size()};
    case Proj::gate:
    case Proj::up: return {c.intermediate_size, c.hidden_size};
    case Proj::down: return {c.hidden_size, c.intermediate_size};
  }
  return {0, 0};
}

// A dense weight [out][in], row-major.
struct HostMatrix {
  std::uint32_t out = 0, in = 0;
  std::vector<double> w;
};

struct HostLlamaBlock {
  std::vector<double> input_norm, post_norm;  // [hidden]
  std::array<HostMatrix, kProjections> proj;  // indexed by Proj
  HostMatrix& operator[](Proj p) { return proj[static_cast<std::size_t>(p)]; }
  const HostMatrix& operator[](Proj p) const { return proj[static_cast<std::size_t>(p)]; }
};

// A model: config (sizes, eps, rope θ; max_position_embeddings and dtype are
// not read) and every weight in f64.
struct HostLlama {
  vkblr::io::LlamaConfig config;
  std::vector<double> embed;  // [vocab][hidden]
  std::vector<HostLlamaBlock> blocks;
  std::vector<double> final_norm;  // [hidden]
  std::vector<double> head;        // [vocab][hidden]; empty: tied to embed
  const std::vector<double>& head_weight() const { return head.empty() ? embed : head; }
};

// The model of a checkpoint's tensors (Hugging Face names, llama_parameters
// shapes; f32 values widened). Throws std::out_of_range for a missing name.
inline HostLlama host_llama_from_tensors(const vkblr::io::LlamaConfig& c,
                                         const std::map<std::string, std::vector<float>>& w) {
  const auto get = [&](const std::string& name) {
    const std::vector<float>& v = w.at(name);
    return std::vector<double>(v.begin(), v.end());
  };
  HostLlama m{c, get("model.embed_tokens.weight"), {}, get("model.norm.weight"), {}};
  if (!c.tie_word_embeddings) m.head = get("lm_head.weight");
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    const std::string p = std::format("model.layers.{}.", b);
    HostLlamaBlock block{get(p + "input_layernorm.weight"), get(p + "post_attention_layernorm.weight"), {}};
    for (Proj j : kAllProjections) {
      const auto [out, in] = proj_shape(c, j);
      block[j] = {out, in, get(proj_parameter(b, j))};
    }
    m.blocks.push_back(std::move(block));
  }
  return m;
}

// Random weights of sensible scale: projections N(0, 1/in), norms 1 ±0.1
// (uniform), the embedding N(0, embed_std²) (it is also the tied head: with
// unit-scale hidden states, logits of std ≈ embed_std·sqrt(hidden)). Tied.
inline HostLlama random_host_llama(const vkblr::io::LlamaConfig& c, std::uint64_t seed, double embed_std = 0.3) {
  Rng rng(seed);
  const auto normal = [&](std::size_t n, double std) {
    std::vector<double> v(n);
    for (double& x : v) x = rng.normal() * std;
    return v;
  };
  const auto norm = [&] {
    std::vector<double> v(c.hidden_size);
    for (double& x : v) x = 1.0 + 0.1 * rng.uniform();
    return v;
  };
  HostLlama m{c, normal(std::size_t{c.vocab_size} * c.hidden_size, embed_std), {}, {}, {}};
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    HostLlamaBlock block{norm(), norm(), {}};
    for (Proj j : kAllProjections) {
      const auto [out, in] = proj_shape(c, j);
      block[j] = {out, in, normal(std::size_t{out} * in, 1.0 / std::sqrt(static_cast<double>(in)))};
    }
    m.blocks.push_back(std::move(block));
  }
  m.final_norm = norm();
  return m;
}

enum class Staging : std::uint8_t { none, f16 };

// ---- the pieces -------------------------------------------------------------

// f64 → f32 → f16 → f64: the engine's staging of a GEMM input.
inline double f16_staged(double v) { return vkblr::f16_to_f32(vkblr::f32_to_f16(static_cast<float>(v))); }

inline std::vector<double> staged(std::vector<double> x, Staging s) {
  if (s == Staging::f16) {
    for (double& v : x) v = f16_staged(v);
  }
  return x;
}

// y [tokens][out] = x [tokens][in] · Wᵀ.
inline std::vector<double> host_linear(std::span<const double> x, const HostMatrix& w) {
  const std::size_t tokens = x.size() / w.in;
  std::vector<double> y(tokens * w.out);
  for (std::size_t t = 0; t < tokens; ++t) {
    const double* xr = x.data() + t * w.in;  // pointers: the suite's Debug builds do not inline operator[]
    for (std::size_t o = 0; o < w.out; ++o) {
      const double* wr = w.w.data() + o * w.in;
      double s = 0;
      for (std::size_t i = 0; i < w.in; ++i) s += xr[i] * wr[i];
      y[t * w.out + o] = s;
    }
  }
  return y;
}

// dx [tokens][in] += dy [tokens][out] · W, and dW [out][in] += dyᵀ · x.
inline void host_linear_backward(std::span<const double> x, const HostMatrix& w, std::span<const double> dy,
                                 std::vector<double>& dx, std::vector<double>& dw) {
  const std::size_t tokens = x.size() / w.in;
  dx.resize(tokens * w.in, 0.0);
  dw.resize(std::size_t{w.out} * w.in, 0.0);
  for (std::size_t t = 0; t < tokens; ++t) {
    const double* xr = x.data() + t * w.in;
    double* dxr = dx.data() + t * w.in;
    for (std::size_t o = 0; o < w.out; ++o) {
      const double g = dy[t * w.out + o];
      const double* wr = w.w.data() + o * w.in;
      double* dwr = dw.data() + o * w.in;
      for (std::size_t i = 0; i < w.in; ++i) {
        dxr[i] += g * wr[i];
        dwr[i] += g * xr[i];
      }
    }
  }
}

// Rotary positions in place on x [tokens][heads][d], Hugging Face's
// rotate_half: (a, b) = (x_i, x_{i+d/2}) → (a·cos − b·sin, b·cos + a·sin),
// angle = (t % seq)·θ^(−2i/d). `inverse`: the opposite turn (the
// transpose, i.e. the backward of the forward turn).
inline void rope_ref(std::vector<double>& x, std::size_t tokens, std::size_t heads, std::size_t d, std::size_t seq,
                     double theta, bool inverse = false) {
  for (std::size_t t = 0; t < tokens; ++t) {
    const double pos = static_cast<double>(t % seq) * (inverse ? -1.0 : 1.0);
    for (std::size_t h = 0; h < heads; ++h) {
      double* r = &x[(t * heads + h) * d];
      for (std::size_t i = 0; i < d / 2; ++i) {
        const double angle = pos * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
        const double a = r[i], b = r[i + d / 2];
        r[i] = a * std::cos(angle) - b * std::sin(angle);
        r[i + d / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
}

// ---- forward -----------------------------------------------------------------

// What one block's backward needs, rows [tokens][features]; the projection
// inputs as the projections read them (staged).
struct HostBlockActs {
  std::vector<double> x;              // block input [hidden]
  std::vector<double> h_attn;         // rmsnorm(x)·w_in [hidden]
  std::vector<double> q, k, v;        // q, k after rope: [heads·d], [kv·d], [kv·d]
  std::vector<double> attn;           // attention output [heads·d]
  std::vector<double> x_mid;          // x after the attention residual [hidden]
  std::vector<double> h_mlp;          // rmsnorm(x_mid)·w_post [hidden]
  std::vector<double> gate, up, act;  // [inter]; act = silu(gate)·up
};

struct HostForward {
  std::uint32_t sequences = 0, seq = 0;
  Staging staging = Staging::none;
  std::vector<HostBlockActs> blocks;
  std::vector<double> x_final;  // the final norm's input [tokens][hidden]
  std::vector<double> out;      // final hidden states [tokens][hidden]
};

// The forward of `ids` (u32 [sequences·seq], each < vocab; std::out_of_range
// otherwise).
inline HostForward host_llama_forward(const HostLlama& m, std::span<const std::uint32_t> ids, std::uint32_t sequences,
                                      std::uint32_t seq, Staging staging = Staging::none) {
  const vkblr::io::LlamaConfig& c = m.config;
  const std::size_t t = ids.size(), hd = c.hidden_size, d = c.head_dim;
  const std::size_t hq = c.num_attention_heads, hkv = c.num_key_value_heads;
  if (t != std::size_t{sequences} * seq) throw std::invalid_argument("host_llama_forward: ids are not sequences x seq");
  HostForward f{sequences, seq, staging, {}, std::vector<double>(t * hd), {}};
  std::vector<double>& x = f.x_final;
  for (std::size_t i = 0; i < t; ++i) {
    if (ids[i] >= c.vocab_size) throw std::out_of_range(std::format("host_llama_forward: id {} at {}", ids[i], i));
    for (std::size_t j = 0; j < hd; ++j) x[i * hd + j] = m.embed[ids[i] * hd + j];
  }
  const AttentionDims dims{sequences, seq, c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
  for (const HostLlamaBlock& w : m.blocks) {
    HostBlockActs a;
    a.x = x;
    a.h_attn = staged(rmsnorm_fwd_ref(x, w.input_norm, t, hd, c.rms_norm_eps).y.value, staging);
    a.q = host_linear(a.h_attn, w[Proj::q]);
    a.k = host_linear(a.h_attn, w[Proj::k]);
    a.v = host_linear(a.h_attn, w[Proj::v]);
    rope_ref(a.q, t, hq, d, seq, c.rope_theta);
    rope_ref(a.k, t, hkv, d, seq, c.rope_theta);
    a.attn = staged(attention_reference(dims, a.q, a.k, a.v).o, staging);
    const std::vector<double> o = host_linear(a.attn, w[Proj::o]);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    a.x_mid = x;
    a.h_mlp = staged(rmsnorm_fwd_ref(x, w.post_norm, t, hd, c.rms_norm_eps).y.value, staging);
    a.gate = host_linear(a.h_mlp, w[Proj::gate]);
    a.up = host_linear(a.h_mlp, w[Proj::up]);
    a.act = staged(swiglu_fwd_ref(a.gate, a.up).value, staging);
    const std::vector<double> down = host_linear(a.act, w[Proj::down]);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    f.blocks.push_back(std::move(a));
  }
  f.out = rmsnorm_fwd_ref(x, m.final_norm, t, hd, c.rms_norm_eps).y.value;
  return f;
}

// ---- backward ----------------------------------------------------------------

struct HostBlockGrads {
  std::array<std::vector<double>, kProjections> dw;  // ∂L/∂W per Proj, [out][in]
  std::vector<double> d_input_norm, d_post_norm;     // [hidden]
  std::vector<double> dx;                            // ∂L/∂(block input) [tokens][hidden]
  const std::vector<double>& operator[](Proj p) const { return dw[static_cast<std::size_t>(p)]; }
};

struct HostLlamaGrads {
  std::vector<HostBlockGrads> blocks;  // blocks[0].dx: ∂L/∂ of the embedded rows embed[ids]
  std::vector<double> d_final_norm;    // [hidden]
};

// The gradients of a loss L given d_out = ∂L/∂out [tokens][hidden] at the
// point `f` (host_llama_forward of `m`).
inline HostLlamaGrads host_llama_backward(const HostLlama& m, const HostForward& f, std::span<const double> d_out) {
  const vkblr::io::LlamaConfig& c = m.config;
  const std::size_t t = f.out.size() / c.hidden_size, hd = c.hidden_size, d = c.head_dim;
  const std::size_t hq = c.num_attention_heads, hkv = c.num_key_value_heads;
  const double eps = c.rms_norm_eps;
  const AttentionDims dims{f.sequences, f.seq, c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
  HostLlamaGrads g;
  g.blocks.resize(m.blocks.size());
  RmsNormGradRef fin = rmsnorm_bwd_ref(f.x_final, m.final_norm, d_out, t, hd, eps);
  g.d_final_norm = std::move(fin.dw.value);
  std::vector<double> dx = std::move(fin.dx.value);  // ∂L/∂ of the residual stream
  for (std::size_t b = m.blocks.size(); b-- > 0;) {
    const HostLlamaBlock& w = m.blocks[b];
    const HostBlockActs& a = f.blocks[b];
    HostBlockGrads& gb = g.blocks[b];
    const auto dw = [&](Proj p) -> std::vector<double>& { return gb.dw[static_cast<std::size_t>(p)]; };
    // x_out = x_mid + act·Wdᵀ, act = silu(gate)·up
    std::vector<double> d_act;
    host_linear_backward(a.act, w[Proj::down], dx, d_act, dw(Proj::down));
    RefValues d_gate, d_up;
    swiglu_bwd_ref(a.gate, a.up, d_act, d_gate, d_up);
    std::vector<double> d_h;
    host_linear_backward(a.h_mlp, w[Proj::gate], d_gate.value, d_h, dw(Proj::gate));
    host_linear_backward(a.h_mlp, w[Proj::up], d_up.value, d_h, dw(Proj::up));
    RmsNormGradRef post = rmsnorm_bwd_ref(a.x_mid, w.post_norm, d_h, t, hd, eps);
    gb.d_post_norm = std::move(post.dw.value);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += post.dx.value[i];  // ∂L/∂x_mid
    // x_mid = x + attn·Woᵀ
    std::vector<double> d_attn;
    host_linear_backward(a.attn, w[Proj::o], dx, d_attn, dw(Proj::o));
    AttentionRef att = attention_reference(dims, a.q, a.k, a.v, &d_attn);
    rope_ref(att.dq, t, hq, d, f.seq, c.rope_theta, true);
    rope_ref(att.dk, t, hkv, d, f.seq, c.rope_theta, true);
    d_h.assign(t * hd, 0.0);
    host_linear_backward(a.h_attn, w[Proj::q], att.dq, d_h, dw(Proj::q));
    host_linear_backward(a.h_attn, w[Proj::k], att.dk, d_h, dw(Proj::k));
    host_linear_backward(a.h_attn, w[Proj::v], att.dv, d_h, dw(Proj::v));
    RmsNormGradRef in = rmsnorm_bwd_ref(a.x, w.input_norm, d_h, t, hd, eps);
    gb.d_input_norm = std::move(in.dw.value);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += in.dx.value[i];  // ∂L/∂x
    gb.dx = dx;
  }
  return g;
}

// ---- the distillation loss -----------------------------------------------------

struct HostDistill {
  double loss = 0;                  // Σ_t τ²·KL_t (token SUM)
  std::vector<double> token_loss;   // [tokens]
  std::vector<double> d_out;        // ∂loss/∂out [tokens][hidden]
  HostForward forward;
  HostLlamaGrads grads;             // empty for kl_distill_loss
};

namespace detail {
inline HostDistill kl_distill(const HostLlama& student, std::span<const double> teacher_hidden,
                              std::span<const double> teacher_head, std::span<const double> student_head,
                              std::span<const std::uint32_t> ids, std::uint32_t sequences, std::uint32_t seq,
                              double temperature, Staging staging, bool backward) {
  const vkblr::io::LlamaConfig& c = student.config;
  const std::size_t tokens = ids.size(), vocab = c.vocab_size;
  if (student_head.empty()) student_head = student.head_weight();
  if (student_head.size() != vocab * c.hidden_size || teacher_head.size() % vocab != 0 ||
      teacher_hidden.size() != tokens * (teacher_head.size() / vocab)) {
    throw std::invalid_argument("kl_distill: head or teacher shapes do not fit");
  }
  HostDistill r;
  r.forward = host_llama_forward(student, ids, sequences, seq, staging);
  const LossSide s{r.forward.out, {student_head.begin(), student_head.end()}, c.hidden_size};
  const LossSide te{{teacher_hidden.begin(), teacher_hidden.end()},
                    {teacher_head.begin(), teacher_head.end()},
                    static_cast<std::uint32_t>(teacher_head.size() / vocab)};
  LossReference kl = kl_reference(s, te, std::vector<bool>(tokens, true), c.vocab_size, temperature, 1.0);
  r.loss = kl.sum;
  r.token_loss = std::move(kl.token_loss);
  r.d_out = std::move(kl.dh);
  if (backward) r.grads = host_llama_backward(student, r.forward, r.d_out);
  return r;
}
}  // namespace detail

// The loss and every gradient: teacher_hidden [tokens][H_T], teacher_head
// [vocab][H_T], student_head [vocab][hidden] (empty: the student's own head,
// the embedding when tied), ids u32 [sequences·seq], temperature τ > 0.
inline HostDistill kl_distill_grads(const HostLlama& student, std::span<const double> teacher_hidden,
                                    std::span<const double> teacher_head, std::span<const double> student_head,
                                    std::span<const std::uint32_t> ids, std::uint32_t sequences, std::uint32_t seq,
                                    double temperature, Staging staging = Staging::none) {
  return detail::kl_distill(student, teacher_hidden, teacher_head, student_head, ids, sequences, seq, temperature,
                            staging, true);
}

// The loss alone (forward and loss: what finite differences call).
inline double kl_distill_loss(const HostLlama& student, std::span<const double> teacher_hidden,
                              std::span<const double> teacher_head, std::span<const double> student_head,
                              std::span<const std::uint32_t> ids, std::uint32_t sequences, std::uint32_t seq,
                              double temperature, Staging staging = Staging::none) {
  return detail::kl_distill(student, teacher_hidden, teacher_head, student_head, ids, sequences, seq, temperature,
                            staging, false)
      .loss;
}

}  // namespace vkt
