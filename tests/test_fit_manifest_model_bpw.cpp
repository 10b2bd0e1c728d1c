// vkblr-fit --manifest --model-bpw on the device: six layers of three
// shapes under one bit budget meet it (to 0.1 % where the budget lands on
// a step of the allocation) with a weighted output error no worse than the
// same job at uniform bpw B; the report holds the allocation; a resumed
// run fits again exactly the layers whose allocated rank changed; budgets
// and manifests that cannot be met are refused before anything is written.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <format>

#include "support/fit_files.hpp"
#include "support/gpu.hpp"
#include "support/manifest_files.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/manifest/manifest_job.hpp"
#include "vkblr-fit/manifest/model_allocation.hpp"
#include "vkblr-fit/manifest/run_manifest.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::uint32_t kTokens = 384;  // 256 training, 128 held out

// In dir: w.safetensors with model.layers.L.{up,down,o}_proj.weight of
// 192×96, 96×192 and 96×96 (L = 0, 1; layer 0's spectra fall slowly,
// layer 1's fast, so rank pays off unevenly), and x.safetensors with each
// module's inputs [kTokens][n].
void write_budget_model(const vkt::TempDir& dir) {
  struct Layer {
    const char* module;
    std::uint32_t m, n;
  };
  const Layer layers[] = {{"up_proj", 192, 96}, {"down_proj", 96, 192}, {"o_proj", 96, 96}};
  fit::SafetensorsWriter w, x;
  std::uint64_t seed = 40;
  for (int l = 0; l < 2; ++l) {
    for (const Layer& layer : layers) {
      const std::string module = "model.layers." + std::to_string(l) + "." + layer.module;
      const fit::Matrix wm =
          fit::synthetic_weight({.m = layer.m, .n = layer.n, .spectrum_decay = l == 0 ? 0.3 : 1.2, .seed = ++seed});
      w.add_f32(module + ".weight", {wm.rows, wm.cols}, wm.values);
      const fit::Matrix xm =
          fit::synthetic_activations({.tokens = kTokens, .n = layer.n, .spectrum_decay = 1.0, .seed = ++seed});
      x.add_f16(module, {xm.rows, xm.cols}, xm.values);
    }
  }
  w.write(dir.file("w.safetensors"));
  x.write(dir.file("x.safetensors"));
}

nlohmann::json budget_defaults() {
  return {{"paths", 2}, {"batch", 64}, {"tokens", 256}, {"held_out", 128}, {"steps", 12}, {"eval_every", 6}};
}

// The up and down projections by patterns, layer 0's o_proj by name and
// layer 1's by name with its own rank 64 (kept under a budget); in this
// order: up 0, up 1, down 0, down 1, o 0, o 1.
nlohmann::json budget_manifest(const nlohmann::json& defaults) {
  const auto entry = [](const char* key, const char* tensor) {
    return nlohmann::json{{"weight", "w.safetensors"},
                          {key, tensor},
                          {"activations", "x.safetensors"},
                          {"activations_tensor", "{module}"}};
  };
  nlohmann::json own_rank = entry("tensor", "model.layers.1.o_proj.weight");
  own_rank["rank"] = 64;
  return {{"defaults", defaults},
          {"layers",
           {entry("tensors", "model.layers.*.up_proj.weight"), entry("tensors", "model.layers.*.down_proj.weight"),
            entry("tensor", "model.layers.0.o_proj.weight"), own_rank}}};
}

constexpr double kWeights = 2 * (192.0 * 96 + 96.0 * 192 + 96.0 * 96);

fit::ManifestOptions budget_run(const vkt::TempDir& dir, const std::string& out, std::optional<double> model_bpw) {
  fit::ManifestOptions o;
  o.manifest = dir.file("job.json");
  o.out = dir.file(out);
  o.quiet = true;
  o.model_bpw = model_bpw;
  return o;
}

std::vector<std::uint32_t> ranks_of(const fit::ManifestReport& report) {
  std::vector<std::uint32_t> ranks;
  for (const fit::LayerRow& row : report.layers) ranks.push_back(row.shape.rank);
  return ranks;
}

// One rank of two, without MPI: its gather returns what it sends, in its
// place, beside `other`, the other rank's text; it keeps what it sent.
class OneOfTwoRanks final : public fit::FitRanks {
 public:
  OneOfTwoRanks(int rank, std::string other) : rank_(rank), other_(std::move(other)) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return 2; }
  fit::FitSlice slice(std::uint32_t) const override { throw Error("OneOfTwoRanks: no slices"); }
  double sum(double, std::string_view) override { throw Error("OneOfTwoRanks: no sums"); }
  std::unique_ptr<fit::FitTrainer> make_trainer(Context&, BlrLayer&, std::uint32_t, std::uint32_t,
                                                const BlrTrainerConfig&) override {
    throw Error("OneOfTwoRanks: no trainers");
  }
  std::vector<std::string> gather(const std::string& text, std::string_view, double) override {
    sent = text;
    return rank_ == 0 ? std::vector{text, other_} : std::vector{other_, text};
  }
  void check_agreement(const Context&, std::span<const std::pair<std::string, std::string>>) override {}
  int fail(std::string_view) override { return 1; }
  std::string sent;

 private:
  int rank_;
  std::string other_;
};

}  // namespace

GPU_TEST("model-bpw: the checkpoint meets B, no worse than uniform bpw B; the report holds the allocation",
         "[fit][gpu][manifest][allocation]") {
  vkt::TempDir dir;
  write_budget_model(dir);
  vkt::write_manifest(dir.file("job.json"), budget_manifest(budget_defaults()));
  const fit::ManifestReport first = fit::run_manifest(ctx, budget_run(dir, "budget", 3.4));
  REQUIRE(first.complete);
  REQUIRE(first.allocation);
  CHECK(static_cast<double>(first.allocation->budget.weights) == kWeights);
  // B on a step of the allocation: the bits the allocation for 3.4 bpw
  // uses, which the greedy for exactly those bits reaches by the same
  // steps; so every layer of the first run resumes
  const double b = (static_cast<double>(first.allocation->allocation.bits) + 0.5) / kWeights;
  fit::ManifestOptions at_b = budget_run(dir, "budget", b);
  at_b.resume = true;
  const fit::ManifestReport report = fit::run_manifest(ctx, at_b);
  REQUIRE(report.complete);
  REQUIRE(report.allocation);
  const fit::ManifestTotals totals = fit::manifest_totals(report.layers);
  CHECK(totals.resumed == 6);
  CHECK(totals.bpw <= b);
  CHECK(totals.bpw >= 0.999 * b);
  CHECK(report.allocation->allocation.bpw == totals.bpw);
  CHECK(fit::read_blr_model(dir.file("budget.safetensors")).layers.size() == 6);
  const std::vector<std::uint32_t> ranks = ranks_of(report);
  CHECK(ranks == report.allocation->allocation.ranks);
  CHECK(ranks == ranks_of(first));
  CHECK(ranks[5] == 64);  // its own rank

  // the report: the allocation in the totals, the curves in the rows
  const nlohmann::json json = nlohmann::json::parse(vkt::read_raw_file(dir.file("budget.json")));
  const nlohmann::json& allocation = json["totals"]["allocation"];
  CHECK(allocation["model_bpw"].get<double>() == b);
  CHECK(allocation["bpw"].get<double>() == totals.bpw);
  CHECK(allocation["bits"] == totals.bits);
  CHECK(allocation["layers_by_budget"] == 5);
  CHECK(allocation["layers_by_manifest"] == 1);
  CHECK_THAT(allocation["method"].get<std::string>(), ContainsSubstring("greedy"));
  CHECK(allocation["curve_rounds"].get<int>() >= 1);
  CHECK(json["stages"]["allocate"]["wall_s"].get<double>() > 0);
  double weighted = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    const nlohmann::json& row = json["layers"][i];
    INFO(row["name"]);
    CHECK(row["allocation"]["rank"] == ranks[i]);
    CHECK(row["allocation"]["by"] == (i == 5 ? "manifest" : "budget"));
    CHECK(row["allocation"]["curve_mpi_rank"] == (i == 5 ? nlohmann::json(nullptr) : nlohmann::json(0)));
    const nlohmann::json& curve = row["allocation"]["curve"];
    // from rank 32 as far as the greedy read it: to the rank given or past
    // it, at most to 96, what the budget allows each
    if (i == 5) CHECK(curve.empty());
    if (i != 5) CHECK(32 * curve.size() >= ranks[i]);
    CHECK(curve.size() <= 3);
    for (std::size_t k = 0; k < curve.size(); ++k) {
      CHECK(curve[k]["rank"] == 32 * (k + 1));
      CHECK(curve[k]["error"].get<double>() > 0);
      CHECK(curve[k]["error"].get<double>() < 1.5);
    }
    weighted += row["m"].get<double>() * row["n"].get<double>() * row["errors"]["trained"]["output"].get<double>();
  }
  CHECK(json["totals"]["weighted_output_error"]["trained"].get<double>() == weighted / kWeights);

  // the same job at uniform bpw B: every layer the budget sized at bpw B
  // (in the same work directory: the layers of the same rank resume, as
  // they would fit, bit for bit)
  nlohmann::json uniform_defaults = budget_defaults();
  uniform_defaults["bpw"] = b;
  vkt::write_manifest(dir.file("job.json"), budget_manifest(uniform_defaults));
  fit::ManifestOptions uniform_run = budget_run(dir, "budget", std::nullopt);
  uniform_run.resume = true;
  const fit::ManifestReport uniform = fit::run_manifest(ctx, uniform_run);
  const fit::ManifestTotals u = fit::manifest_totals(uniform.layers);
  const std::vector<std::uint32_t> uniform_ranks = ranks_of(uniform);
  INFO("ranks under the budget " << nlohmann::json(ranks).dump() << ", uniform "
                                 << nlohmann::json(uniform_ranks).dump());
  CHECK(ranks != uniform_ranks);
  CHECK(u.bpw <= b);
  CHECK(totals.weighted_trained_error <= u.weighted_trained_error);
  const nlohmann::json uniform_json = nlohmann::json::parse(vkt::read_raw_file(dir.file("budget.json")));
  CHECK_FALSE(uniform_json["totals"].contains("allocation"));
  CHECK_FALSE(uniform_json.contains("stages"));
  CHECK(uniform_json["totals"]["weighted_output_error"]["trained"].get<double>() == u.weighted_trained_error);
  CHECK_FALSE(uniform_json["layers"][0].contains("allocation"));

  // a budget again, a smaller one: a layer whose record (the uniform run's)
  // has the rank of the new allocation resumes, the others are fitted again
  vkt::write_manifest(dir.file("job.json"), budget_manifest(budget_defaults()));
  fit::ManifestOptions smaller = budget_run(dir, "budget", 2.6);
  smaller.resume = true;
  const fit::ManifestReport again = fit::run_manifest(ctx, smaller);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    INFO(again.layers[i].name << ": rank " << again.layers[i].shape.rank);
    CHECK(again.layers[i].resumed == (again.layers[i].shape.rank == uniform_ranks[i]));
    kept += again.layers[i].resumed ? 1 : 0;
  }
  CHECK(kept > 0);
  CHECK(kept < 6);
  CHECK(fit::manifest_totals(again.layers).bpw <= 2.6);
}

GPU_TEST("model-bpw: budgets and manifests it cannot meet are refused before anything is written",
         "[fit][gpu][manifest][allocation][errors]") {
  vkt::TempDir dir;
  write_budget_model(dir);
  const auto message = [&](const nlohmann::json& manifest, double b, bool skip = false) {
    vkt::write_manifest(dir.file("job.json"), manifest);
    fit::ManifestOptions o = budget_run(dir, "out", b);
    o.skip_bad_layers = skip;
    return vkt::error_of([&] { fit::run_manifest(ctx, o); });
  };
  const auto bits = [](std::uint32_t m, std::uint32_t n, std::uint32_t rank) {
    return fit::bits_per_weight({m, n, rank, 2}, fit::ScaleDtype::f16).bits();
  };
  // the bounds: the five layers the budget sizes at rank 32 (at their
  // largest, 96), the sixth at its own rank 64
  const std::uint64_t own = bits(96, 96, 64);
  const std::uint64_t least = 2 * bits(192, 96, 32) + 2 * bits(96, 192, 32) + bits(96, 96, 32) + own;
  const std::uint64_t most = 2 * bits(192, 96, 96) + 2 * bits(96, 192, 96) + bits(96, 96, 96) + own;
  const nlohmann::json manifest = budget_manifest(budget_defaults());
  const std::string low = message(manifest, 0.99 * static_cast<double>(least) / kWeights);
  CHECK_THAT(low, ContainsSubstring("--model-bpw"));
  CHECK_THAT(low, ContainsSubstring("too low: the smallest ranks take " +
                                    std::format("{:.4f} bpw ({} bits over {} weights", static_cast<double>(least) /
                                                kWeights, least, kWeights)));
  CHECK_THAT(low, ContainsSubstring("rank 32 for each of the 5 layer(s) the budget sizes, the 1 of their own rank"));
  const std::string high = message(manifest, 1.01 * static_cast<double>(most) / kWeights);
  CHECK_THAT(high, ContainsSubstring("too high: every layer at the largest rank it can use"));
  CHECK_THAT(high, ContainsSubstring(std::format("{:.4f} bpw ({} bits", static_cast<double>(most) / kWeights, most)));
  // a size for every layer in "defaults" would leave the budget nothing
  for (const auto& [key, value] : {std::pair{"rank", nlohmann::json(64)}, std::pair{"bpw", nlohmann::json(3.0)}}) {
    nlohmann::json sized = budget_defaults();
    sized[key] = value;
    CHECK_THAT(message(budget_manifest(sized), 3.0), ContainsSubstring("gives 'rank' or 'bpw' in 'defaults'"));
  }
  // every entry with its own size: nothing to allocate
  nlohmann::json own_sizes = manifest;
  for (nlohmann::json& entry : own_sizes["layers"]) entry["bpw"] = 3.0;
  own_sizes["layers"][3].erase("rank");
  CHECK_THAT(message(own_sizes, 3.0), ContainsSubstring("none is left for the budget to size"));
  // a skipped layer is not part of the model: its weights leave the total
  nlohmann::json bad = manifest;
  bad["layers"][3]["rank"] = 160;  // more than a 96x96 layer can use
  CHECK_THAT(message(bad, 0.1, true), ContainsSubstring(std::format("over {} weights", kWeights - 96 * 96)));
  CHECK_FALSE(std::filesystem::exists(dir.file("out.layers")));
  CHECK_FALSE(std::filesystem::exists(dir.file("out.json")));
}

GPU_TEST("model-bpw: two ranks share out the curves; each rank's are taken bit for bit, a rank's failure stops all",
         "[fit][gpu][manifest][allocation]") {
  vkt::TempDir dir;
  write_budget_model(dir);
  vkt::write_manifest(dir.file("job.json"), budget_manifest(budget_defaults()));
  const fit::ManifestJob job = fit::plan_manifest_job(dir.file("job.json"), dir.file("out"), false, 3.4, ctx.caps());
  REQUIRE(job.budget);
  const auto allocate = [&](fit::FitRanks& ranks) {
    std::vector<fit::PlannedLayer> layers = job.layers;
    return fit::allocate_model_ranks(ctx, layers, *job.budget, ranks, true);
  };
  fit::LocalRanks one;
  const fit::ModelRanks alone = allocate(one);

  // rank 1 measures its share; without rank 0's curves it cannot allocate
  OneOfTwoRanks rank1(1, R"({"curves": [], "error": ""})");
  CHECK_THAT(vkt::error_of([&] { allocate(rank1); }), ContainsSubstring("curve"));
  // rank 0 with rank 1's: one process's allocation and curves, bit for bit
  OneOfTwoRanks rank0(0, rank1.sent);
  const fit::ModelRanks shared = allocate(rank0);
  CHECK(shared.summary.allocation.ranks == alone.summary.allocation.ranks);
  std::vector<int> measured_by;
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("layer " << i);
    REQUIRE(shared.layers[i]);
    CHECK(shared.layers[i]->curve == alone.layers[i]->curve);
    measured_by.push_back(shared.layers[i]->curve_mpi_rank);
  }
  // up 0, up 1 (192×96), down 0, down 1 (96×192), o 0 (96×96), o 1 (its own
  // rank, no curve): largest first, ties in order, each to the least loaded
  // rank, ties to rank 0
  CHECK(measured_by == std::vector<int>{0, 1, 0, 1, 0, -1});

  // a failure on rank 1 stops rank 0 with rank 1's message
  OneOfTwoRanks failed(0, R"({"curves": [], "error": "layer 'x' (layers[1]): its rank curve on rank 1: boom"})");
  CHECK_THAT(vkt::error_of([&] { allocate(failed); }), ContainsSubstring("its rank curve on rank 1: boom"));
  OneOfTwoRanks garbled(0, "not JSON");
  CHECK_THAT(vkt::error_of([&] { allocate(garbled); }),
             ContainsSubstring("--model-bpw: the rank curves rank 1 sent are not readable"));
  // a curve for a layer that is not the sender's
  OneOfTwoRanks twice(0, rank0.sent);
  CHECK_THAT(vkt::error_of([&] { allocate(twice); }), ContainsSubstring("which is not its to measure"));
}
