// vkblr-fit --manifest on the device: every layer of the output equals the
// single-layer run of the same flags bit for bit; a run stopped after 3
// layers and resumed writes the same file byte for byte; bad layers are
// skipped or refused as asked; manifests that cannot run are refused,
// naming the problem, before any layer is fitted.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "support/manifest_files.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/manifest/run_manifest.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

fit::ManifestOptions manifest_run(const vkt::TempDir& dir, const std::string& out) {
  fit::ManifestOptions o;
  o.manifest = dir.file("job.json");
  o.out = dir.file(out);
  o.quiet = true;
  return o;
}

std::size_t resumed_count(const fit::ManifestReport& report) {
  std::size_t count = 0;
  for (const fit::LayerRow& row : report.layers) count += row.resumed ? 1 : 0;
  return count;
}

}  // namespace

GPU_TEST("manifest: every layer equals the single-layer run of its flags, bit for bit", "[fit][gpu][manifest]") {
  vkt::TempDir dir;
  vkt::write_manifest_model(dir.path());
  vkt::write_manifest(dir.file("job.json"), vkt::six_layer_manifest());
  const fit::ManifestReport report = fit::run_manifest(ctx, manifest_run(dir, "model"));
  REQUIRE(report.complete);
  const fit::BlrModel model = fit::read_blr_model(dir.file("model.safetensors"));
  const char* order[] = {"model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.up_proj.weight",
                         "model.layers.0.attn.q_proj.weight",   "model.layers.1.attn.q_proj.weight",
                         "model.layers.1.mlp.down_proj.weight", "model.layers.1.mlp.up_proj.weight"};
  REQUIRE(model.layers.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    const std::string& name = model.layers[i].name;
    INFO(name);
    CHECK(name == order[i]);
    // the single-layer run with the flags of its entry and the defaults
    const std::string l = name.substr(13, 1);
    const std::string module = name.substr(0, name.size() - 7);
    fit::FitOptions single = vkt::small_fit_run(dir.file("single" + std::to_string(i)));
    single.synthetic_m = single.synthetic_n = 0;
    single.weight_path = dir.file("w" + l + ".safetensors");
    single.tensor = name;
    single.activations_path = dir.file("x" + l + ".safetensors");
    single.activations_tensor = module;
    single.steps = 8;
    if (name == "model.layers.0.attn.q_proj.weight") {
      single.rank = 64;
      single.steps = 6;
    }
    if (l == "1") single.seed = 7;
    fit::run_fit(ctx, single);
    const fit::BlrResult alone = fit::read_blr_result(single.out + ".safetensors");
    const fit::BlrResult& in_model = model.layers[i].result;
    CHECK(in_model.shape == alone.shape);
    CHECK(in_model.scale_dtype == alone.scale_dtype);
    CHECK(in_model.inputs == alone.inputs);
    vkt::check_same_layer(in_model, alone);
  }
  // the report: a row per layer, the model's bits per weight
  REQUIRE(report.layers.size() == 6);
  std::uint64_t bits = 0, weights = 0;
  for (const fit::LayerRow& row : report.layers) {
    CHECK(row.skipped.empty());
    CHECK(row.trained.output <= row.init.output);
    const fit::BitsPerWeight b = fit::bits_per_weight(row.shape, row.scale_dtype);
    bits += b.sign_bits + b.scale_bits + b.metadata_bits;
    weights += b.weights;
  }
  const nlohmann::json json = nlohmann::json::parse(vkt::read_raw_file(dir.file("model.json")));
  CHECK(json["totals"]["bpw"].get<double>() == static_cast<double>(bits) / static_cast<double>(weights));
  CHECK(json["layers"][2]["rank"] == 64);
  CHECK(json["layers"][2]["errors"]["trained"]["output"].is_number());
  CHECK_THAT(vkt::read_raw_file(dir.file("model.svg")), ContainsSubstring("model.layers.1.mlp.up_proj.weight"));
}

GPU_TEST("manifest: a run stopped after 3 layers and resumed writes the same file", "[fit][gpu][manifest]") {
  vkt::TempDir dir;
  vkt::write_manifest_model(dir.path());
  vkt::write_manifest(dir.file("job.json"), vkt::six_layer_manifest());
  fit::run_manifest(ctx, manifest_run(dir, "whole"));

  fit::ManifestOptions first = manifest_run(dir, "resumed");
  std::size_t done = 0;
  first.after_layer = [&](const fit::LayerRow&) { return ++done < 3; };
  const fit::ManifestReport stopped = fit::run_manifest(ctx, first);
  CHECK_FALSE(stopped.complete);
  CHECK(stopped.layers.size() == 3);
  CHECK_FALSE(std::filesystem::exists(dir.file("resumed.safetensors")));

  fit::ManifestOptions again = manifest_run(dir, "resumed");
  again.resume = true;
  const fit::ManifestReport resumed = fit::run_manifest(ctx, again);
  CHECK(resumed.complete);
  CHECK(resumed_count(resumed) == 3);
  CHECK(vkt::read_raw_file(dir.file("resumed.safetensors")) == vkt::read_raw_file(dir.file("whole.safetensors")));

  // another setting for one entry: its layer is fitted again, the rest not
  nlohmann::json changed = vkt::six_layer_manifest();
  changed["layers"][1]["steps"] = 5;
  vkt::write_manifest(dir.file("job.json"), changed);
  const fit::ManifestReport refit = fit::run_manifest(ctx, again);
  CHECK(resumed_count(refit) == 5);
  CHECK_FALSE(refit.layers[2].resumed);
  // the manifest as it was, one result file damaged: those two layers are
  // fitted again, and the file is the uninterrupted run's again
  vkt::write_manifest(dir.file("job.json"), vkt::six_layer_manifest());
  const std::string damaged = dir.file("resumed.layers/model.layers.1.mlp.up_proj.weight.safetensors");
  std::string bytes = vkt::read_raw_file(damaged);
  bytes[bytes.size() - 1] ^= 1;
  vkt::write_raw_file(damaged, bytes);
  const fit::ManifestReport repaired = fit::run_manifest(ctx, again);
  CHECK(resumed_count(repaired) == 4);
  CHECK_FALSE(repaired.layers[5].resumed);
  CHECK(vkt::read_raw_file(dir.file("resumed.safetensors")) == vkt::read_raw_file(dir.file("whole.safetensors")));
  // without --resume every layer is fitted again
  again.resume = false;
  fit::ManifestOptions one = again;
  one.after_layer = [](const fit::LayerRow&) { return false; };
  CHECK(resumed_count(fit::run_manifest(ctx, one)) == 0);
}

GPU_TEST("manifest: bad layers are skipped or refused as asked", "[fit][gpu][manifest]") {
  vkt::TempDir dir;
  fit::SafetensorsWriter w, x;
  const fit::Matrix good = fit::synthetic_weight({.m = 64, .n = 64, .seed = 3});
  w.add_f32("a.weight", {64, 64}, good.values);
  w.add_f32("a.bias", {64}, std::vector<float>(64, 0.5f));
  const fit::Matrix odd = fit::synthetic_weight({.m = 24, .n = 40, .seed = 4});
  w.add_f32("b.weight", {24, 40}, odd.values);
  w.write(dir.file("w.safetensors"));
  const fit::Matrix xa = fit::synthetic_activations({.tokens = 320, .n = 64, .seed = 5});
  x.add_f32("a", {320, 64}, xa.values);
  x.write(dir.file("x.safetensors"));
  vkt::write_manifest(dir.file("job.json"), {{"defaults", vkt::manifest_defaults()},
                                             {"layers",
                                              {{{"weight", "w.safetensors"},
                                                {"tensors", "*"},
                                                {"activations", "x.safetensors"},
                                                {"activations_tensor", "a"}}}}});
  // refused by default: every bad layer named, nothing fitted
  const std::string message = vkt::error_of([&] { fit::run_manifest(ctx, manifest_run(dir, "out")); });
  CHECK_THAT(message, ContainsSubstring("2 bad layer(s)"));
  CHECK_THAT(message, ContainsSubstring("'a.bias'"));
  CHECK_THAT(message, ContainsSubstring("W is 1-D [64]"));
  CHECK_THAT(message, ContainsSubstring("'b.weight'"));
  CHECK_THAT(message, ContainsSubstring("W is 24x40"));
  CHECK_THAT(message, ContainsSubstring("--on-bad-layer skip"));
  CHECK_FALSE(std::filesystem::exists(dir.file("out.layers")));
  // skipped: reported, the good layer alone in the output
  fit::ManifestOptions skip = manifest_run(dir, "out");
  skip.skip_bad_layers = true;
  const fit::ManifestReport report = fit::run_manifest(ctx, skip);
  REQUIRE(report.layers.size() == 3);
  CHECK(report.layers[0].name == "a.bias");
  CHECK_THAT(report.layers[0].skipped, ContainsSubstring("1-D"));
  CHECK(report.layers[1].skipped.empty());
  CHECK_THAT(report.layers[2].skipped, ContainsSubstring("multiples of 16"));
  const fit::BlrModel model = fit::read_blr_model(dir.file("out.safetensors"));
  REQUIRE(model.layers.size() == 1);
  CHECK(model.layers[0].name == "a.weight");
  const nlohmann::json json = nlohmann::json::parse(vkt::read_raw_file(dir.file("out.json")));
  CHECK(json["totals"]["skipped"] == 2);
  CHECK(json["layers"][2]["skipped"].get<std::string>().find("24x40") != std::string::npos);
  CHECK_THAT(vkt::read_raw_file(dir.file("out.svg")), ContainsSubstring("skipped: W is 1-D"));
}

GPU_TEST("manifest: manifests that cannot run are refused, naming the problem", "[fit][gpu][manifest][errors]") {
  vkt::TempDir dir;
  vkt::write_manifest_model(dir.path());
  const auto message = [&](const nlohmann::json& manifest) {
    vkt::write_manifest(dir.file("job.json"), manifest);
    return vkt::error_of([&] { fit::run_manifest(ctx, manifest_run(dir, "out")); });
  };
  const nlohmann::json entry = {{"weight", "w0.safetensors"},
                                {"tensor", "model.layers.0.attn.q_proj.weight"},
                                {"activations", "x0.safetensors"},
                                {"activations_tensor", "{module}"}};
  const auto with = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json e = entry;
    e[key] = value;
    return nlohmann::json{{"defaults", vkt::manifest_defaults()}, {"layers", {e}}};
  };
  CHECK_THAT(message(with("stepz", 3)), ContainsSubstring("'layers[0]': unknown key 'stepz'"));
  CHECK_THAT(message(with("sign-lr", 0.1)), ContainsSubstring("did you mean 'sign_lr'?"));
  CHECK_THAT(message({{"layers", {entry}}, {"default", {}}}), ContainsSubstring("unknown key 'default'"));
  CHECK_THAT(message(with("weight", "missing.safetensors")), ContainsSubstring("missing.safetensors"));
  CHECK_THAT(message(with("activations", "nope.npy")), ContainsSubstring("nope.npy"));
  CHECK_THAT(message(with("tensor", "model.layers.9.x")), ContainsSubstring("has no tensor 'model.layers.9.x'"));
  nlohmann::json glob = entry;
  glob.erase("tensor");
  glob["tensors"] = "model.layers.*.mlp.gate_proj.weight";
  CHECK_THAT(message({{"layers", {glob}}}), ContainsSubstring("matches no tensor of"));
  CHECK_THAT(message(with("tensor", "model.*.weight")), ContainsSubstring("for a pattern use 'tensors'"));
  CHECK_THAT(message({{"defaults", vkt::manifest_defaults()}, {"layers", {entry, entry}}}),
             ContainsSubstring("layer 'model.layers.0.attn.q_proj.weight' is named twice: by layers[0] and by "
                               "layers[1]"));
  CHECK_THAT(message(with("steps", 0)), ContainsSubstring("'layers[0].steps' is 0"));
  CHECK_THAT(message(with("steps", "ten")), ContainsSubstring("'layers[0].steps' is \"ten\" (a string)"));
  nlohmann::json both = with("bpw", 1.0);
  both["layers"][0]["rank"] = 32;
  CHECK_THAT(message(both), ContainsSubstring("'layers[0]': 'rank' and 'bpw' exclude each other"));
  CHECK_THAT(message(with("bpw", -1)), ContainsSubstring("layers[0]': --bpw -1: must be positive"));
  CHECK_THAT(message(with("sign_opt", "sgd")), ContainsSubstring("'layers[0].sign_opt' is 'sgd', want one of adam"));
  CHECK_THAT(message(with("activations_tensor", "{2}")), ContainsSubstring("{2} but the pattern has 0 '*'"));
  CHECK_THAT(message(with("tokens", 4096)), ContainsSubstring("384 tokens; 4096 training + 64 held-out"));
  CHECK_THAT(message({{"layers", nlohmann::json::array()}}), ContainsSubstring("'layers' is empty"));
  // an output that is an input: refused before anything is written
  vkt::write_manifest(dir.file("job.json"), {{"defaults", vkt::manifest_defaults()}, {"layers", {entry}}});
  CHECK_THAT(vkt::error_of([&] { fit::run_manifest(ctx, manifest_run(dir, "w0")); }),
             ContainsSubstring("the output " + dir.file("w0.safetensors") + " is an input of layer "
                               "'model.layers.0.attn.q_proj.weight'"));
  CHECK_THAT(vkt::error_of([&] { fit::run_manifest(ctx, manifest_run(dir, "job")); }),
             ContainsSubstring("the output " + dir.file("job.json") + " is the manifest"));
  vkt::write_raw_file(dir.file("job.json"), "{\"layers\": [");
  CHECK_THAT(vkt::error_of([&] { fit::run_manifest(ctx, manifest_run(dir, "out")); }), ContainsSubstring("bad JSON"));
  CHECK_FALSE(std::filesystem::exists(dir.file("out.layers")));
}
