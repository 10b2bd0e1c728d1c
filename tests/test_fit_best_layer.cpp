// vkblr-fit saves the best layer it has seen on the held-out tokens,
// measured as the result file stores it: a constant W (all 0.5), which the
// init fits exactly and training only disturbs, saves the init's layer and
// the report says so; a resumed run makes the same choice; an ordinary
// run saves its last step's layer when that is the best.
#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

using namespace vkblr;

GPU_TEST("vkblr-fit never saves a layer worse than its init (a constant W)", "[fit][gpu]") {
  vkt::TempDir dir;
  fit::Matrix w(128, 96);
  for (float& v : w.values) v = 0.5f;
  vkt::write_matrix_file(dir.file("const_w.safetensors"), w);
  fit::FitOptions o = vkt::small_fit_run(dir.file("const"));
  o.weight_path = dir.file("const_w.safetensors");
  o.checkpoint_every = 6;
  const fit::FitReport report = fit::run_fit(ctx, o);
  INFO("init " << report.init.output << ", trained " << report.trained.output << ", last step "
               << report.curve.back().held_out_error);
  // training only disturbs the init's exact fit: the layer from before
  // training is saved (the init's, or the refit's if it is as good), and
  // the final error is its, evaluated the same way as the init's
  CHECK(report.curve.back().held_out_error > report.init.output);
  CHECK(report.trained.output <= report.init.output);
  CHECK(report.saved_stage != "training");
  CHECK(report.saved_step == 0);
  CHECK(report.trained.output == report.saved_held_out_error);
  const nlohmann::json j = nlohmann::json::parse(vkt::read_raw_file(dir.file("const.json")));
  CHECK(j.at("saved").at("stage") == report.saved_stage);
  CHECK(j.at("saved").at("step") == 0);
  CHECK(j.at("errors").at("trained").at("output").get<double>() <=
        j.at("errors").at("init").at("output").get<double>());

  // resumed from the checkpoint of step 6: the same layer is saved
  fit::FitOptions resumed = o;
  resumed.out = dir.file("resumed");
  resumed.resume = dir.file("const.ckpt");
  const fit::FitReport again = fit::run_fit(ctx, resumed);
  CHECK(again.saved_stage == report.saved_stage);
  const fit::BlrResult a = fit::read_blr_result(dir.file("const.safetensors"));
  const fit::BlrResult b = fit::read_blr_result(dir.file("resumed.safetensors"));
  vkt::check_same_layer(a, b);
}

GPU_TEST("vkblr-fit saves the last step's layer when it is the best", "[fit][gpu]") {
  vkt::TempDir dir;
  fit::FitOptions o = vkt::small_fit_run(dir.file("run"));
  o.refit_sweeps = 0;  // training from Dual-SVID improves steadily
  const fit::FitReport report = fit::run_fit(ctx, o);
  INFO("init " << report.init.output << ", trained " << report.trained.output);
  CHECK(report.saved_stage == "training");
  CHECK(report.saved_step == 12);
  CHECK(report.trained.output == report.curve.back().held_out_error);
  CHECK(report.trained.output < report.init.output);
}

TEST_CASE("vkblr-fit says which layer it saves when it is not the last step's", "[fit]") {
  fit::BestLayer best;
  best.stage = fit::LayerStage::training;
  best.step = 12;
  best.held_out_error = 0.2;
  const std::vector<fit::CurvePoint> curve{{4, 0.3}, {8, 0.25}, {12, 0.2}};
  CHECK(fit::saved_layer_note(best, curve).empty());
  best.step = 8;
  CHECK(fit::saved_layer_note(best, curve) ==
        "note: the layer of step 8 is saved, the lowest held-out output error seen (2.0000e-01; the last step's: "
        "2.0000e-01)");
  best.stage = fit::LayerStage::refit;
  best.step = 0;
  best.held_out_error = 0.125;
  CHECK(fit::saved_layer_note(best, curve) ==
        "warning: training did not improve on the refit's held-out output error 1.2500e-01 (the last step's: "
        "2.0000e-01); the refit's layer is saved");
}
