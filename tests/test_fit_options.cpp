// vkblr-fit's numeric options: values no run can use (NaN anywhere,
// negative learning rates, a --gscale that is not a power of two in range,
// ...) are refused naming the flag; --steps 1 runs (its warm-up is 0); a
// run whose steps keep being skipped for non-finite gradients stops with a
// message naming the likely causes.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr-fit/train/skip_guard.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("vkblr-fit refuses numeric options no run can use, naming the flag", "[fit]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto refusal = [](const std::function<void(fit::FitOptions&)>& edit) {
    fit::FitOptions o;
    edit(o);
    return vkt::error_of([&] { fit::check_fit_options(o); });
  };
  CHECK_THAT(refusal([](auto& o) { o.scale_lr = -1; }), ContainsSubstring("--scale-lr -1: must be at least 0"));
  CHECK_THAT(refusal([&](auto& o) { o.scale_lr = nan; }), ContainsSubstring("--scale-lr nan: must be a finite number"));
  CHECK_THAT(refusal([&](auto& o) { o.sign_lr = inf; }), ContainsSubstring("--sign-lr inf"));
  CHECK_THAT(refusal([&](auto& o) { o.scale_rel_floor = nan; }), ContainsSubstring("--scale-rel-floor nan"));
  CHECK_THAT(refusal([&](auto& o) { o.activation_decay = nan; }), ContainsSubstring("--activation-decay nan"));
  CHECK_THAT(refusal([](auto& o) { o.activation_decay = 5; }),
             ContainsSubstring("--activation-decay 5: must be in [0, 4]"));
  CHECK_THAT(refusal([&](auto& o) { o.bpw = nan; }), ContainsSubstring("--bpw nan"));
  CHECK_THAT(refusal([](auto& o) { o.bpw = -1; }), ContainsSubstring("--bpw -1: must be positive"));
  CHECK_THAT(refusal([](auto& o) { o.gscale = 1073741824.0f; }),  // 2^30
             ContainsSubstring("--gscale 1073741824: must be in [1, 16777216]"));
  CHECK_THAT(refusal([](auto& o) { o.gscale = 1.27e30f; }),
             ContainsSubstring("--gscale 1.27e+30: must be a power of two"));
  CHECK_THAT(refusal([](auto& o) { o.gscale = 1000; }), ContainsSubstring("--gscale 1000: must be a power of two"));
  CHECK_THAT(refusal([](auto& o) { o.gscale = 0.5f; }), ContainsSubstring("--gscale 0.5: must be in"));
  CHECK_THAT(refusal([&](auto& o) { o.gscale = nan; }), ContainsSubstring("--gscale nan"));
  CHECK_THAT(refusal([](auto& o) { o.sign_beta1 = 1; }), ContainsSubstring("--sign-beta1 1: must be in [0, 1)"));
  CHECK_THAT(refusal([&](auto& o) { o.sign_beta2 = nan; }), ContainsSubstring("--sign-beta2 nan"));
  CHECK_THAT(refusal([](auto& o) { o.sign_eps = -1e-8f; }), ContainsSubstring("--sign-eps"));
  CHECK_THAT(refusal([](auto& o) { o.sign_clamp = 0; }), ContainsSubstring("--sign-clamp 0: must be positive"));
  CHECK_THAT(refusal([&](auto& o) { o.sign_hyst = nan; }), ContainsSubstring("--sign-hyst nan"));
  CHECK_THAT(refusal([](auto& o) { o.sign_tau = -0.25f; }), ContainsSubstring("--tau -0.25"));
  CHECK_THAT(refusal([](auto& o) { o.flip_budget = 2; }), ContainsSubstring("--flip-budget 2: must be in [0, 1]"));
  CHECK_THAT(refusal([](auto& o) { o.paths = 0; }), ContainsSubstring("--paths 0"));
  CHECK_THAT(refusal([](auto& o) { o.micro_batches = 0; }), ContainsSubstring("--micro-batches 0"));
  CHECK_THAT(refusal([](auto& o) { o.refit_sweeps = 101; }), ContainsSubstring("--refit-sweeps 101"));
  CHECK_THAT(refusal([](auto& o) { o.synthetic_m = 100000; }), ContainsSubstring("--synthetic-m 100000"));
  // the defaults, and the edges that are fine
  fit::check_fit_options(fit::FitOptions{});
  fit::FitOptions edges;
  edges.gscale = fit::kMinGscale;
  edges.scale_lr = 0;
  edges.flip_budget = 1;
  edges.activation_decay = 4;
  fit::check_fit_options(edges);
  edges.gscale = fit::kMaxGscale;
  fit::check_fit_options(edges);
}

TEST_CASE("vkblr-fit: the warm-up defaults to 5 % of the steps, rounded down", "[fit]") {
  Caps caps;
  caps.device_type = "cpu";
  fit::FitOptions o = vkt::small_fit_run("unused");
  o.steps = 1;
  fit::resolve_fit_defaults(o, caps);
  CHECK(o.warmup == 0u);
  o = vkt::small_fit_run("unused");
  o.steps = 300;
  fit::resolve_fit_defaults(o, caps);
  CHECK(o.warmup == 15u);
  o = vkt::small_fit_run("unused");
  o.steps = 10;
  o.warmup = 10;
  CHECK_THAT(vkt::error_of([&] { fit::resolve_fit_defaults(o, caps); }),
             ContainsSubstring("--warmup 10 must be below --steps 10"));
}

TEST_CASE("vkblr-fit: the skip guard stops after 3 skipped steps in a row or more than 1 % in all", "[fit]") {
  CHECK(fit::max_skipped_steps(100) == 3);
  CHECK(fit::max_skipped_steps(2000) == 20);
  fit::FitOptions o = vkt::small_fit_run("unused");
  o.steps = 2000;
  fit::SkipGuard in_a_row(o);
  in_a_row.after_step(0, false, 1);
  in_a_row.after_step(1, false, 2);
  in_a_row.after_step(2, true, 2);  // an applied step resets the count
  in_a_row.after_step(3, false, 3);
  in_a_row.after_step(4, false, 4);
  CHECK_THAT(vkt::error_of([&] { in_a_row.after_step(5, false, 5); }),
             ContainsSubstring("stopped at step 6 of 2000: 5 steps skipped") && ContainsSubstring("3 in a row") &&
                 ContainsSubstring("--scale-lr 0.002") && ContainsSubstring("--gscale 1024"));
  fit::SkipGuard in_all(o);
  std::uint32_t skipped = 0;
  for (std::uint32_t s = 0; s < 40; s += 2) {
    in_all.after_step(s, false, ++skipped);
    in_all.after_step(s + 1, true, skipped);
  }
  CHECK_THAT(vkt::error_of([&] { in_all.after_step(40, false, 21); }), ContainsSubstring("21 steps skipped"));
}

GPU_TEST("vkblr-fit: --steps 1 runs", "[fit][gpu]") {
  vkt::TempDir dir;
  fit::FitOptions o = vkt::small_fit_run(dir.file("one"));
  o.steps = 1;
  const fit::FitReport report = fit::run_fit(ctx, o);
  CHECK(report.steps == 1);
  REQUIRE(report.curve.size() == 1);
  CHECK(report.curve[0].step == 1);
}

GPU_TEST("vkblr-fit stops a run whose steps are skipped for non-finite gradients", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  fit::FitOptions o = vkt::small_fit_run(dir.file("diverged"));
  o.scale_lr = 1e30f;  // the scales overflow after the first step
  o.refit_sweeps = 0;
  CHECK_THAT(vkt::error_of([&] { fit::run_fit(ctx, o); }),
             ContainsSubstring("skipped for NaN or Inf in the gradients") && ContainsSubstring("--scale-lr 1e+30"));
  CHECK(dir.entries().empty());  // nothing written
}
