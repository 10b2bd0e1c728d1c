// The f64 host model of whole-model distillation (support/llama_model_ref.hpp,
// support/blr_dense_ref.hpp) checked on its own, without a GPU: the
// backward of the summed KL loss against central differences of the f64
// forward and loss, for every projection, every norm and the embedded
// rows; a blr layer's dense matrix and the dense gradient mapped back to
// its scales and signs against blr_ref.hpp's host_blr; the same mapping
// inside the model against central differences in the scales and signs;
// the f64 Adam step (support/adam_ref.hpp) on hand-computed entries.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "support/adam_ref.hpp"
#include "support/blr_dense_ref.hpp"
#include "support/blr_ref.hpp"
#include "support/host.hpp"
#include "support/llama_model_ref.hpp"

using namespace vkt;

namespace {

// hidden 64, 2 blocks, 2 query heads of 32 over 1 KV head, MLP 128, vocab 48.
vkblr::io::LlamaConfig toy_config() {
  vkblr::io::LlamaConfig c;
  c.vocab_size = 48;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 32;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500.0;
  c.tie_word_embeddings = true;
  return c;
}

constexpr std::uint32_t kSequences = 2, kSeq = 8, kTeacherHidden = 96;
constexpr double kTau = 2.0;

std::vector<double> normal_values(std::size_t n, std::uint64_t seed, double std) {
  Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.normal() * std;
  return v;
}

// A toy distillation problem: the student, a fixed copy of its tied head
// (so that perturbing the embedding moves the inputs only), a teacher's
// final hidden states (unit scale) and head (logits of std ≈ 2.9), ids.
struct Problem {
  HostLlama student;
  std::vector<double> student_head, teacher_hidden, teacher_head;
  std::vector<std::uint32_t> ids;

  double loss() const {
    return kl_distill_loss(student, teacher_hidden, teacher_head, student_head, ids, kSequences, kSeq, kTau);
  }
  HostDistill grads() const {
    return kl_distill_grads(student, teacher_hidden, teacher_head, student_head, ids, kSequences, kSeq, kTau);
  }
};

Problem toy_problem(std::uint64_t seed) {
  const vkblr::io::LlamaConfig c = toy_config();
  Problem p;
  p.student = random_host_llama(c, seed);
  p.student_head = p.student.embed;
  const std::size_t tokens = std::size_t{kSequences} * kSeq;
  p.teacher_hidden = normal_values(tokens * kTeacherHidden, seed + 1, 1.0);
  p.teacher_head = normal_values(std::size_t{c.vocab_size} * kTeacherHidden, seed + 2, 0.3);
  Rng rng(seed + 3);
  for (std::size_t t = 0; t < tokens; ++t) p.ids.push_back(rng.below(c.vocab_size));
  return p;
}

// Central difference of loss() along `dir` in `values` (restored after),
// step δ per unit of dir: (L(v + δ·dir) − L(v − δ·dir)) / 2δ.
double central_difference(std::vector<double>& values, const std::vector<double>& dir,
                          const std::function<double()>& loss, double step) {
  const std::vector<double> keep = values;
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = keep[i] + step * dir[i];
  const double up = loss();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = keep[i] - step * dir[i];
  const double down = loss();
  values = keep;
  return (up - down) / (2 * step);
}

// Central differences with step δ = 1e-5 on a loss L ≈ 10 (16 tokens) in
// f64. The loss carries a few ulp of rounding noise (~3e-14 absolute): a
// difference is off by ~2e-9 from it (measured: ≤ 3e-9), plus the
// truncation δ²/6·|L'''| (smaller). So |fd − analytic| ≤ 1e-6·magnitude +
// 1e-8, the magnitude being |analytic| for an entry and Σ_i |dir_i·grad_i|
// along a direction: 1e-6 relative where it matters, an absolute floor a
// few times the noise for tiny entries. A wrong term (a missed residual, a
// rotation the wrong way, a wrong kv head) is off by O(1) relative.
constexpr double kStep = 1e-5, kRel = 1e-6, kAbs = 1e-8;

// Checks `grad`, the gradient of loss() in `values`, along one random ±1
// direction over every entry and, with `entries`, the entry of largest
// magnitude and one random entry (1 or 3 central differences). Returns the
// worst |fd − analytic| / (kRel·magnitude + kAbs): <= 1 within tolerance.
double check_gradient(std::vector<double>& values, const std::vector<double>& grad, const std::function<double()>& loss,
                      Rng& rng, bool entries = true) {
  REQUIRE(grad.size() == values.size());
  const std::size_t n = grad.size();
  std::vector<std::vector<double>> dirs(entries ? 3 : 1, std::vector<double>(n, 0.0));
  for (double& d : dirs[0]) d = (rng.next() >> 63) ? 1.0 : -1.0;
  if (entries) {
    dirs[1][static_cast<std::size_t>(
        std::max_element(grad.begin(), grad.end(), [](double a, double b) { return std::abs(a) < std::abs(b); }) -
        grad.begin())] = 1.0;
    dirs[2][rng.below(static_cast<std::uint32_t>(n))] = 1.0;
  }
  double worst = 0;
  for (const std::vector<double>& dir : dirs) {
    double analytic = 0, magnitude = 0;
    for (std::size_t i = 0; i < n; ++i) {
      analytic += dir[i] * grad[i];
      magnitude += std::abs(dir[i] * grad[i]);
    }
    const double fd = central_difference(values, dir, loss, kStep);
    worst = std::max(worst, std::abs(fd - analytic) / (kRel * magnitude + kAbs));
  }
  return worst;
}
}  // namespace

TEST_CASE("host llama: the summed KL loss's gradients match central differences of the f64 model",
          "[model][host]") {
  Problem p = toy_problem(11);
  const HostDistill g = p.grads();
  REQUIRE(g.loss > 0.1);  // the toy's student and teacher differ
  CHECK(g.loss == p.loss());
  double sum = 0;
  for (double l : g.token_loss) sum += l;
  CHECK(std::abs(sum - g.loss) <= 1e-12 * g.loss);

  Rng rng(5);
  const auto loss = [&] { return p.loss(); };
  for (std::size_t b = 0; b < p.student.blocks.size(); ++b) {
    HostLlamaBlock& block = p.student.blocks[b];
    const HostBlockGrads& gb = g.grads.blocks[b];
    for (Proj j : kAllProjections) {
      CAPTURE(b, proj_module(j));
      CHECK(check_gradient(block[j].w, gb[j], loss, rng) <= 1.0);
    }
    CAPTURE(b);  // the norms along a direction
    CHECK(check_gradient(block.input_norm, gb.d_input_norm, loss, rng, false) <= 1.0);
    CHECK(check_gradient(block.post_norm, gb.d_post_norm, loss, rng, false) <= 1.0);
  }
  CHECK(check_gradient(p.student.final_norm, g.grads.d_final_norm, loss, rng, false) <= 1.0);

  // The embedding row of an id feeds every token with that id: its
  // gradient is the sum of those tokens' rows of blocks[0].dx (the head is
  // a fixed copy).
  const std::size_t hidden = p.student.config.hidden_size;
  std::vector<double> d_embed(p.student.embed.size(), 0.0);
  for (std::size_t t = 0; t < p.ids.size(); ++t) {
    for (std::size_t j = 0; j < hidden; ++j) d_embed[p.ids[t] * hidden + j] += g.grads.blocks[0].dx[t * hidden + j];
  }
  CHECK(check_gradient(p.student.embed, d_embed, loss, rng, false) <= 1.0);
}

TEST_CASE("host blr: the dense matrix and the dense gradient mapped back agree with host_blr", "[model][host]") {
  // m 48 × n 80, rank 64 (two bitmap words), 2 paths, 5 tokens; L = Σ dy·y.
  const std::uint32_t m = 48, n = 80, r = 64, ntok = 5;
  const HostLayer layer = random_layer(m, n, r, 2, 31);
  const std::vector<float> x = random_floats(std::size_t{ntok} * n, 32), dy = random_floats(std::size_t{ntok} * m, 33);
  const HostResult want = host_blr(layer, x, dy, ntok);

  const std::vector<vkblr::BlrPathInit> init = layer.init();
  const RealBlrLayer real = real_blr_from_bits(m, n, r, init);
  const RealBlrLayer direct = real_blr_from_host(layer);
  for (std::size_t p = 0; p < 2; ++p) {  // the bitmaps unpack to the signs they were packed from
    CHECK(real.paths[p].su == direct.paths[p].su);
    CHECK(real.paths[p].sv == direct.paths[p].sv);
  }

  // y = x·Ŵᵀ and dŴ = dyᵀ·x. host_blr sums the same products in another
  // order: agreement to f64 rounding (~1e-15 relative; 1e-12 stated).
  const std::vector<double> w = blr_dense(real);
  const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  const std::vector<double> y = host_linear(xd, HostMatrix{m, n, w});
  CHECK(rel_error(y, want.y) < 1e-12);
  std::vector<double> dw(std::size_t{m} * n, 0.0);
  for (std::size_t t = 0; t < ntok; ++t) {
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) dw[i * n + j] += dyd[t * m + i] * xd[t * n + j];
    }
  }
  const std::vector<RealBlrGrads> got = blr_grads_from_dense(real, dw);
  REQUIRE(got.size() == 2);
  for (std::size_t p = 0; p < 2; ++p) {
    CAPTURE(p);
    CHECK(rel_error(got[p].dh, want.paths[p].dh) < 1e-12);
    CHECK(rel_error(got[p].dl, want.paths[p].dl) < 1e-12);
    CHECK(rel_error(got[p].dg, want.paths[p].dg) < 1e-12);
    CHECK(rel_error(got[p].gu, want.paths[p].gu) < 1e-12);
    CHECK(rel_error(got[p].gv, want.paths[p].gv) < 1e-12);
  }
}

TEST_CASE("host blr: a blr projection's scale and sign gradients in the model match central differences",
          "[model][host]") {
  // Block 1's gate projection (128 × 64) is a blr layer of rank 32, 2 paths
  // (entries of Ŵ of std ≈ 0.07, like the dense N(0, 1/64) ones).
  Problem p = toy_problem(21);
  HostLayer host = random_layer(128, 64, 32, 2, 41);
  RealBlrLayer layer = real_blr_from_host(host);
  HostMatrix& gate = p.student.blocks[1][Proj::gate];
  gate.w = blr_dense(layer);
  const HostDistill g = p.grads();
  const std::vector<RealBlrGrads> got = blr_grads_from_dense(layer, g.grads.blocks[1][Proj::gate]);

  // The loss as a function of the layer's values: Ŵ rebuilt each time.
  const auto loss = [&] {
    gate.w = blr_dense(layer);
    return p.loss();
  };
  // Path 1 along entries and a direction, path 0 (the same code) along a
  // direction: 20 central differences.
  Rng rng(7);
  for (std::size_t path = 0; path < 2; ++path) {
    CAPTURE(path);
    RealBlrPath& v = layer.paths[path];
    const RealBlrGrads& d = got[path];
    const bool entries = path == 1;
    CHECK(check_gradient(v.h, d.dh, loss, rng, entries) <= 1.0);
    CHECK(check_gradient(v.l, d.dl, loss, rng, entries) <= 1.0);
    CHECK(check_gradient(v.g, d.dg, loss, rng, entries) <= 1.0);
    CHECK(check_gradient(v.su, d.gu, loss, rng, entries) <= 1.0);
    CHECK(check_gradient(v.sv, d.gv, loss, rng, entries) <= 1.0);
  }
}

TEST_CASE("host adam: one step of the f64 reference is Adam's formula", "[model][host]") {
  // Entries with hand-computable steps at t = 1 from zero moments: m̂ = g',
  // v̂ = g'², s = lr·g'/(|g'| + ε). Entry 0 plain, 1 frozen by the mask,
  // 2 a relative step (floor 0.5 above |w|), 3 a relative step on |w|.
  vkblr::ops::AdamOptions o;
  o.grad_scale = 0.5f;
  o.weight_decay = 0.25f;
  const float lr = 0.125f;
  AdamRef a = adam_ref_from(std::vector<float>{1.0f, 2.0f, -0.25f, 4.0f}, std::vector<float>(4, 0.0f),
                            std::vector<float>(4, 0.0f));
  const std::vector<double> g{0.5, 1.0, -2.0, 0.0625};
  adam_ref_step(a, g, o, lr, 1, std::vector<float>{1, 0, 1, 1}, std::vector<float>{0, 0, 0.5f, 0.5f});
  const double eps = o.eps, decay = 1.0 - 0.125 * 0.25;
  const auto s = [&](double gi) { return 0.125 * (gi * 0.5) / (std::abs(gi * 0.5) + eps); };
  const double want[4] = {1.0 * decay - s(0.5), 2.0, -0.25 * decay - s(-2.0) * 0.5, 4.0 * decay - s(0.0625) * 4.0 * decay};
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(std::abs(a.w[i] - want[i]) <= 1e-15);
  }
  CHECK(a.m1[1] == 0.0);
  CHECK(a.m2[1] == 0.0);
  CHECK(std::abs(a.m1[0] - (1.0 - double(o.beta1)) * 0.25) <= 1e-17);
  CHECK(std::abs(a.m2[0] - (1.0 - double(o.beta2)) * 0.0625) <= 1e-18);
  // tolerances: moved entries carry some, the frozen one none
  CHECK(a.w_tol[0] > 0);
  CHECK(a.w_tol[1] == 0);
}
