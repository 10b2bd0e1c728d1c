// vkblr-bench — GPU timings of vkblr's kernels (GPU timestamps, medians).
//
//   vkblr-bench gemm [--shape MxNxK]... [--mode plane,bits_n,bits_t,plain]
//                    [--tile bm,bn,bk,wm,wn,stages[,prefetch]]... [--reps N] [--warmup N] [--check] [--stats]
//   vkblr-bench gemm-f32 [--shape MxNxK]... [--ta] [--tb] [--tile bm,bn,bk,tm,tn]... [--reps N] [--warmup N]
//                    [--check]
//   vkblr-bench blr  [--case m,n,r,ntok,P]... [--no-sign] [--lanes L] [--reps N] [--warmup N]
//   vkblr-bench train [--case m,n,r,ntok,P]... [--sign-opt adam|fact|bop] [--flip-budget F]
//                     [--frozen-signs] [--steps N] [--warmup N]
//   --json on either: the results as JSON on stdout
//
// Method: each case is recorded `reps` times into one Graph with timestamps
// around every dispatch; the graph runs `warmup` times, then once timed; the
// median over reps of the GPU time is reported (docs/benchmarks.md).
// `train` times BlrTrainer's replayed steps by wall clock (train_bench.hpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "blr_bench.hpp"
#include "gemm_bench.hpp"
#include "gemm_f32_bench.hpp"
#include "train_bench.hpp"

namespace {

std::array<std::uint32_t, 3> parse_shape(const std::string& s) {
  std::array<std::uint32_t, 3> v{};
  char x1 = 0, x2 = 0;
  std::istringstream in(s);
  in >> v[0] >> x1 >> v[1] >> x2 >> v[2];
  if (in.fail() || x1 != 'x' || x2 != 'x') throw CLI::ValidationError("--shape", "expected MxNxK, got " + s);
  return v;
}

vkblr::GemmTile parse_tile(const std::string& s, vkblr::GemmKernel kernel) {
  vkblr::GemmTile t;
  t.kernel = kernel;
  char c = 0;
  std::istringstream in(s);
  in >> t.bm >> c >> t.bn >> c >> t.bk >> c >> t.wm >> c >> t.wn >> c >> t.stages;
  bool ok = !in.fail();
  if (ok && !(in >> std::ws).eof()) {  // an optional seventh field, then nothing
    ok = static_cast<bool>(in >> c >> t.prefetch) && c == ',' && (in >> std::ws).eof();
  }
  if (!ok) {
    throw CLI::ValidationError("--tile", "expected bm,bn,bk,wm,wn,stages[,prefetch], got " + s);
  }
  return t;
}

vkblr::ops::GemmF32Tile parse_f32_tile(const std::string& s) {
  vkblr::ops::GemmF32Tile t;
  char c[4] = {};
  std::istringstream in(s);
  in >> t.bm >> c[0] >> t.bn >> c[1] >> t.bk >> c[2] >> t.tm >> c[3] >> t.tn;
  if (in.fail() || !(in >> std::ws).eof() || std::count(c, c + 4, ',') != 4) {
    throw CLI::ValidationError("--tile", "expected bm,bn,bk,tm,tn, got " + s);
  }
  return t;
}

bench::LayerCase layer_case(const std::string& text) {
  try {
    return bench::parse_layer_case(text);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--case", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkblr-bench: GPU timings of vkblr's kernels"};
  app.require_subcommand(1);
  bool json = false, validate = false;
  app.add_flag("--json", json, "Print the results as JSON on stdout");
  app.add_flag("--validate", validate, "Khronos validation on (slow; for checking the benchmark itself)");

  CLI::App* gemm = app.add_subcommand("gemm", "GEMM rates (default: the seed's mm_rate shapes, every mode)");
  std::vector<std::string> shapes, tiles;
  std::vector<std::string> modes{"plane", "bits_n", "bits_t"};
  bench::GemmBenchOptions gopt;
  gemm->add_option("--shape", shapes, "MxNxK (repeatable)");
  gemm->add_option("--mode", modes, "plane, bits_n, bits_t, plain")->delimiter(',');
  gemm->add_option("--tile", tiles, "bm,bn,bk,wm,wn,stages[,prefetch] (repeatable; default: the library's choice)");
  gemm->add_option("--reps", gopt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  gemm->add_option("--warmup", gopt.warmup, "untimed runs of the whole batch first");
  gemm->add_flag("--check", gopt.check, "compare 256 sampled outputs of each case with an f64 host product");
  gemm->add_flag("--stats", gopt.stats,
                 "the driver's compiler statistics of each GEMM kernel (registers, spills; "
                 "VK_KHR_pipeline_executable_properties)");

  CLI::App* gemm_f32 =
      app.add_subcommand("gemm-f32", "f32 GEMM rates (default: the shapes of vkblr-fit's init on an LLM MLP layer)");
  std::vector<std::string> f32_shapes, f32_tiles;
  bench::GemmF32BenchOptions fopt;
  gemm_f32->add_option("--shape", f32_shapes, "MxNxK: out[M][N] = op(A)[M][K]·op(B)[K][N] (repeatable)");
  gemm_f32->add_flag("--ta", fopt.trans_a, "A stored transposed ([K][M])");
  gemm_f32->add_flag("--tb", fopt.trans_b, "B stored transposed ([N][K])");
  gemm_f32->add_option("--tile", f32_tiles, "bm,bn,bk,tm,tn (repeatable; default: the library's choice)");
  gemm_f32->add_option("--reps", fopt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  gemm_f32->add_option("--warmup", fopt.warmup, "untimed runs of the whole batch first");
  gemm_f32->add_flag("--check", fopt.check, "compare 256 sampled outputs of each case with an f64 host product");

  CLI::App* blr = app.add_subcommand("blr", "blr layer step times (forward + backward + sign gradients)");
  std::vector<std::string> cases;
  bench::BlrBenchOptions bopt;
  bool no_sign = false;
  blr->add_option("--case", cases, "m,n,r,ntok,P (repeatable; default: issue 5's four cases)");
  blr->add_flag("--no-sign", no_sign, "without the sign gradients");
  blr->add_option("--lanes", bopt.lanes, "paths recorded side by side (BlrShared lanes; 1 = path after path)")
      ->check(CLI::Range(1u, 64u));
  blr->add_option("--reps", bopt.reps, "steps per timed batch (>= 20)")->check(CLI::Range(20u, 100000u));
  blr->add_option("--warmup", bopt.warmup, "untimed runs of the whole batch first");

  CLI::App* train = app.add_subcommand("train", "whole training steps per second (BlrTrainer, vkblr-fit's loop)");
  std::vector<std::string> train_cases;
  bench::TrainBenchOptions topt;
  std::string sign_opt = "fact";
  bool frozen_signs = false;
  train->add_option("--case", train_cases, "m,n,r,ntok,P (repeatable; default: vkblr-fit's H200 layer at 1 bpw)");
  train->add_option("--sign-opt", sign_opt, "sign optimizer")->check(CLI::IsMember({"adam", "fact", "bop"}));
  train->add_option("--flip-budget", topt.flip_budget, "fraction of signs that may flip per step (0: no cap)");
  train->add_flag("--frozen-signs", frozen_signs, "scales only: no sign gradients or steps (vkblr-fit --sign-lr 0)");
  train->add_option("--steps", topt.steps, "timed steps (>= 20)")->check(CLI::Range(20u, 1000000u));
  train->add_option("--warmup", topt.warmup, "untimed steps first");

  CLI11_PARSE(app, argc, argv);
  try {
    vkblr::ContextOptions copt;
    copt.validation = validate;
    copt.kernel_statistics = gopt.stats;
    vkblr::Context ctx(copt);
    const vkblr::Caps& caps = ctx.caps();
    nlohmann::json report = {{"device", caps.device_name}, {"driver", caps.driver_info},
                             {"api", caps.api_version_string}, {"vkblr", std::string(vkblr::version())}};
    if (!json) std::fprintf(stderr, "device: %s (%s)\n", caps.device_name.c_str(), caps.driver_info.c_str());
    if (gemm->parsed()) {
      if (shapes.empty()) shapes = {"4096x3584x1024", "4096x1024x3584", "3584x1024x4096", "4096x6144x1024"};
      for (const auto& s : shapes) gopt.shapes.push_back(parse_shape(s));
      gopt.modes = modes;
      const vkblr::GemmKernel kernel = vkblr::default_gemm_kernel(ctx);
      for (const auto& t : tiles) gopt.tiles.push_back(parse_tile(t, kernel));
      gopt.quiet = json;
      const auto results = bench::run_gemm_bench(ctx, gopt);
      report["gemm"] = nlohmann::json::array();
      for (const auto& r : results) report["gemm"].push_back(bench::to_json(r));
    }
    if (gemm_f32->parsed()) {
      // Y = W·Ω, the Gram YᵀY (with --ta), Y·R⁻¹ at m = 4096, n = 14336, l = 1600
      if (f32_shapes.empty()) f32_shapes = {"4096x1600x14336", "1600x1600x4096", "4096x1600x1600"};
      for (const auto& s : f32_shapes) fopt.shapes.push_back(parse_shape(s));
      for (const auto& t : f32_tiles) fopt.tiles.push_back(parse_f32_tile(t));
      fopt.quiet = json;
      const auto results = bench::run_gemm_f32_bench(ctx, fopt);
      report["gemm_f32"] = nlohmann::json::array();
      for (const auto& r : results) report["gemm_f32"].push_back(bench::to_json(r));
    }
    if (blr->parsed()) {
      if (cases.empty()) {
        cases = {"3584,1024,512,4096,2", "1024,3584,512,4096,2", "6144,1024,512,4096,2", "1024,1024,256,4096,2"};
      }
      for (const auto& c : cases) bopt.cases.push_back(layer_case(c));
      bopt.sign_grads = !no_sign;
      bopt.quiet = json;
      const auto results = bench::run_blr_bench(ctx, bopt);
      report["blr"] = nlohmann::json::array();
      for (const auto& r : results) report["blr"].push_back(bench::to_json(r));
    }
    if (train->parsed()) {
      if (train_cases.empty()) train_cases = {"3584,1024,352,4096,2"};
      for (const auto& c : train_cases) topt.cases.push_back(layer_case(c));
      topt.sign_opt = vkblr::sign_opt_from_string(sign_opt);
      topt.train_signs = !frozen_signs;
      topt.quiet = json;
      const auto results = bench::run_train_bench(ctx, topt);
      report["train"] = nlohmann::json::array();
      for (const auto& r : results) report["train"].push_back(bench::to_json(r));
    }
    if (json) std::printf("%s\n", report.dump(1).c_str());
    return 0;
  } catch (const CLI::Error& e) {  // a bad --case
    return app.exit(e);
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr-bench: %s\n", e.what());
    return 1;
  }
}
