// cross_entropy and kl_distill (vkblr/ops/logit_loss.hpp) against f64 host
// references (tests/support/logit_loss_ref.hpp) on the f16 roundings of h
// and W (the values the ops stage), and against finite differences of the
// reference loss; several slice sizes (a vocabulary not a multiple of the
// slice, one slice for all), ignored tokens, ids >= vocab, the KL of a
// student against itself, the same bits run after run, and refused
// arguments.
//
// Tolerances: per-token losses and the mean 2e-5·(1 + |loss|): f32 logits
// (one chain over hidden), the f32 online logsumexp over a few hundred
// terms (each exp within a few ulps) and lse − z; gradients 3e-3 of their
// largest element: the logits' gradient enters the GEMMs as f16 (2^-11
// relative rounding each).
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/logit_loss_ref.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;

namespace {

constexpr double kLossTol = 2e-5;
constexpr double kGradTol = 3e-3;

float inverse(std::uint32_t n) { return 1.0f / static_cast<float>(n); }

// Random targets in [0, vocab), every `ignore_every`-th token (from 3) ignored.
std::vector<std::uint32_t> random_targets(std::uint32_t tokens, std::uint32_t vocab, std::uint64_t seed,
                                          std::uint32_t ignore_every = 7) {
  vkt::Rng r(seed);
  std::vector<std::uint32_t> t(tokens);
  for (std::uint32_t i = 0; i < tokens; ++i) {
    t[i] = (ignore_every && i % ignore_every == 3) ? ops::kIgnoreToken : r.below(vocab);
  }
  return t;
}

// Inputs of one head: h [tokens][hidden], w [vocab][hidden].
struct Head {
  std::vector<float> h, w;
  std::uint32_t hidden;
  vkt::LossSide staged() const { return {vkt::staged_f64(h), vkt::staged_f64(w), hidden}; }
};

Head random_head(std::uint32_t tokens, std::uint32_t hidden, std::uint32_t vocab, std::uint64_t seed,
                 float h_scale = 1.0f, float w_scale = 0.5f) {
  return {vkt::random_floats(std::size_t{tokens} * hidden, seed, h_scale),
          vkt::random_floats(std::size_t{vocab} * hidden, seed + 1, w_scale), hidden};
}

struct DeviceLoss {
  std::vector<std::uint32_t> words;  // the loss output
  ops::LogitLossValue value;
  std::vector<float> token_loss, dh, dw;
};

struct RunOptions {
  bool dh = true, dw = true;
  bool accumulate = false;  // into dh0/dw0 (else into poisoned buffers, overwritten)
  const std::vector<float>* dh0 = nullptr;
  const std::vector<float>* dw0 = nullptr;
  float grad_scale = 1.0f;
  std::uint32_t ignore_id = ops::kIgnoreToken;
  float temperature = 1.0f;
  const std::vector<std::uint32_t>* mask = nullptr;  // KL
};

// Records and runs cross_entropy (teacher == nullptr) or kl_distill.
DeviceLoss run_loss(Context& ctx, const ops::LogitLossShape& shape, const Head& student, const Head* teacher,
                    const std::vector<std::uint32_t>& targets, const RunOptions& o) {
  Buffer h = ctx.upload(student.h), w = ctx.upload(student.w);
  Buffer ids = ctx.upload(targets.empty() ? std::vector<std::uint32_t>{0} : targets);
  Buffer th, tw, mask;
  if (teacher) {
    th = ctx.upload(teacher->h);
    tw = ctx.upload(teacher->w);
    if (o.mask) mask = ctx.upload(*o.mask);
  }
  Buffer loss = poisoned(ctx, 4), token_loss = poisoned(ctx, shape.tokens);
  Buffer dh = poisoned(ctx, std::size_t{shape.tokens} * shape.hidden);
  Buffer dw = poisoned(ctx, std::size_t{shape.vocab} * shape.hidden);
  if (o.accumulate) {
    dh.upload(*o.dh0);
    dw.upload(*o.dw0);
  }
  const ops::LogitLossScratch scratch = ops::make_logit_loss_scratch(ctx, shape, o.dh || o.dw);
  ops::LogitLossGrads grads;
  grads.dh = o.dh ? &dh : nullptr;
  grads.dw = o.dw ? &dw : nullptr;
  grads.grad_scale = o.grad_scale;
  grads.accumulate_dh = grads.accumulate_dw = o.accumulate;
  Recorder rec(ctx);
  if (teacher) {
    ops::KlDistillOptions opt;
    opt.temperature = o.temperature;
    opt.mask = o.mask ? &mask : nullptr;
    opt.ignore_id = o.ignore_id;
    opt.token_loss = &token_loss;
    rec.add(ops::kl_distill(ctx, shape, h, w, th, tw, loss, grads, scratch, opt));
  } else {
    ops::CrossEntropyOptions opt;
    opt.ignore_id = o.ignore_id;
    opt.token_loss = &token_loss;
    rec.add(ops::cross_entropy(ctx, shape, h, w, ids, loss, grads, scratch, opt));
  }
  rec.run();
  DeviceLoss r;
  r.words = loss.download<std::uint32_t>();
  r.value = ops::read_logit_loss(loss);
  r.token_loss = token_loss.download<float>();
  if (o.dh) r.dh = dh.download<float>();
  if (o.dw) r.dw = dw.download<float>();
  return r;
}

void check_against(const DeviceLoss& got, const vkt::LossReference& want, bool grads = true) {
  CHECK(got.value.counted == want.counted);
  CHECK(got.value.bad_ids == 0);
  CHECK(std::abs(got.value.mean - want.mean) <= kLossTol * (1 + std::abs(want.mean)));
  CHECK(std::abs(got.value.sum - want.sum) <= kLossTol * (1 + std::abs(want.sum)));
  std::size_t off = 0;
  for (std::size_t t = 0; t < want.token_loss.size(); ++t) {
    off += !(std::abs(got.token_loss[t] - want.token_loss[t]) <= kLossTol * (1 + std::abs(want.token_loss[t])));
  }
  CHECK(off == 0);
  if (!grads) return;
  const double dh_err = vkt::max_rel_error(got.dh, want.dh), dw_err = vkt::max_rel_error(got.dw, want.dw);
  INFO("dh error " << dh_err << ", dW error " << dw_err);
  CHECK(dh_err <= kGradTol);
  CHECK(dw_err <= kGradTol);
}

ops::LogitLossShape ce_shape(std::uint32_t tokens, std::uint32_t hidden, std::uint32_t vocab, std::uint32_t slice) {
  ops::LogitLossShape s;
  s.tokens = tokens;
  s.hidden = hidden;
  s.vocab = vocab;
  s.slice = slice;
  return s;
}

bool same_bits(const DeviceLoss& a, const DeviceLoss& b) {
  return vkt::count_bit_diffs(a.words, b.words) == 0 && vkt::count_bit_diffs(a.token_loss, b.token_loss) == 0 &&
         vkt::count_bit_diffs(a.dh, b.dh) == 0 && vkt::count_bit_diffs(a.dw, b.dw) == 0;
}

}  // namespace

GPU_TEST("cross_entropy matches the f64 reference for several slice sizes", "[logit_loss]") {
  // 70 tokens (not a multiple of 32), hidden 48 (of 16, not 32), vocab 300:
  // slices of 32 and 96 (last slices of 12 and 12 rows), 256 (44), 320 (one
  // slice for all: pass 2 reuses pass 1's logits)
  const std::uint32_t tokens = 70, hidden = 48, vocab = 300;
  const Head head = random_head(tokens, hidden, vocab, 11, 1.0f, 0.8f);
  const auto targets = random_targets(tokens, vocab, 12);
  const std::uint32_t counted = ops::count_loss_tokens(targets, vocab);
  REQUIRE(counted == 60);
  const vkt::LossReference want = vkt::ce_reference(head.staged(), targets, vocab, 1.0 / counted);
  RunOptions o;
  o.grad_scale = inverse(counted);
  for (std::uint32_t slice : {32u, 96u, 256u, 320u}) {
    INFO("slice " << slice);
    const DeviceLoss got = run_loss(ctx, ce_shape(tokens, hidden, vocab, slice), head, nullptr, targets, o);
    check_against(got, want);
    // ignored tokens: a loss of exactly 0 and no gradient
    for (std::uint32_t t = 3; t < tokens; t += 7) {
      CHECK(got.token_loss[t] == 0.0f);
      CHECK(std::all_of(got.dh.begin() + t * hidden, got.dh.begin() + (t + 1) * hidden, [](float x) { return x == 0; }));
    }
  }
}

GPU_TEST("cross_entropy stays finite with large logits (the online max)", "[logit_loss]") {
  // logits of magnitude ~100: exp without the running max would overflow f32
  const std::uint32_t tokens = 40, hidden = 32, vocab = 200;
  const Head head = random_head(tokens, hidden, vocab, 21, 8.0f, 4.0f);
  const auto targets = random_targets(tokens, vocab, 22, 0);
  const vkt::LossReference want = vkt::ce_reference(head.staged(), targets, vocab, 1.0 / tokens);
  RunOptions o;
  o.grad_scale = inverse(tokens);
  const DeviceLoss got = run_loss(ctx, ce_shape(tokens, hidden, vocab, 64), head, nullptr, targets, o);
  INFO("mean loss " << want.mean);
  REQUIRE(want.mean > 20);
  check_against(got, want);
}

TEST_CASE("the f64 references' gradients equal finite differences of their losses", "[logit_loss]") {
  const std::uint32_t tokens = 5, hidden = 16, vocab = 40;
  const Head head = random_head(tokens, hidden, vocab, 31, 1.0f, 0.8f);
  const auto targets = random_targets(tokens, vocab, 32, 4);  // token 3 ignored
  const vkt::LossSide side = head.staged();
  const double scale = 1.0 / 4;
  SECTION("cross-entropy") {
    const vkt::LossReference r = vkt::ce_reference(side, targets, vocab, scale);
    const auto [dh, dw] = vkt::finite_difference_grads(
        side, [&](const vkt::LossSide& s) { return vkt::ce_reference(s, targets, vocab, 0).sum; }, scale, 1e-5);
    CHECK(vkt::max_rel_error(r.dh, dh) < 1e-7);
    CHECK(vkt::max_rel_error(r.dw, dw) < 1e-7);
  }
  SECTION("KL at temperature 2") {
    const Head teacher = random_head(tokens, 32, vocab, 33, 1.0f, 0.8f);
    const std::vector<bool> counted{true, true, false, true, true};
    const vkt::LossReference r = vkt::kl_reference(side, teacher.staged(), counted, vocab, 2.0, scale);
    const auto [dh, dw] = vkt::finite_difference_grads(
        side, [&](const vkt::LossSide& s) { return vkt::kl_reference(s, teacher.staged(), counted, vocab, 2.0, 0).sum; },
        scale, 1e-5);
    CHECK(vkt::max_rel_error(r.dh, dh) < 1e-7);
    CHECK(vkt::max_rel_error(r.dw, dw) < 1e-7);
  }
}

GPU_TEST("cross_entropy's gradients match finite differences of the f64 loss", "[logit_loss]") {
  // two slices of 32 (the last of 8), token 3 ignored
  const std::uint32_t tokens = 5, hidden = 16, vocab = 40;
  const Head head = random_head(tokens, hidden, vocab, 31, 1.0f, 0.8f);
  const auto targets = random_targets(tokens, vocab, 32, 4);
  const vkt::LossSide side = head.staged();
  const double scale = 1.0 / 4;
  const auto [dh, dw] = vkt::finite_difference_grads(
      side, [&](const vkt::LossSide& s) { return vkt::ce_reference(s, targets, vocab, 0).sum; }, scale, 1e-5);
  RunOptions o;
  o.grad_scale = 0.25f;
  const DeviceLoss got = run_loss(ctx, ce_shape(tokens, hidden, vocab, 32), head, nullptr, targets, o);
  CHECK(vkt::max_rel_error(got.dh, dh) <= kGradTol);
  CHECK(vkt::max_rel_error(got.dw, dw) <= kGradTol);
}

GPU_TEST("cross_entropy gives the same bits run after run, replayed, and forward-only", "[logit_loss]") {
  const std::uint32_t tokens = 45, hidden = 32, vocab = 250;
  const Head head = random_head(tokens, hidden, vocab, 41);
  const auto targets = random_targets(tokens, vocab, 42);
  const ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 64);
  RunOptions o;
  o.grad_scale = inverse(ops::count_loss_tokens(targets, vocab));
  const DeviceLoss a = run_loss(ctx, shape, head, nullptr, targets, o);
  const DeviceLoss b = run_loss(ctx, shape, head, nullptr, targets, o);
  CHECK(same_bits(a, b));
  // dh alone and dW alone: the same bits as together
  RunOptions only_dh = o, only_dw = o;
  only_dh.dw = false;
  only_dw.dh = false;
  const DeviceLoss c = run_loss(ctx, shape, head, nullptr, targets, only_dh);
  const DeviceLoss d = run_loss(ctx, shape, head, nullptr, targets, only_dw);
  CHECK(vkt::count_bit_diffs(c.dh, a.dh) == 0);
  CHECK(vkt::count_bit_diffs(d.dw, a.dw) == 0);
  // forward only: pass 1's loss bits
  RunOptions fwd = o;
  fwd.dh = fwd.dw = false;
  const DeviceLoss e = run_loss(ctx, shape, head, nullptr, targets, fwd);
  CHECK(vkt::count_bit_diffs(e.words, a.words) == 0);
  CHECK(vkt::count_bit_diffs(e.token_loss, a.token_loss) == 0);

  // one Graph replayed three times over accumulating gradients: each replay
  // adds the same bits (dW rows are written by one GEMM per replay)
  Buffer h = ctx.upload(head.h), w = ctx.upload(head.w), ids = ctx.upload(targets), loss = poisoned(ctx, 4);
  Buffer dh = ctx.buffer(std::size_t{tokens} * hidden * 4), dw = ctx.buffer(std::size_t{vocab} * hidden * 4);
  const ops::LogitLossScratch scratch = ops::make_logit_loss_scratch(ctx, shape);
  ops::LogitLossGrads grads;
  grads.dh = &dh;
  grads.dw = &dw;
  grads.grad_scale = o.grad_scale;
  grads.accumulate_dh = grads.accumulate_dw = false;
  Recorder rec(ctx);
  rec.add(ops::cross_entropy(ctx, shape, h, w, ids, loss, grads, scratch));
  Graph g = rec.finish();
  for (int i = 0; i < 3; ++i) {
    dh.fill(vkt::kPoison32);
    g.run();
    CHECK(vkt::count_bit_diffs(loss.download<std::uint32_t>(), a.words) == 0);
    CHECK(vkt::count_bit_diffs(dh.download<float>(), a.dh) == 0);
    CHECK(vkt::count_bit_diffs(dw.download<float>(), a.dw) == 0);
    CHECK(vkt::count_bit_diffs(scratch.token_loss.download<float>(), a.token_loss) == 0);
  }
}

GPU_TEST("cross_entropy: what the slice size changes", "[logit_loss]") {
  // The slice size sets the order of the logsumexp's sums and of dh's sum
  // over slices: the results agree to f32 rounding, not bit for bit.
  const std::uint32_t tokens = 64, hidden = 32, vocab = 512;
  const Head head = random_head(tokens, hidden, vocab, 51);
  const auto targets = random_targets(tokens, vocab, 52);
  RunOptions o;
  o.grad_scale = inverse(ops::count_loss_tokens(targets, vocab));
  const DeviceLoss one = run_loss(ctx, ce_shape(tokens, hidden, vocab, 512), head, nullptr, targets, o);
  for (std::uint32_t slice : {32u, 160u}) {
    INFO("slice " << slice);
    const DeviceLoss got = run_loss(ctx, ce_shape(tokens, hidden, vocab, slice), head, nullptr, targets, o);
    CHECK(std::abs(got.value.mean - one.value.mean) <= 2e-6 * std::abs(one.value.mean));
    std::vector<double> dh(one.dh.begin(), one.dh.end()), dw(one.dw.begin(), one.dw.end());
    CHECK(vkt::max_rel_error(got.dh, dh) <= 1e-5);
    CHECK(vkt::max_rel_error(got.dw, dw) <= 1e-5);
  }
}

GPU_TEST("cross_entropy accumulates into given gradients (a tied head adds to the embedding's)", "[logit_loss]") {
  const std::uint32_t tokens = 33, hidden = 16, vocab = 100;
  const Head head = random_head(tokens, hidden, vocab, 61);
  const auto targets = random_targets(tokens, vocab, 62);
  const auto dh0 = vkt::random_floats(std::size_t{tokens} * hidden, 63, 0.01f);
  const auto dw0 = vkt::random_floats(std::size_t{vocab} * hidden, 64, 0.01f);
  const std::uint32_t counted = ops::count_loss_tokens(targets, vocab);
  vkt::LossReference want = vkt::ce_reference(head.staged(), targets, vocab, 1.0 / counted);
  for (std::size_t i = 0; i < dh0.size(); ++i) want.dh[i] += dh0[i];
  for (std::size_t i = 0; i < dw0.size(); ++i) want.dw[i] += dw0[i];
  RunOptions o;
  o.grad_scale = inverse(counted);
  o.accumulate = true;
  o.dh0 = &dh0;
  o.dw0 = &dw0;
  const DeviceLoss got = run_loss(ctx, ce_shape(tokens, hidden, vocab, 64), head, nullptr, targets, o);
  check_against(got, want);
}

GPU_TEST("cross_entropy: ignored tokens, a custom ignore id, ids >= vocab", "[logit_loss]") {
  const std::uint32_t tokens = 40, hidden = 16, vocab = 90;
  const Head head = random_head(tokens, hidden, vocab, 71);
  const ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 32);
  RunOptions o;
  SECTION("every token ignored: loss 0, counted 0, zero gradients") {
    const std::vector<std::uint32_t> targets(tokens, ops::kIgnoreToken);
    CHECK(ops::count_loss_tokens(targets, vocab) == 0);
    const DeviceLoss got = run_loss(ctx, shape, head, nullptr, targets, o);
    CHECK(got.value.mean == 0.0f);
    CHECK(got.value.sum == 0.0f);
    CHECK(got.value.counted == 0);
    CHECK(std::all_of(got.token_loss.begin(), got.token_loss.end(), [](float x) { return x == 0; }));
    CHECK(std::all_of(got.dh.begin(), got.dh.end(), [](float x) { return x == 0; }));
    CHECK(std::all_of(got.dw.begin(), got.dw.end(), [](float x) { return x == 0; }));
  }
  SECTION("ignore id 0 (a padding token inside the vocabulary)") {
    auto targets = random_targets(tokens, vocab, 72, 0);
    for (std::uint32_t t = 0; t < tokens; t += 5) targets[t] = 0;
    const std::uint32_t counted = ops::count_loss_tokens(targets, vocab, 0);
    REQUIRE(counted < tokens);
    o.ignore_id = 0;
    o.grad_scale = inverse(counted);
    check_against(run_loss(ctx, shape, head, nullptr, targets, o),
                  vkt::ce_reference(head.staged(), targets, vocab, 1.0 / counted, 0));
  }
  SECTION("ids >= vocab: refused on the host, flagged on the device") {
    auto targets = random_targets(tokens, vocab, 73);
    targets[5] = vocab;
    targets[17] = vocab + 1000;
    CHECK_THROWS_WITH(ops::count_loss_tokens(targets, vocab),
                      ContainsSubstring("cross_entropy") && ContainsSubstring("target[5] = 90"));
    // on the device: those tokens' losses (so the sum and mean) NaN, their
    // count in word 3, no gradient from them, the others as the reference
    o.grad_scale = 0.03f;
    const DeviceLoss got = run_loss(ctx, shape, head, nullptr, targets, o);
    const vkt::LossReference want = vkt::ce_reference(head.staged(), targets, vocab, 0.03);
    CHECK(got.value.bad_ids == 2);
    CHECK(got.value.counted == want.counted);
    CHECK(std::isnan(got.value.mean));
    CHECK(std::isnan(got.value.sum));
    CHECK(std::isnan(got.token_loss[5]));
    CHECK(std::isnan(got.token_loss[17]));
    REQUIRE(got.token_loss.size() == tokens);
    std::size_t off = 0;
    for (std::size_t t = 0; t < tokens; ++t) {
      if (t == 5 || t == 17) continue;  // the bad ids' NaN losses, checked above
      off += !(std::abs(got.token_loss[t] - want.token_loss[t]) <= kLossTol * (1 + std::abs(want.token_loss[t])));
    }
    CHECK(off == 0);
    CHECK(vkt::max_rel_error(got.dh, want.dh) <= kGradTol);
    CHECK(vkt::max_rel_error(got.dw, want.dw) <= kGradTol);
  }
}

GPU_TEST("kl_distill matches the f64 reference (temperatures, masks, a teacher of another width)", "[logit_loss]") {
  const std::uint32_t tokens = 50, hidden = 48, teacher_hidden = 32, vocab = 230;
  const Head student = random_head(tokens, hidden, vocab, 81, 1.0f, 0.8f);
  const Head teacher = random_head(tokens, teacher_hidden, vocab, 83, 1.0f, 1.0f);
  std::vector<std::uint32_t> mask(tokens, 7);
  std::vector<bool> counted(tokens, true), all(tokens, true);
  for (std::uint32_t t = 2; t < tokens; t += 6) {
    mask[t] = ops::kIgnoreToken;
    counted[t] = false;
  }
  for (float tau : {1.0f, 2.0f}) {
    for (std::uint32_t slice : {64u, 256u}) {
      INFO("temperature " << tau << ", slice " << slice);
      ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, slice);
      shape.teacher_hidden = teacher_hidden;
      RunOptions o;
      o.temperature = tau;
      o.mask = &mask;
      o.grad_scale = 1.0f / 41;
      check_against(run_loss(ctx, shape, student, &teacher, {}, o),
                    vkt::kl_reference(student.staged(), teacher.staged(), counted, vocab, tau, 1.0 / 41));
      o.mask = nullptr;
      o.grad_scale = inverse(tokens);
      check_against(run_loss(ctx, shape, student, &teacher, {}, o),
                    vkt::kl_reference(student.staged(), teacher.staged(), all, vocab, tau, 1.0 / tokens));
    }
  }
}

GPU_TEST("kl_distill's gradients match finite differences of the f64 loss", "[logit_loss]") {
  const std::uint32_t tokens = 5, hidden = 16, vocab = 40;
  const Head student = random_head(tokens, hidden, vocab, 91, 1.0f, 0.8f);
  const Head teacher = random_head(tokens, 32, vocab, 93, 1.0f, 0.8f);
  const std::vector<bool> counted(tokens, true);
  const auto [dh, dw] = vkt::finite_difference_grads(
      student.staged(),
      [&](const vkt::LossSide& s) { return vkt::kl_reference(s, teacher.staged(), counted, vocab, 1.5, 0).sum; },
      0.2, 1e-5);
  ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 32);
  shape.teacher_hidden = 32;
  RunOptions o;
  o.temperature = 1.5f;
  o.grad_scale = 0.2f;
  const DeviceLoss got = run_loss(ctx, shape, student, &teacher, {}, o);
  CHECK(vkt::max_rel_error(got.dh, dh) <= kGradTol);
  CHECK(vkt::max_rel_error(got.dw, dw) <= kGradTol);
}

GPU_TEST("kl_distill of a student against itself is exactly 0 with zero gradients", "[logit_loss]") {
  const std::uint32_t tokens = 37, hidden = 32, vocab = 150;
  const Head student = random_head(tokens, hidden, vocab, 101, 2.0f, 1.0f);
  for (float tau : {1.0f, 3.0f}) {
    INFO("temperature " << tau);
    ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 64);
    shape.teacher_hidden = hidden;
    RunOptions o;
    o.temperature = tau;
    o.grad_scale = inverse(tokens);
    const DeviceLoss got = run_loss(ctx, shape, student, &student, {}, o);
    CHECK(got.value.mean == 0.0f);
    CHECK(got.value.counted == tokens);
    CHECK(std::all_of(got.token_loss.begin(), got.token_loss.end(), [](float x) { return x == 0; }));
    CHECK(std::all_of(got.dh.begin(), got.dh.end(), [](float x) { return x == 0; }));
    CHECK(std::all_of(got.dw.begin(), got.dw.end(), [](float x) { return x == 0; }));
  }
}

GPU_TEST("kl_distill gives the same bits run after run", "[logit_loss]") {
  const std::uint32_t tokens = 40, hidden = 32, vocab = 200;
  const Head student = random_head(tokens, hidden, vocab, 111), teacher = random_head(tokens, 16, vocab, 113);
  ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 96);
  shape.teacher_hidden = 16;
  RunOptions o;
  o.temperature = 2.0f;
  o.grad_scale = inverse(tokens);
  CHECK(same_bits(run_loss(ctx, shape, student, &teacher, {}, o), run_loss(ctx, shape, student, &teacher, {}, o)));
}

GPU_TEST("cross_entropy and kl_distill refuse bad shapes and buffers", "[logit_loss][errors]") {
  const std::uint32_t tokens = 8, hidden = 16, vocab = 40;
  const ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 32);
  Buffer h = ctx.buffer(tokens * hidden * 4), w = ctx.buffer(vocab * hidden * 4), ids = ctx.buffer(tokens * 4);
  Buffer loss = ctx.buffer(16), dh = ctx.buffer(tokens * hidden * 4), dw = ctx.buffer(vocab * hidden * 4);
  const ops::LogitLossScratch scratch = ops::make_logit_loss_scratch(ctx, shape);
  ops::LogitLossGrads grads;
  grads.dh = &dh;
  grads.dw = &dw;
  grads.grad_scale = 0.125f;
  auto ce = [&](const ops::LogitLossShape& s, const Buffer& hh, const Buffer& ww, const Buffer& tt,
                const ops::LogitLossGrads& g, const ops::LogitLossScratch& sc) {
    return ops::cross_entropy(ctx, s, hh, ww, tt, loss, g, sc);
  };
  CHECK_NOTHROW(ce(shape, h, w, ids, grads, scratch));

  ops::LogitLossShape bad = shape;
  bad.hidden = 24;
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: hidden = 24 is not a multiple of 16"));
  bad = shape;
  bad.slice = 48;
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: slice = 48 is not a multiple of 32"));
  bad = shape;
  bad.tokens = 0;
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch), ContainsSubstring("cross_entropy: tokens = 0"));
  bad = shape;
  bad.vocab = 0;
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch), ContainsSubstring("cross_entropy: vocab = 0"));
  bad.vocab = 0xFFFFFFF0u;  // rounded up to 32 it wraps: refused, not divided by 0
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: vocab = 4294967280 exceeds 32 bits rounded up to 32"));
  CHECK_THROWS_WITH(ops::logit_loss_scratch_bytes(bad), ContainsSubstring("vocab = 4294967280 exceeds 32 bits"));
  bad = shape;
  bad.teacher_hidden = 16;
  CHECK_THROWS_WITH(ce(bad, h, w, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: teacher_hidden = 16"));

  Buffer small = ctx.buffer(64);
  CHECK_THROWS_WITH(ce(shape, small, w, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: h holds 64 bytes, needs 512"));
  CHECK_THROWS_WITH(ce(shape, h, small, ids, grads, scratch),
                    ContainsSubstring("cross_entropy: w holds 64 bytes, needs 2560"));
  Buffer short_ids = ctx.buffer(28);
  CHECK_THROWS_WITH(ce(shape, h, w, short_ids, grads, scratch),
                    ContainsSubstring("cross_entropy: targets holds 28 bytes, needs 32"));
  Buffer short_loss = ctx.buffer(12);
  CHECK_THROWS_WITH(ops::cross_entropy(ctx, shape, h, w, ids, short_loss, grads, scratch),
                    ContainsSubstring("cross_entropy: loss holds 12 bytes, needs 16"));
  ops::LogitLossGrads g = grads;
  g.dh = &small;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: dh holds 64 bytes, needs 512"));
  g = grads;
  g.dw = &small;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: dw holds 64 bytes, needs 2560"));
  g = grads;
  g.grad_scale = NAN;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: grad_scale = nan"));
  // outputs that share bytes with the inputs or one another
  g = grads;
  g.dh = &h;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: dh overlaps h"));
  g = grads;
  g.dw = &w;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: dw overlaps w"));
  Buffer both = ctx.buffer(4096);
  const Buffer dh_view = both.view(0, tokens * hidden * 4), dw_view = both.view(256, vocab * hidden * 4);
  g = grads;
  g.dh = &dh_view;
  g.dw = &dw_view;
  CHECK_THROWS_WITH(ce(shape, h, w, ids, g, scratch), ContainsSubstring("cross_entropy: dh overlaps dw"));
  const Buffer loss_view = both.view(0, 16), token_loss_view = both.view(0, tokens * 4);
  ops::CrossEntropyOptions token_on_loss;
  token_on_loss.token_loss = &token_loss_view;
  CHECK_THROWS_WITH(ops::cross_entropy(ctx, shape, h, w, ids, loss_view, grads, scratch, token_on_loss),
                    ContainsSubstring("cross_entropy: loss overlaps token_loss"));
  // scratch too small, or without the gradient buffers
  ops::LogitLossShape smaller = shape;
  smaller.tokens = 4;
  const ops::LogitLossScratch small_scratch = ops::make_logit_loss_scratch(ctx, smaller);
  CHECK_THROWS_WITH(ce(shape, h, w, ids, grads, small_scratch),
                    ContainsSubstring("cross_entropy: scratch.h16 holds 128 bytes, needs 256"));
  const ops::LogitLossScratch forward_scratch = ops::make_logit_loss_scratch(ctx, shape, false);
  CHECK_NOTHROW(ce(shape, h, w, ids, ops::LogitLossGrads{}, forward_scratch));
  CHECK_THROWS_WITH(ce(shape, h, w, ids, grads, forward_scratch),
                    ContainsSubstring("cross_entropy: scratch.dz16 is an empty buffer"));

  // the KL
  ops::LogitLossShape kl = shape;
  kl.teacher_hidden = 32;
  Buffer th = ctx.buffer(tokens * 32 * 4), tw = ctx.buffer(vocab * 32 * 4);
  const ops::LogitLossScratch kl_scratch = ops::make_logit_loss_scratch(ctx, kl);
  CHECK_NOTHROW(ops::kl_distill(ctx, kl, h, w, th, tw, loss, grads, kl_scratch));
  CHECK_THROWS_WITH(ops::kl_distill(ctx, shape, h, w, th, tw, loss, grads, kl_scratch),
                    ContainsSubstring("kl_distill: teacher_hidden = 0"));
  ops::LogitLossShape kl_bad = kl;
  kl_bad.teacher_hidden = 40;
  CHECK_THROWS_WITH(ops::kl_distill(ctx, kl_bad, h, w, th, tw, loss, grads, kl_scratch),
                    ContainsSubstring("kl_distill: teacher_hidden = 40 is not a multiple of 16"));
  CHECK_THROWS_WITH(ops::kl_distill(ctx, kl, h, w, th, h, loss, grads, kl_scratch),
                    ContainsSubstring("kl_distill: teacher_w holds 512 bytes, needs 5120"));
  CHECK_THROWS_WITH(ops::kl_distill(ctx, kl, h, w, th, tw, loss, grads, scratch),
                    ContainsSubstring("kl_distill: scratch.teacher_h16 is an empty buffer"));
  g = grads;
  g.dh = &th;
  CHECK_THROWS_WITH(ops::kl_distill(ctx, kl, h, w, th, tw, loss, g, kl_scratch),
                    ContainsSubstring("kl_distill: dh overlaps teacher_h"));
  for (float tau : {0.0f, -1.0f, INFINITY}) {
    ops::KlDistillOptions opt;
    opt.temperature = tau;
    CHECK_THROWS_WITH(ops::kl_distill(ctx, kl, h, w, th, tw, loss, grads, kl_scratch, opt),
                      ContainsSubstring("kl_distill: temperature = "));
  }
  ops::KlDistillOptions masked;
  masked.mask = &short_ids;
  CHECK_THROWS_WITH(ops::kl_distill(ctx, kl, h, w, th, tw, loss, grads, kl_scratch, masked),
                    ContainsSubstring("kl_distill: mask holds 28 bytes, needs 32"));
}

GPU_TEST("cross_entropy and kl_distill at the target vocabularies (151936 and 128256)", "[logit_loss][.][slow]") {
  // few tokens and a narrow head, so that lavapipe and the f64 reference
  // finish: the vocabulary's size and slicing (last slices of 4736 and 5376
  // rows at the default slice of 8192, and 1408 / 128 at 2048) are what is
  // tested, for the cross-entropy and the KL
  for (std::uint32_t vocab : {151936u, 128256u}) {
    const std::uint32_t tokens = 24, hidden = 32;
    const Head head = random_head(tokens, hidden, vocab, 121 + vocab, 1.0f, 1.0f);
    auto targets = random_targets(tokens, vocab, 122);
    targets[0] = vocab - 1;
    targets[1] = 0;
    const std::uint32_t counted = ops::count_loss_tokens(targets, vocab);
    const vkt::LossReference want = vkt::ce_reference(head.staged(), targets, vocab, 1.0 / counted);
    RunOptions o;
    o.grad_scale = inverse(counted);
    for (std::uint32_t slice : {0u, 2048u}) {
      INFO("vocab " << vocab << ", slice " << slice);
      check_against(run_loss(ctx, ce_shape(tokens, hidden, vocab, slice), head, nullptr, targets, o), want);
    }
    // the KL against a narrower teacher at τ = 2, every token counted
    const Head teacher = random_head(tokens, 16, vocab, 131 + vocab, 1.0f, 1.0f);
    const vkt::LossReference kl_want = vkt::kl_reference(head.staged(), teacher.staged(),
                                                         std::vector<bool>(tokens, true), vocab, 2.0, 1.0 / tokens);
    RunOptions ko;
    ko.temperature = 2.0f;
    ko.grad_scale = inverse(tokens);
    ops::LogitLossShape shape = ce_shape(tokens, hidden, vocab, 0);
    shape.teacher_hidden = 16;
    INFO("kl_distill, vocab " << vocab);
    check_against(run_loss(ctx, shape, head, &teacher, {}, ko), kl_want);
  }
}
