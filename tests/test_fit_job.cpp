// vkblr-fit end to end on the device: a resumed run equals an uninterrupted
// one bit for bit; a planted layer is recovered close to its noise floor;
// inputs that do not fit are refused with a message.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/checkpoint.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

GPU_TEST("vkblr-fit: a resumed run equals an uninterrupted one bit for bit", "[fit][gpu]") {
  vkt::TempDir dir;
  const fit::FitOptions whole = vkt::small_fit_run(dir.file("whole"));
  fit::run_fit(ctx, whole);
  fit::FitOptions first = vkt::small_fit_run(dir.file("first"));
  first.checkpoint_every = 6;  // <out>.ckpt after step 6
  first.steps = 12;
  fit::run_fit(ctx, first);
  fit::FitOptions resumed = vkt::small_fit_run(dir.file("resumed"));
  resumed.resume = dir.file("first.ckpt");
  fit::run_fit(ctx, resumed);
  const fit::BlrResult a = fit::read_blr_result(dir.file("whole.safetensors"));
  const fit::BlrResult b = fit::read_blr_result(dir.file("resumed.safetensors"));
  vkt::check_same_layer(a, b);
  // a checkpoint of another configuration is refused
  fit::FitOptions other = vkt::small_fit_run(dir.file("other"));
  other.rank = 64;
  other.resume = dir.file("first.ckpt");
  CHECK_THROWS_AS(fit::run_fit(ctx, other), Error);
}

GPU_TEST("vkblr-fit refuses inputs that do not fit, with a message", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  const fit::Matrix w = fit::synthetic_weight({.m = 64, .n = 96, .seed = 3});
  vkt::write_matrix_file(dir.file("w.safetensors"), w);
  fit::Matrix x = fit::synthetic_activations({.tokens = 256, .n = 80, .seed = 4});
  vkt::write_matrix_file(dir.file("x80.safetensors"), x);
  auto message = [&](fit::FitOptions o) {
    return vkt::error_of([&] { fit::run_fit(ctx, o); });
  };
  fit::FitOptions o = vkt::small_fit_run(dir.file("out"));
  o.weight_path = dir.file("w.safetensors");
  o.activations_path = dir.file("x80.safetensors");
  CHECK(message(o).find("80 columns but W has n = 96") != std::string::npos);
  o.activations_path = dir.file("missing.npy");
  CHECK(message(o).find("does not exist") != std::string::npos);
  o.activations_path.clear();
  o.tensor = "nope";
  CHECK(message(o).find("nope") != std::string::npos);
  fit::Matrix bad = w;
  bad.values[7] = std::nanf("");
  vkt::write_matrix_file(dir.file("nan.safetensors"), bad);
  o.weight_path = dir.file("nan.safetensors");
  o.tensor.clear();
  CHECK(message(o).find("NaN") != std::string::npos);
  o.weight_path = dir.file("w.safetensors");
  o.rank = 48;
  CHECK(message(o).find("48") != std::string::npos);
  o.rank = 0;
  o.bpw = 0.01;
  CHECK(message(o).find("bpw") != std::string::npos);
  o.bpw = 1.0;
  o.tokens = 100;
  CHECK(message(o).find("--tokens 100") != std::string::npos);
}

// Issue 7's acceptance test. From the Dual-SVID init the sign optimizers do
// not find the planted signs (2026-12-02 on lavapipe: init 0.78, trained
// 0.46, noise floor 0.018), nor does the host refit (4 sweeps: trained 0.33,
// a local minimum with ~2/3 of the planted signs). The subspace init
// (subspace_init.hpp) recovers every planted sign: init 0.018, trained 0.017.
GPU_TEST("vkblr-fit recovers a planted layer near its noise floor", "[fit][gpu][planted]") {
  // W = a blr layer (1 path, rank 32) + small Gaussian noise; fit with the
  // same shape: the held-out output error must end within 2× of the error
  // of the planted layer itself (the noise floor).
  vkt::TempDir dir;
  const std::uint32_t m = 128, n = 96, r = 32;
  fit::Rng rng(7);
  std::vector<float> su(std::size_t{m} * r), sv(std::size_t{n} * r);
  for (auto& v : su) v = rng.uniform_open() < 0.5 ? -1.0f : 1.0f;
  for (auto& v : sv) v = rng.uniform_open() < 0.5 ? -1.0f : 1.0f;
  std::vector<float> h(m), l(r), g(n);
  for (auto& v : h) v = 0.5f + static_cast<float>(rng.uniform_open());
  for (auto& v : l) v = 0.5f + static_cast<float>(rng.uniform_open());
  for (auto& v : g) v = 0.5f + static_cast<float>(rng.uniform_open());
  fit::Matrix w(m, n), planted(m, n);
  double noise_sq = 0, signal_sq = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::uint32_t k = 0; k < r; ++k) s += double(su[i * r + k]) * l[k] * sv[j * r + k];
      planted(i, j) = static_cast<float>(h[i] * s * g[j]);
      const double e = 0.02 * std::sqrt(double(r)) * rng.normal();
      w(i, j) = static_cast<float>(planted(i, j) + e);
      noise_sq += e * e;
      signal_sq += double(w(i, j)) * w(i, j);
    }
  }
  vkt::write_matrix_file(dir.file("planted.safetensors"), w);
  fit::FitOptions o = vkt::small_fit_run(dir.file("fit"));
  o.weight_path = dir.file("planted.safetensors");
  o.paths = 1;
  o.rank = r;
  o.steps = 300;
  o.batch = 128;
  o.tokens = 1024;
  o.held_out = 256;
  o.eval_every = 50;
  o.scale_dtype = fit::ScaleDtype::f32;
  o.activation_decay = 0;  // Gaussian inputs: the floor below is the weight error
  // the subspace init finds the planted sign columns (subspace_init.hpp);
  // `best` keeps it over Dual-SVID on its training-token error
  o.init = fit::InitMethod::best;
  const fit::FitReport report = fit::run_fit(ctx, o);
  // Gaussian inputs: the output error of W − planted is about its weight error
  const double floor = std::sqrt(noise_sq / signal_sq);
  INFO("init " << report.init.output << ", trained " << report.trained.output << ", noise floor " << floor);
  CHECK(report.trained.output < 2.0 * floor);
}

GPU_TEST("vkblr-fit: a checkpoint with metadata of the wrong types is refused naming the field", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  fit::FitOptions first = vkt::small_fit_run(dir.file("first"));
  first.steps = 8;
  first.eval_every = 4;
  first.checkpoint_every = 4;
  fit::run_fit(ctx, first);
  const fit::Checkpoint good = fit::read_checkpoint(dir.file("first.ckpt"));
  const std::string edited = dir.file("edited.ckpt");
  const auto resume_message = [&](const std::function<void(nlohmann::json&)>& edit) {
    fit::Checkpoint ck = good;
    edit(ck.metadata);
    fit::write_checkpoint(edited, ck);
    fit::FitOptions resumed = vkt::small_fit_run(dir.file("resumed"));
    resumed.steps = 8;
    resumed.eval_every = 4;
    resumed.resume = edited;
    return vkt::error_of([&] { fit::run_fit(ctx, resumed); });
  };
  // Before, nlohmann's "[json.exception.type_error.302] ..." reached the user.
  CHECK_THAT(resume_message([](nlohmann::json& md) { md["next_step"] = "4"; }),
             ContainsSubstring(edited + ": checkpoint metadata: 'next_step' is \"4\" (a string), want an integer"));
  CHECK_THAT(resume_message([](nlohmann::json& md) { md["skipped"] = -1; }),
             ContainsSubstring("'skipped' is -1 (a number), want an integer in [0, 2^32)"));
  CHECK_THAT(resume_message([](nlohmann::json& md) { md["curve"][0] = nlohmann::json::array({4}); }),
             ContainsSubstring("'curve[0][1]' is missing"));
  CHECK_THAT(resume_message([](nlohmann::json& md) { md.erase("init"); }), ContainsSubstring("'init' is missing"));
}
