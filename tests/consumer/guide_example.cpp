// guide_example.cpp — the example of docs/guide.md, which includes this file
// verbatim (the test guide_example_in_sync keeps the two equal).
//
// A "teacher" blr layer with random signs and scales makes the targets; a
// "student" of the same shape, random too, learns them with BlrTrainer (one
// replayed graph per step), and the loss falls. Exit code 0 when the
// held-out error ends below half of where it started; 1 when it does not,
// on a vkblr::Error, or (with --validation) on any message of the Vulkan
// validation layer; 2 on a bad argument.
//
//   guide_example [--validation]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include <vkblr/vkblr.hpp>

namespace {

// out × in, rank per path, paths; tokens per batch, batches, steps
constexpr std::uint32_t kM = 64, kN = 96, kR = 32, kPaths = 2;
constexpr std::uint32_t kTok = 256, kBatches = 4, kSteps = 150;

// Host values of a random layer: signs as blr.hpp's bitmaps (u32
// [rows][r/32]; bit j of word w is rank 32w + j, 1 = +1), positive scales.
std::vector<vkblr::BlrPathInit> random_layer(std::mt19937& rng) {
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> scale(0.5f, 1.5f);
  std::vector<vkblr::BlrPathInit> paths(kPaths);
  for (vkblr::BlrPathInit& p : paths) {
    p.bits_u.resize(kM * kR / 32);
    p.bits_v.resize(kN * kR / 32);
    for (std::uint32_t& w : p.bits_u) w = bits(rng);
    for (std::uint32_t& w : p.bits_v) w = bits(rng);
    for (std::uint32_t i = 0; i < kM; ++i) p.h.push_back(0.05f * scale(rng));
    for (std::uint32_t k = 0; k < kR; ++k) p.l.push_back(scale(rng));
    for (std::uint32_t j = 0; j < kN; ++j) p.g.push_back(scale(rng));
  }
  return paths;
}

std::vector<float> gaussian(std::mt19937& rng, std::size_t count) {
  std::normal_distribution<float> normal;
  std::vector<float> v(count);
  for (float& e : v) e = normal(rng);
  return v;
}

// Learning rate of step s: linear warm-up over 10 steps, then cosine decay.
float schedule(float peak, std::uint32_t s) {
  if (s < 10) return peak * static_cast<float>(s + 1) / 10.0f;
  return peak * 0.5f * (1.0f + std::cos(3.14159265f * static_cast<float>(s - 10) / (kSteps - 10)));
}

int run(bool validation) {
  vkblr::ContextOptions options;
  options.validation = validation;  // the Khronos layer; messages are kept
  vkblr::Context ctx(options);
  std::printf("device: %s\n", ctx.caps().device_name.c_str());
  std::mt19937 rng(7);

  // The teacher, and its outputs on kBatches training batches and one
  // held-out batch: x f32 [kTok][kN], target f32 [kTok][kM]. The vectors
  // are sized first: the trainer keeps the buffers' addresses.
  const vkblr::BlrLayer teacher = vkblr::make_blr_layer(ctx, kM, kN, kR, random_layer(rng), false);
  vkblr::BlrScratch scratch(ctx, teacher, kTok);  // its a and c, and transients for kTok tokens
  std::vector<vkblr::Buffer> x(kBatches + 1), target(kBatches + 1);
  vkblr::Recorder rec(ctx);
  for (std::uint32_t b = 0; b <= kBatches; ++b) {
    x[b] = ctx.upload(gaussian(rng, std::size_t{kTok} * kN), "x");
    target[b] = ctx.buffer(std::uint64_t{kTok} * kM * 4, "target");
    vkblr::blr_forward(rec, ctx, teacher, scratch, x[b], target[b], kTok);
    rec.run();  // one submit; waits
  }
  auto sq_norm = [](const vkblr::Buffer& b) {  // ‖b‖², on the host
    double s = 0;
    for (float v : b.download<float>()) s += double{v} * v;
    return s;
  };
  const double target_sq = sq_norm(target[0]);  // a batch's ‖target‖²: the loss normaliser
  const double held_out_sq = sq_norm(target[kBatches]);

  // The student: random signs and scales, all of them trained.
  vkblr::BlrLayer student = vkblr::make_blr_layer(ctx, kM, kN, kR, random_layer(rng), false);
  vkblr::BlrTrainerConfig config;
  config.sign_init.opt = vkblr::SignOpt::fact;       // Adafactor-style latents
  config.loss_norm = static_cast<float>(target_sq);  // loss = ½‖y − target‖² / ‖target‖²
  config.sign_step.flip_budget = 0.02f;              // at most 2% of each matrix's signs per step
  vkblr::BlrTrainer trainer(ctx, student, kTok, config);
  for (std::uint32_t b = 0; b < kBatches; ++b) trainer.add_batch(x[b], target[b]);
  const std::size_t held_out = trainer.add_eval_batch(x[kBatches], target[kBatches]);

  // ‖y − target‖ / ‖target‖ on the held-out batch (one submit)
  auto held_out_error = [&] { return std::sqrt(trainer.eval(held_out) / held_out_sq); };
  const double before = held_out_error();
  std::printf("step    0  held-out error %.4f\n", before);
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    // one submit; r.loss is the batch's loss before this step's update
    const vkblr::StepResult r = trainer.step(s % kBatches, schedule(0.05f, s), schedule(0.02f, s));
    if (!r.applied) std::printf("step %4u  skipped: NaN or Inf in the gradients\n", s + 1);
    if ((s + 1) % 30 == 0) {
      std::printf("step %4u  loss %.5f  held-out error %.4f\n", s + 1, r.loss, held_out_error());
    }
  }
  const double after = held_out_error();
  std::uint64_t flips = 0;
  for (const vkblr::SignMatrix& sm : trainer.signs()) {
    const vkblr::SignTelemetry t = sm.telemetry(ctx);  // reads counters back: waits
    flips += t.total_flips;  // every flip since init, the last step's included
  }
  std::printf("held-out error %.4f -> %.4f; %llu sign flips; %u steps, %u skipped\n", before, after,
              static_cast<unsigned long long>(flips), trainer.steps(), trainer.skipped());

  int rc = after < 0.5 * before ? 0 : 1;
  if (rc != 0) std::printf("FAILED: the error did not fall below half of %.4f\n", before);
  for (const std::string& m : ctx.validation_messages()) {
    std::printf("%s\n", m.c_str());
    rc = 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  const bool validation = argc == 2 && std::strcmp(argv[1], "--validation") == 0;
  if (argc > 2 || (argc == 2 && !validation)) {
    std::fprintf(stderr, "usage: %s [--validation]\n", argv[0]);
    return 2;
  }
  try {
    return run(validation);  // the Context is gone before main returns
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "guide_example: %s\n", e.what());
    return 1;
  }
}
