// The host side of vkblr-fit --manifest: tensor-name patterns and
// templates, natural order, the work directory's file names, and manifest
// files refused for their keys and values before any file they name is
// opened.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>

#include "support/fit_files.hpp"
#include "support/manifest_files.hpp"
#include "vkblr-fit/manifest/layer_record.hpp"
#include "vkblr-fit/manifest/manifest.hpp"
#include "vkblr-fit/manifest/name_pattern.hpp"

using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("manifest: patterns match whole names, each '*' as short as it can", "[fit][manifest]") {
  using Captures = std::vector<std::string>;
  CHECK(match_name_pattern("model.layers.*.mlp.*.weight", "model.layers.10.mlp.up_proj.weight") ==
        Captures{"10", "up_proj"});
  CHECK(match_name_pattern("a.*.b.*", "a.1.b.2.b.3") == Captures{"1", "2.b.3"});
  CHECK(match_name_pattern("*", "") == Captures{""});
  CHECK(match_name_pattern("x.*", "x.") == Captures{""});
  CHECK(match_name_pattern("exact", "exact") == Captures{});
  CHECK_FALSE(match_name_pattern("exact", "exact.weight"));
  CHECK_FALSE(match_name_pattern("model.*.weight", "model.layers.0.bias"));
  CHECK_FALSE(match_name_pattern("a*a", "a"));  // the prefix and suffix may not overlap
  CHECK_FALSE(match_name_pattern("*.q.*.k", "x.q.y.q"));
}

TEST_CASE("manifest: templates put in the tensor, its module and the captures", "[fit][manifest]") {
  const std::vector<std::string> captures{"3", "up"};
  const std::string tensor = "model.layers.3.mlp.up_proj.weight";
  CHECK(expand_name_template("{tensor}", tensor, captures, "t") == tensor);
  CHECK(expand_name_template("acts/{module}.npy", tensor, captures, "t") == "acts/model.layers.3.mlp.up_proj.npy");
  CHECK(expand_name_template("{module}", "lm_head", {}, "t") == "lm_head");
  CHECK(expand_name_template("l{1}.{2}.in", tensor, captures, "t") == "l3.up.in");
  CHECK(expand_name_template("plain", tensor, captures, "t") == "plain");
  CHECK_THAT(vkt::error_of([&] { expand_name_template("{3}", tensor, captures, "'x'"); }),
             ContainsSubstring("'x': '{3}': {3} but the pattern has 2 '*'"));
  CHECK_THAT(vkt::error_of([&] { expand_name_template("{name}", tensor, captures, "t"); }),
             ContainsSubstring("unknown placeholder {name}"));
  CHECK_THAT(vkt::error_of([&] { expand_name_template("{0}", tensor, captures, "t"); }),
             ContainsSubstring("unknown placeholder {0}"));
  CHECK_THAT(vkt::error_of([&] { expand_name_template("a{1", tensor, captures, "t"); }),
             ContainsSubstring("a '{' without '}'"));
  CHECK_THAT(vkt::error_of([&] { expand_name_template("a}", tensor, captures, "t"); }),
             ContainsSubstring("a '}' without '{'"));
}

TEST_CASE("manifest: natural order puts layer 2 before layer 10", "[fit][manifest]") {
  std::vector<std::string> names{"l.10.b", "l.2.b", "l.1.b", "l.10.a", "l.02.b", "l.b", "l.", "m"};
  std::ranges::sort(names, natural_less);
  CHECK(names == std::vector<std::string>{"l.", "l.1.b", "l.02.b", "l.2.b", "l.10.a", "l.10.b", "l.b", "m"});
  CHECK_FALSE(natural_less("a", "a"));
  CHECK(natural_less("a9", "a10"));
  CHECK(natural_less("a", "a0"));
}

TEST_CASE("manifest: layer file names are plain names, never shared", "[fit][manifest]") {
  CHECK(layer_file_stem("model.layers.0.mlp.up_proj.weight") == "model.layers.0.mlp.up_proj.weight");
  const std::string slash = layer_file_stem("enc/dec:w");
  CHECK(slash.starts_with("enc_dec_w-"));
  CHECK(slash.size() == 10 + 16);
  CHECK(layer_file_stem("enc_dec_w") != slash);
  CHECK(layer_file_stem("enc/dec:w") == slash);
  CHECK(layer_file_stem("..")[0] == '_');
  CHECK(layer_file_stem(std::string(300, 'a')).size() == 200 + 17);
  const LayerFiles files = layer_files("out.layers", "a.weight");
  CHECK(files.result == "out.layers/a.weight.safetensors");
  CHECK(files.record == "out.layers/a.weight.done.json");
}

TEST_CASE("manifest: keys and values are checked as the manifest is read", "[fit][manifest]") {
  vkt::TempDir dir;
  const std::string path = dir.file("job.json");
  const auto read = [&](const nlohmann::json& manifest) {
    vkt::write_manifest(path, manifest);
    return read_manifest(path);
  };
  const auto message = [&](const nlohmann::json& manifest) { return vkt::error_of([&] { read(manifest); }); };
  const Manifest m = read(vkt::six_layer_manifest());
  REQUIRE(m.entries.size() == 3);
  {  // a manifest is a text a person writes: 16 MiB at most, refused before parsing
    std::string big = vkt::six_layer_manifest().dump();
    big.insert(big.size() - 1, std::string((std::size_t{16} << 20) + 1 - big.size(), ' '));
    vkt::write_raw_file(path, big);
    CHECK_THAT(vkt::error_of([&] { read_manifest(path); }),
               ContainsSubstring("manifest " + path + ": 16777217 bytes, more than a manifest may have (16777216)"));
  }
  CHECK(m.entries[0].is_pattern);
  CHECK(m.entries[0].pattern == "model.layers.*.mlp.*_proj.weight");
  CHECK(m.entries[1].tensor == "model.layers.0.attn.q_proj.weight");
  CHECK(m.entries[1].settings.rank == 64);
  CHECK(m.entries[1].settings.steps == 6);
  CHECK(m.entries[0].settings.steps == 8);
  CHECK(m.entries[2].settings.seed == 7);
  CHECK(m.entries[0].settings.flip_budget == 0.01f);
  CHECK(resolve_manifest_path(m, "w0.safetensors") == dir.file("w0.safetensors"));
  CHECK(resolve_manifest_path(m, "/abs/w.npy") == "/abs/w.npy");
  // a layer's bpw replaces the defaults' rank
  nlohmann::json bpw = vkt::six_layer_manifest();
  bpw["layers"][0]["bpw"] = 2.5;
  const Manifest with_bpw = read(bpw);
  CHECK(with_bpw.entries[0].settings.rank == 0);
  CHECK(with_bpw.entries[0].settings.bpw == 2.5);
  CHECK(with_bpw.entries[1].settings.rank == 64);
  nlohmann::json every = vkt::six_layer_manifest();
  every["defaults"] = {{"bpw", 1.5},          {"paths", 3},           {"scale_dtype", "f32"},    {"tokens", 128},
                       {"held_out", 64},      {"batch", 64},          {"micro_batches", 2},      {"seed", 5},
                       {"x_memory", "host"},  {"init", "best"},       {"refit_sweeps", 2},       {"steps", 9},
                       {"warmup", 0},         {"sign_opt", "fact"},   {"sign_lr", 0.5},          {"sign_beta1", 0.5},
                       {"sign_beta2", 0.75},  {"sign_eps", 1e-6},     {"sign_clamp", 2},         {"sign_hyst", 0.25},
                       {"tau", 0.5},          {"latent_init", "uniform"}, {"latent_rms", 0.25},  {"flip_budget", 0.5},
                       {"bf16_state", true},  {"scale_lr", 0.125},    {"scale_rel_floor", 0.5},  {"eval_every", 3},
                       {"gscale", 64}};
  const FitOptions o = read(every).entries[0].settings;
  CHECK(o.bpw == 1.5);
  CHECK(o.paths == 3);
  CHECK(o.scale_dtype == ScaleDtype::f32);
  CHECK(o.tokens == 128);
  CHECK(o.micro_batches == 2);
  CHECK(o.x_memory == "host");
  CHECK(o.init == InitMethod::best);
  CHECK(o.refit_sweeps == 2);
  CHECK(o.warmup == 0u);
  CHECK(o.sign_opt == vkblr::SignOpt::fact);
  CHECK(o.sign_tau == 0.5f);
  CHECK(o.latent_init == "uniform");
  CHECK(o.bf16_state);
  CHECK(o.scale_rel_floor == 0.5f);
  CHECK(o.eval_every == 3);
  CHECK(o.gscale == 64.0f);

  CHECK_THAT(message({{"layers", {{{"activations", "x"}}}}}), ContainsSubstring("'layers[0].weight' is missing"));
  CHECK_THAT(message({{"layers", {{{"weight", ""}, {"activations", "x"}}}}}),
             ContainsSubstring("'layers[0].weight' is empty"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"tensor", "a"}, {"tensors", "*"}}}}}),
             ContainsSubstring("'tensor' (one layer) and 'tensors' (a pattern) exclude each other"));
  CHECK_THAT(message({{"defaults", {{"weight", "w"}}}, {"layers", {{{"weight", "w"}, {"activations", "x"}}}}}),
             ContainsSubstring("'defaults': unknown key 'weight'"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"paths", 17}}}}}),
             ContainsSubstring("'layers[0].paths' is 17: must be in [1, 16]"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"gscale", 1000}}}}}),
             ContainsSubstring("--gscale 1000: must be a power of two"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"bf16_state", 1}}}}}),
             ContainsSubstring("want true or false"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"seed", -1}}}}}),
             ContainsSubstring("'layers[0].seed' is -1"));
  CHECK_THAT(message({{"layers", "all"}}), ContainsSubstring("'layers' is \"all\" (a string), want an array"));
  CHECK_THAT(message({{"layers", {{{"weight", "w"}, {"activations", "x"}, {"name", {{"a", 1}}}}}}}),
             ContainsSubstring("nested more than 3 levels"));
  vkt::write_raw_file(path, R"({"layers": [], "layers": []})");
  CHECK_THAT(vkt::error_of([&] { read_manifest(path); }), ContainsSubstring("key 'layers' appears twice"));
  CHECK_THAT(vkt::error_of([&] { read_manifest(dir.file("missing.json")); }), ContainsSubstring("missing.json"));
}
