// BlrTrainer: a whole training step as one replayed Graph. Signs learn on a
// planted problem with every optimizer; a replayed graph equals separately
// recorded steps; one submit per step; a NaN step is skipped and reported;
// split steps (accumulate + apply) ≡ one step, and micro-batches add up.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>

#include "support/blr_ref.hpp"
#include "support/gpu.hpp"
#include "support/trainer_snapshot.hpp"
#include "vkblr/half.hpp"
#include "vkblr/profiler.hpp"
#include "vkblr/trainer.hpp"

using namespace vkblr;

namespace {

constexpr std::uint32_t kM = 64, kN = 96, kR = 32, kTok = 256;

// Flips a fraction of the signs of a host layer (seeded).
vkt::HostLayer with_noisy_signs(vkt::HostLayer L, double fraction, std::uint64_t seed) {
  vkt::Rng rng(seed);
  for (auto& p : L.paths) {
    for (auto& s : p.su) s = (static_cast<double>(rng.next() >> 11) / 9007199254740992.0 < fraction) ? -s : s;
    for (auto& s : p.sv) s = (static_cast<double>(rng.next() >> 11) / 9007199254740992.0 < fraction) ? -s : s;
  }
  return L;
}

// The planted layer's outputs on x, computed on the device.
Buffer planted_target(Context& ctx, const vkt::HostLayer& planted, const Buffer& x) {
  BlrLayer layer = make_blr_layer(ctx, planted.m, planted.n, planted.r, planted.init(), false);
  BlrScratch scratch(ctx, layer, kTok);
  Buffer y = ctx.buffer(std::size_t{kTok} * planted.m * 4);
  Recorder rec(ctx);
  blr_forward(rec, ctx, layer, scratch, x, y, kTok);
  rec.run();
  return y;
}

// Fraction of planted signs recovered, per rank column up to the joint flip
// of S_U[:,k] and S_V[:,k] (which leaves Ŵ unchanged).
double recovered(const vkt::HostLayer& planted, const BlrLayer& layer) {
  std::size_t right = 0, total = 0;
  for (std::size_t p = 0; p < planted.paths.size(); ++p) {
    const auto bu = layer.paths[p].bits_u.download<std::uint32_t>();
    const auto bv = layer.paths[p].bits_v.download<std::uint32_t>();
    const std::uint32_t words = kR / 32;
    for (std::uint32_t k = 0; k < kR; ++k) {
      std::size_t same = 0;
      auto bit = [&](const std::vector<std::uint32_t>& b, std::uint32_t row) {
        return ((b[row * words + k / 32] >> (k % 32)) & 1u) ? 1.0f : -1.0f;
      };
      for (std::uint32_t i = 0; i < kM; ++i) same += bit(bu, i) == planted.paths[p].su[i * kR + k];
      for (std::uint32_t j = 0; j < kN; ++j) same += bit(bv, j) == planted.paths[p].sv[j * kR + k];
      right += std::max(same, std::size_t{kM + kN} - same);
      total += kM + kN;
    }
  }
  return static_cast<double>(right) / static_cast<double>(total);
}

// A planted layer, Gaussian inputs in kBatches training batches and one
// held-out batch, and the planted outputs as targets.
constexpr int kBatches = 8;

struct Planted {
  vkt::HostLayer truth;
  std::vector<Buffer> x, target;
  Buffer x_eval, target_eval;
  double target_sq = 0, eval_sq = 0;
};

Planted make_planted(Context& ctx, std::uint64_t seed) {
  Planted p;
  p.truth = vkt::random_layer(kM, kN, kR, 1, seed);
  vkt::Rng rng(seed + 7);
  auto gaussian = [&] {
    std::vector<float> v(std::size_t{kTok} * kN);
    for (auto& e : v) e = static_cast<float>(rng.normal());
    return ctx.upload(v);
  };
  for (int b = 0; b < kBatches; ++b) {
    p.x.push_back(gaussian());
    p.target.push_back(planted_target(ctx, p.truth, p.x.back()));
  }
  p.x_eval = gaussian();
  p.target_eval = planted_target(ctx, p.truth, p.x_eval);
  for (float v : p.target[0].download<float>()) p.target_sq += double(v) * v;
  for (float v : p.target_eval.download<float>()) p.eval_sq += double(v) * v;
  return p;
}

// Scales frozen at the planted values: the signs alone must learn. The
// loss is the relative squared error of a batch; the trainer brings the
// sign gradients back to the scale of the raw squared error, where
// bop's threshold tau = 1 and Adam's eps = 10 sit between the gradients of
// wrong signs and the chance correlations of right ones (with eps that
// large, Adam's step grows with the gradient instead of being the same for
// every sign, which is what lets it tell them apart).
BlrTrainerConfig frozen_scales(SignOpt opt, double target_sq) {
  BlrTrainerConfig c;
  c.sign_init.opt = opt;
  c.sign_init.tau = opt == SignOpt::bop ? 1.0f : 0.25f;
  c.train_h = c.train_l = c.train_g = false;
  c.loss_norm = static_cast<float>(target_sq);
  c.sign_step.eps = 10.0f;
  c.sign_step.clamp = 1.0f;
  return c;
}

}  // namespace

GPU_TEST("signs learn a planted layer with every optimizer", "[trainer][sign]") {
  const SignOpt opt = GENERATE(SignOpt::adam, SignOpt::fact, SignOpt::bop);
  const Planted planted = make_planted(ctx, 11);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.02, 12);
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainer trainer(ctx, layer, kTok, frozen_scales(opt, planted.target_sq));
  for (int b = 0; b < kBatches; ++b) trainer.add_batch(planted.x[b], planted.target[b]);
  const std::size_t eval = trainer.add_eval_batch(planted.x_eval, planted.target_eval);
  const double before = trainer.eval(eval) / planted.eval_sq;
  const double recovered_before = recovered(planted.truth, layer);
  const int steps = 160;
  for (int s = 0; s < steps; ++s) {
    const float lr = 0.05f * 0.5f * (1.0f + std::cos(3.14159265f * static_cast<float>(s) / steps));  // cosine
    trainer.step(static_cast<std::size_t>(s % kBatches), lr, 0.0f);
  }
  const double after = trainer.eval(eval) / planted.eval_sq;
  const double recovered_after = recovered(planted.truth, layer);
  INFO(to_string(opt) << ": held-out relative squared error " << before << " -> " << after << ", signs "
                      << recovered_before << " -> " << recovered_after);
  CHECK(recovered_before < 0.99);  // the test starts where it can fail
  CHECK(recovered_after >= 0.99);
  CHECK(after < 1e-2);
  CHECK(trainer.steps() == static_cast<std::uint32_t>(steps));
  CHECK(trainer.skipped() == 0);
}

GPU_TEST("a replayed step graph equals steps recorded anew, one submit per step", "[trainer][recorder]") {
  const Planted planted = make_planted(ctx, 21);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.05, 22);
  auto run = [&](bool rerecord, std::uint64_t* submits) {
    BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
    BlrTrainerConfig c = frozen_scales(SignOpt::fact, planted.target_sq);
    c.train_h = c.train_l = c.train_g = true;  // Adam on the scales too
    c.sign_step.flip_budget = 0.01f;
    c.record_every_step = rerecord;
    BlrTrainer trainer(ctx, layer, kTok, c);
    for (int b = 0; b < 3; ++b) trainer.add_batch(planted.x[b], planted.target[b]);
    const std::uint64_t before = ctx.profiler().counters().submits;
    for (int s = 0; s < 10; ++s) trainer.step(static_cast<std::size_t>(s % 3), 0.02f, 1e-3f);
    *submits = ctx.profiler().counters().submits - before;
    return vkt::trainer_snapshot(layer, trainer);
  };
  std::uint64_t replay_submits = 0, rerecord_submits = 0;
  const auto replayed = run(false, &replay_submits);
  const auto rerecorded = run(true, &rerecord_submits);
  CHECK(replay_submits == 10);  // one submit per step
  CHECK(vkt::count_bit_diffs(replayed, rerecorded) == 0);
}

GPU_TEST("f16 batches train bit for bit as f32 batches of the same values", "[trainer]") {
  const Planted planted = make_planted(ctx, 41);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.05, 42);
  // the inputs rounded to f16 once: the f32 batches hold exactly the values
  // the f16 batches widen to
  std::vector<Buffer> x16, x32;
  for (int b = 0; b < 2; ++b) {
    const std::vector<std::uint16_t> halves = to_f16(planted.x[b].download<float>());
    x16.push_back(ctx.upload(halves));
    x32.push_back(ctx.upload(from_f16(halves)));
  }
  auto run = [&](BatchInput input) {
    BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
    BlrTrainerConfig c = frozen_scales(SignOpt::fact, planted.target_sq);
    c.train_h = c.train_l = c.train_g = true;
    BlrTrainer trainer(ctx, layer, kTok, c);
    const std::vector<Buffer>& x = input == BatchInput::f16 ? x16 : x32;
    for (int b = 0; b < 2; ++b) trainer.add_batch(x[b], planted.target[b], input);
    const std::size_t eval = trainer.add_eval_batch(x[1], planted.target[1], input);
    for (int s = 0; s < 4; ++s) trainer.step(static_cast<std::size_t>(s % 2), 0.02f, 1e-3f);
    std::vector<std::uint32_t> snapshot = vkt::trainer_snapshot(layer, trainer);
    const double eval_sq = trainer.eval(eval);
    snapshot.push_back(static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(eval_sq)));
    return snapshot;
  };
  CHECK(vkt::count_bit_diffs(run(BatchInput::f16), run(BatchInput::f32)) == 0);
  // an f16 batch too short for the layer is refused
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainer trainer(ctx, layer, kTok, frozen_scales(SignOpt::fact, planted.target_sq));
  const Buffer short_x = ctx.buffer(std::uint64_t{kTok} * kN * 2 - 4);
  CHECK_THROWS_WITH(trainer.add_batch(short_x, planted.target[0], BatchInput::f16),
                    Catch::Matchers::ContainsSubstring("x (f16)"));
}

GPU_TEST("path_lanes 1, 2 and 3 train a three-path layer to the same bits; 0 is refused", "[trainer]") {
  const vkt::HostLayer start = vkt::random_layer(kM, kN, kR, 3, 32);
  const Planted planted = make_planted(ctx, 31);
  auto run = [&](std::uint32_t lanes) {
    BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
    BlrTrainerConfig c = frozen_scales(SignOpt::fact, planted.target_sq);
    c.train_h = c.train_l = c.train_g = true;
    c.path_lanes = lanes;
    BlrTrainer trainer(ctx, layer, kTok, c);
    trainer.add_batch(planted.x[0], planted.target[0]);
    for (int s = 0; s < 3; ++s) trainer.step(0, 0.02f, 1e-3f);
    return vkt::trainer_snapshot(layer, trainer);
  };
  const auto one = run(1);
  CHECK(vkt::count_bit_diffs(run(2), one) == 0);
  CHECK(vkt::count_bit_diffs(run(3), one) == 0);
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainerConfig bad;
  bad.path_lanes = 0;
  CHECK_THROWS_WITH(BlrTrainer(ctx, layer, kTok, bad), Catch::Matchers::ContainsSubstring("lanes = 0"));
}

GPU_TEST("a step with NaN in its gradients is skipped, reported, and changes nothing", "[trainer]") {
  const Planted planted = make_planted(ctx, 31);
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, with_noisy_signs(planted.truth, 0.05, 32).init(), false);
  BlrTrainerConfig c = frozen_scales(SignOpt::adam, planted.target_sq);
  c.train_h = c.train_l = c.train_g = true;
  BlrTrainer trainer(ctx, layer, kTok, c);
  const std::size_t good = trainer.add_batch(planted.x[0], planted.target[0]);
  auto x = planted.x[1].download<float>();
  x[5 * kN + 7] = std::numeric_limits<float>::quiet_NaN();
  Buffer bad_x = ctx.upload(x);
  const std::size_t bad = trainer.add_batch(bad_x, planted.target[1]);
  CHECK(trainer.step(good, 0.02f, 1e-3f).applied);
  auto snapshot = [&] { return vkt::trainer_snapshot(layer, trainer); };
  const auto before = snapshot();
  const StepResult r = trainer.step(bad, 0.02f, 1e-3f);
  CHECK_FALSE(r.applied);
  CHECK(r.step == 2);
  CHECK(trainer.steps() == 1);
  CHECK(trainer.skipped() == 1);
  CHECK(vkt::count_bit_diffs(snapshot(), before) == 0);
  // the next good step takes the step number the skipped one did not use
  const StepResult next = trainer.step(good, 0.02f, 1e-3f);
  CHECK(next.applied);
  CHECK(next.step == 2);
}

GPU_TEST("deferred sign steps: one micro-batch ≡ immediate, k micro-batches ≈ one batch", "[trainer][sign]") {
  const std::uint32_t ntok = 128, half = 64;
  const auto host = vkt::random_layer(kM, kN, kR, 1, 41);
  const auto x = vkt::random_floats(std::size_t{ntok} * kN, 42, 1.0f);
  const auto dy = vkt::random_floats(std::size_t{ntok} * kM, 43, 1e-2f);
  Buffer bx = ctx.upload(x), bdy = ctx.upload(dy);
  SignInit init;
  init.opt = SignOpt::adam;
  SignStep step;
  step.lr = 0.3f;  // large enough that some signs flip
  // immediate: G overwritten, then the step
  BlrLayer a = make_blr_layer(ctx, kM, kN, kR, host.init(), true);
  SignMatrix au(ctx, a.paths[0].bits_u, kM, kR, init, 0), av(ctx, a.paths[0].bits_v, kN, kR, init, 1);
  // deferred: G accumulated into the kept buffers (zeroed), then the step
  init.deferred = true;
  BlrLayer b = make_blr_layer(ctx, kM, kN, kR, host.init(), false);
  SignMatrix bu(ctx, b.paths[0].bits_u, kM, kR, init, 0), bv(ctx, b.paths[0].bits_v, kN, kR, init, 1);
  const BlrSignGrads b_kept[] = {{&bu.kept_gradient(), &bv.kept_gradient()}};
  BlrScratch sa(ctx, a, ntok), sb(ctx, b, ntok);
  Buffer ya = ctx.buffer(std::size_t{ntok} * kM * 4), dxa = ctx.buffer(std::size_t{ntok} * kN * 4);
  {
    Recorder rec(ctx);
    blr_forward(rec, ctx, a, sa, bx, ya, ntok);
    blr_backward(rec, ctx, a, sa, bx, bdy, dxa, ntok);
    au.record_step(rec, ctx, a.paths[0].g_u, step);
    av.record_step(rec, ctx, a.paths[0].g_v, step);
    blr_forward(rec, ctx, b, sb, bx, ya, ntok);
    BlrBackward o;
    o.accumulate_sign_grads = true;
    blr_backward(rec, ctx, b, sb, bx, bdy, dxa, ntok, b_kept, o);
    bu.record_step(rec, ctx, bu.kept_gradient(), step);
    bv.record_step(rec, ctx, bv.kept_gradient(), step);
    rec.run();
  }
  CHECK(au.telemetry(ctx).flips > 0);
  for (auto [p, q] : {std::pair{&a.paths[0].bits_u, &b.paths[0].bits_u}, std::pair{&a.paths[0].bits_v, &b.paths[0].bits_v}}) {
    CHECK(vkt::count_bit_diffs(p->download<std::uint32_t>(), q->download<std::uint32_t>()) == 0);
  }
  // the same optimizer state (the deferred matrix also lists its kept gradient)
  auto sb_state = bu.state();
  for (auto& [name, buffer] : au.state()) {
    INFO(name);
    const auto other = std::find_if(sb_state.begin(), sb_state.end(), [&](const auto& e) { return e.first == name; });
    REQUIRE(other != sb_state.end());
    CHECK(vkt::count_bit_diffs(buffer->download<std::uint32_t>(), other->second->download<std::uint32_t>()) == 0);
  }

  // two micro-batches of 64 tokens accumulate what one batch of 128 forms
  BlrLayer c = make_blr_layer(ctx, kM, kN, kR, host.init(), false);
  SignMatrix cu(ctx, c.paths[0].bits_u, kM, kR, init, 0), cv(ctx, c.paths[0].bits_v, kN, kR, init, 1);
  const BlrSignGrads c_kept[] = {{&cu.kept_gradient(), &cv.kept_gradient()}};
  BlrScratch sc(ctx, c, half);
  Buffer dxc = ctx.buffer(std::size_t{half} * kN * 4), yc = ctx.buffer(std::size_t{half} * kM * 4);
  {
    Recorder rec(ctx);
    BlrBackward o;
    o.accumulate_sign_grads = true;
    for (std::uint32_t part = 0; part < 2; ++part) {
      const Buffer xs = bx.view(std::uint64_t{part} * half * kN * 4, std::uint64_t{half} * kN * 4);
      const Buffer dys = bdy.view(std::uint64_t{part} * half * kM * 4, std::uint64_t{half} * kM * 4);
      blr_forward(rec, ctx, c, sc, xs, yc, half);
      blr_backward(rec, ctx, c, sc, xs, dys, dxc, half, c_kept, o);
    }
    rec.run();
  }
  const auto want = vkt::host_blr(host, x, dy, ntok);
  // f16 operands and f32 sums in another order: the tolerance of the sign
  // gradients against f64 (3e-3) holds for both
  CHECK(vkt::rel_error(cu.kept_gradient().download<float>(), want.paths[0].gu) < 3e-3);
  CHECK(vkt::rel_error(cv.kept_gradient().download<float>(), want.paths[0].gv) < 3e-3);
}

GPU_TEST("split steps: accumulate + apply ≡ one step; micro-batches add up to the sum of their blocks", "[trainer]") {
  const Planted planted = make_planted(ctx, 51);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.05, 52);
  BlrTrainerConfig c = frozen_scales(SignOpt::adam, planted.target_sq);
  c.train_h = c.train_l = c.train_g = true;
  c.sign_step.flip_budget = 0.01f;
  // one graph per step vs the split halves (and step() of a split trainer)
  BlrLayer one = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrLayer two = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainer whole(ctx, one, kTok, c);
  c.split = true;
  BlrTrainer halves(ctx, two, kTok, c);
  for (int b = 0; b < 2; ++b) {
    whole.add_batch(planted.x[b], planted.target[b]);
    halves.add_batch(planted.x[b], planted.target[b]);
  }
  for (int s = 0; s < 4; ++s) {
    const StepResult want = whole.step(static_cast<std::size_t>(s % 2), 0.02f, 1e-3f);
    StepResult got;
    if (s % 2 == 0) {
      const double sq = halves.accumulate(static_cast<std::size_t>(s % 2));
      CHECK(sq == want.sq_error);
      got = halves.apply(0.02f, 1e-3f);
    } else {
      got = halves.step(static_cast<std::size_t>(s % 2), 0.02f, 1e-3f);
    }
    CHECK(got.applied == want.applied);
    CHECK(got.step == want.step);
    CHECK(got.sq_error == want.sq_error);
    CHECK(vkt::count_bit_diffs(vkt::trainer_snapshot(one, whole), vkt::trainer_snapshot(two, halves)) == 0);
  }
  CHECK_THROWS_WITH(whole.accumulate(0), Catch::Matchers::ContainsSubstring("split"));
  CHECK_THROWS_WITH(halves.apply(0.02f, 1e-3f), Catch::Matchers::ContainsSubstring("no accumulate()"));

  // two micro-batches accumulated on the device: the block is (0 + block of
  // the first) + block of the second, in f32, bit for bit — the order the
  // MPI all-reduce sums the ranks' blocks in
  std::vector<std::vector<float>> blocks;
  for (int b = 0; b < 2; ++b) {
    BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
    BlrTrainer t(ctx, layer, kTok, c);
    t.add_batch(planted.x[b], planted.target[b]);
    t.accumulate(0);
    const GradientBlock& g = t.gradient_block();
    const auto* v = static_cast<const float*>(g.buffer->mapped());
    blocks.emplace_back(v, v + g.floats);
  }
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainer t(ctx, layer, kTok, c);
  for (int b = 0; b < 2; ++b) t.add_batch(planted.x[b], planted.target[b]);
  const double sq = t.accumulate(0) + t.accumulate(1);
  const GradientBlock& g = t.gradient_block();
  REQUIRE(g.floats == blocks[0].size());
  CHECK(g.loss == 0);
  CHECK(g.scales == GradientBlock::kLossPartials);
  CHECK(g.signs.size() == 2);
  CHECK(g.signs[0] == g.scales + layer.scale_count);
  CHECK(g.signs[1] == g.signs[0] + kM * kR);
  CHECK(g.floats == g.signs[1] + kN * kR);
  std::vector<float> sum(g.floats);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = (0.0f + blocks[0][i]) + blocks[1][i];
  const auto* got = static_cast<const float*>(g.buffer->mapped());
  CHECK(vkt::count_bit_diffs(std::vector<float>(got, got + g.floats), sum) == 0);
  const StepResult r = t.apply(0.02f, 1e-3f);
  CHECK(std::abs(r.sq_error - sq) <= 1e-6 * sq);  // f32 partials summed, then f64
}

GPU_TEST("train_signs = false: the bits stay, the scales learn, no sign work is recorded", "[trainer]") {
  const Planted planted = make_planted(ctx, 41);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.0, 42);
  auto perturbed = start.init();
  for (auto& p : perturbed) {
    for (auto& v : p.l) v *= 1.3f;  // wrong ℓ: something for the scales to learn
  }
  BlrLayer frozen = make_blr_layer(ctx, kM, kN, kR, perturbed, false);
  BlrLayer trained = make_blr_layer(ctx, kM, kN, kR, perturbed, false);
  BlrTrainerConfig c = frozen_scales(SignOpt::fact, planted.target_sq);
  c.train_h = c.train_l = c.train_g = true;
  // a trainer with signs on the same layer first, gone before the frozen
  // one steps: nothing of it may stay in the layer
  auto with_signs = std::make_unique<BlrTrainer>(ctx, frozen, kTok, c);
  c.train_signs = false;
  Profiler& prof = ctx.profiler();
  const auto dispatches_before = prof.counters().dispatches;
  BlrTrainer trainer(ctx, frozen, kTok, c);
  with_signs.reset();
  const std::size_t b = trainer.add_batch(planted.x[0], planted.target[0]);
  const auto frozen_dispatches = prof.counters().dispatches - dispatches_before;
  c.train_signs = true;
  BlrTrainer full(ctx, trained, kTok, c);
  const auto before_full = prof.counters().dispatches;
  full.add_batch(planted.x[0], planted.target[0]);
  const auto full_dispatches = prof.counters().dispatches - before_full;
  CHECK(trainer.signs().empty());
  CHECK(frozen_dispatches < full_dispatches);

  const auto bits_u = frozen.paths[0].bits_u.download<std::uint32_t>();
  const auto bits_v = frozen.paths[0].bits_v.download<std::uint32_t>();
  const std::size_t eval = trainer.add_eval_batch(planted.x_eval, planted.target_eval);
  const double before = trainer.eval(eval);
  for (int s = 0; s < 30; ++s) CHECK(trainer.step(b, 0.5f, 1e-2f).applied);
  const double after = trainer.eval(eval);
  INFO("held-out squared error " << before << " -> " << after);
  CHECK(after < 0.5 * before);
  CHECK(vkt::count_bit_diffs(frozen.paths[0].bits_u.download<std::uint32_t>(), bits_u) == 0);
  CHECK(vkt::count_bit_diffs(frozen.paths[0].bits_v.download<std::uint32_t>(), bits_v) == 0);
  CHECK(trainer.state().size() == 2);  // Adam's two moments only
}

GPU_TEST("the trainer does not change the layer it borrows; the layer outlives it unchanged", "[trainer]") {
  // a layer with sign-gradient buffers of its own: the trainer forms G in
  // its sign matrices' kept gradients, handed to blr_backward, and leaves
  // every buffer of the layer object as it was (none is pointed elsewhere
  // or dropped, with or without sign training)
  const Planted planted = make_planted(ctx, 61);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.05, 62);
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), true);
  auto handles = [&] {
    std::vector<std::uint64_t> out{layer.scales.vk_handle(), layer.scale_grads.vk_handle()};
    for (const BlrPath& p : layer.paths) {
      for (const Buffer* b : {&p.bits_u, &p.bits_v, &p.h, &p.l, &p.g, &p.dh, &p.dl, &p.dg, &p.g_u, &p.g_v}) {
        out.insert(out.end(), {b->vk_handle(), b->offset(), b->size(), static_cast<std::uint64_t>(b->is_view())});
      }
    }
    return out;
  };
  const auto before = handles();
  const std::vector<float> marker(std::size_t{kM} * kR, 0.25f);
  layer.paths[0].g_u.upload(marker);
  for (const bool train_signs : {true, false}) {
    BlrTrainerConfig c = frozen_scales(SignOpt::adam, planted.target_sq);
    c.train_h = c.train_l = c.train_g = true;
    c.train_signs = train_signs;
    BlrTrainer trainer(ctx, layer, kTok, c);
    trainer.add_batch(planted.x[0], planted.target[0]);
    CHECK(trainer.step(0, 0.02f, 1e-3f).applied);
    INFO("train_signs " << train_signs);
    CHECK(handles() == before);
  }
  // the layer's own G_U was neither used nor written
  CHECK(layer.paths[0].g_u.download<float>() == marker);
  // and the layer works on its own after the trainers are gone
  BlrScratch scratch(ctx, layer, kTok);
  Buffer y = ctx.buffer(std::uint64_t{kTok} * kM * 4), dx = ctx.buffer(std::uint64_t{kTok} * kN * 4);
  Buffer dy = ctx.upload(std::vector<float>(std::size_t{kTok} * kM, 1e-2f));
  Recorder rec(ctx);
  blr_forward(rec, ctx, layer, scratch, planted.x[0], y, kTok);
  blr_backward(rec, ctx, layer, scratch, planted.x[0], dy, dx, kTok);
  rec.run();
  CHECK(layer.paths[0].g_u.download<float>() != marker);
}

GPU_TEST("blr_backward refuses sign-gradient destinations that do not fit the layer", "[trainer][blr][errors]") {
  const vkt::HostLayer host = vkt::random_layer(kM, kN, kR, 2, 71);
  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, host.init(), false);
  BlrScratch scratch(ctx, layer, 32);
  Buffer x = ctx.buffer(32 * kN * 4), dy = ctx.buffer(32 * kM * 4), dx = ctx.buffer(32 * kN * 4);
  Buffer gu = ctx.buffer(kM * kR * 4), gv = ctx.buffer(kN * kR * 4), small = ctx.buffer(kN * kR * 4 - 4);
  Recorder rec(ctx);
  using Catch::Matchers::ContainsSubstring;
  const BlrSignGrads one[] = {{&gu, &gv}};
  CHECK_THROWS_WITH(blr_backward(rec, ctx, layer, scratch, x, dy, dx, 32, one),
                    ContainsSubstring("blr_backward: 1 sign-gradient destinations for 2 paths"));
  const BlrSignGrads short_v[] = {{&gu, &gv}, {&gu, &small}};
  CHECK_THROWS_WITH(blr_backward(rec, ctx, layer, scratch, x, dy, dx, 32, short_v),
                    ContainsSubstring("blr_backward: path 1 sign gradient g_v holds 12284 bytes, needs 12288"));
  const BlrSignGrads missing[] = {{&gu, &gv}, {nullptr, &gv}};
  CHECK_THROWS_WITH(blr_backward(rec, ctx, layer, scratch, x, dy, dx, 32, missing),
                    ContainsSubstring("blr_backward: path 1 sign gradient g_u holds 0 bytes"));
  BlrBackward no_signs;
  no_signs.sign_grads = false;  // then the destinations are not read
  CHECK_NOTHROW(blr_backward(rec, ctx, layer, scratch, x, dy, dx, 32, {}, no_signs));
}

GPU_TEST("the trainer scales the sign gradients by loss_norm itself; a grad_scale of the user's is refused",
         "[trainer][sign]") {
  // loss_norm L and 4L with gscale 1024 and 4096: dy is 4× smaller and its
  // f16 staging (dy⊙h·gscale) the same, so every gradient is exactly 4×
  // smaller; with the scales frozen, the sign steps see G·loss_norm, the
  // same bits, only if the trainer multiplies G by loss_norm (without it the
  // sign moments would differ by 4)
  const Planted planted = make_planted(ctx, 81);
  const vkt::HostLayer start = with_noisy_signs(planted.truth, 0.05, 82);
  const float norm = std::exp2(std::round(std::log2(static_cast<float>(planted.target_sq))));
  auto run = [&](float loss_norm, float gscale) {
    BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
    BlrTrainerConfig c = frozen_scales(SignOpt::adam, planted.target_sq);
    c.loss_norm = loss_norm;
    c.gscale = gscale;
    c.sign_step.eps = 1e-8f;  // steps of about lr: signs flip within the four steps
    c.sign_step.flip_budget = 0.01f;
    BlrTrainer trainer(ctx, layer, kTok, c);
    for (int b = 0; b < 2; ++b) trainer.add_batch(planted.x[b], planted.target[b]);
    double sq = 0;
    for (int s = 0; s < 4; ++s) sq += trainer.step(static_cast<std::size_t>(s % 2), 0.2f, 0.0f).sq_error;
    std::vector<std::uint32_t> snapshot = vkt::trainer_snapshot(layer, trainer);
    snapshot.push_back(static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(sq)));
    std::uint64_t flips = 0;
    for (const SignMatrix& sm : trainer.signs()) flips += sm.telemetry(ctx).total_flips;
    return std::pair{snapshot, flips};
  };
  const auto [one, flips] = run(norm, 1024.0f);
  const auto [four, flips4] = run(4.0f * norm, 4096.0f);
  CHECK(flips > 0);  // the signs moved
  CHECK(flips4 == flips);
  CHECK(vkt::count_bit_diffs(four, one) == 0);

  BlrLayer layer = make_blr_layer(ctx, kM, kN, kR, start.init(), false);
  BlrTrainerConfig c = frozen_scales(SignOpt::adam, planted.target_sq);
  c.sign_step.grad_scale = c.loss_norm;  // what users had to write: now the trainer's
  CHECK_THROWS_WITH(BlrTrainer(ctx, layer, kTok, c),
                    Catch::Matchers::ContainsSubstring("BlrTrainer: sign_step.grad_scale = ") &&
                        Catch::Matchers::ContainsSubstring("leave it at 1"));
  c.sign_step.grad_scale = 2.0f;
  CHECK_THROWS_WITH(BlrTrainer(ctx, layer, kTok, c),
                    Catch::Matchers::ContainsSubstring("sign_step.grad_scale = 2 "));
}
