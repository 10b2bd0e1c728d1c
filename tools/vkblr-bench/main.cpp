// vkblr-bench — GPU timings of vkblr's kernels (GPU timestamps, medians).
//
//   vkblr-bench gemm [--shape MxNxK]... [--mode plane,bits_n,bits_t,plain]
//                    [--tile bm,bn,bk,wm,wn,stages[,prefetch]]... [--reps N] [--warmup N] [--check] [--stats]
//   vkblr-bench gemm-f32 [--shape MxNxK]... [--ta] [--tb] [--tile bm,bn,bk,tm,tn]... [--reps N] [--warmup N]
//                    [--check]
//   vkblr-bench blr  [--case m,n,r,ntok,P]... [--no-sign] [--lanes L] [--reps N] [--warmup N]
//   vkblr-bench rows [--model ref,qwen-0.5b,llama-8b] [--op NAME,...] [--tokens N] [--reps N] [--warmup N] [--stats]
//   vkblr-bench train [--case m,n,r,ntok,P]... [--sign-opt adam|fact|bop] [--flip-budget F]
//                     [--frozen-signs] [--steps N] [--warmup N]
//   vkblr-bench attention [--case B,T,H,KVH,D]... [--kernel automatic|plain|coopmat] [--block 0|16|32|64]...
//                         [--prefetch automatic|on|off]...
//                     [--reps N] [--warmup N] [--check] [--stats]
//   vkblr-bench loss [--case tokens,hidden,vocab]... [--slice S]... [--kl [--teacher-hidden H]]
//                    [--reps N] [--warmup N]
//   vkblr-bench adamw [--n N]... [--copy none|f16|bf16] [--decay L] [--cat] [--reps N] [--warmup N]
//   vkblr-bench model [--case MODEL,SEQSxSEQ[,keep|recompute][,dense|factored]]... [--bpw B] [--paths P] [--live-teacher]
//                     [--profile [--trace FILE]] [--steps N] [--warmup N]
//   --json (before the subcommand): the results as JSON on stdout, with the
//          device, driver and the context's GEMM policy they were taken under
//
// Method: each case is recorded `reps` times into one Graph with timestamps
// around every dispatch; the graph runs `warmup` times, then once timed; the
// median over reps of the GPU time is reported (docs/benchmarks.md).
// `train` times BlrTrainer's replayed steps by wall clock (train_bench.hpp);
// `loss` a whole loss step by both (loss_bench.hpp); `adamw` one optimizer
// step's GB/s (adamw_bench.hpp); `model` whole-model distillation steps by
// wall clock (model_bench.hpp).
//
// Sizes are unsigned decimal numbers within the op's rules (bench_args.hpp,
// layer_case.hpp), checked before any device work. A case whose buffers
// would not fit the device (memory_need.hpp), or that fails to run, is
// reported with its error (text, or "error" in the JSON) and the others
// still run. Exit status: 0 when every case ran (and passed --check); 1
// when any case failed, the validation layer (--validate) reported anything
// or the device could not be used; 2 for a command-line usage error (an
// unknown flag, a malformed or out-of-rule value); --help: 0.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "adamw_bench.hpp"
#include "attention_bench.hpp"
#include "bench_args.hpp"
#include "blr_bench.hpp"
#include "gemm_bench.hpp"
#include "gemm_f32_bench.hpp"
#include "loss_bench.hpp"
#include "model_bench.hpp"
#include "rows_bench.hpp"
#include "train_bench.hpp"

namespace {

// A CLI11 check that `parse` accepts the value (its std::invalid_argument's
// message otherwise).
template <class Parse>
CLI::Validator strict(Parse parse, std::string description) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      std::move(description));
}

// A finite number in [0, 1] (CLI::Range lets NaN through).
const CLI::Validator kFraction(
    [](std::string& text) -> std::string {
      double v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc{} || end != text.data() + text.size() || !(v >= 0 && v <= 1)) {
        return "expected a number in [0, 1], got " + text;
      }
      return {};
    },
    "in [0, 1]");

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
  gemm->add_option("--shape", shapes, "MxNxK (repeatable): m >= 1, n and k multiples of 16")
      ->check(strict(bench::parse_gemm_shape, "MxNxK"));
  gemm->add_option("--mode", modes, "plane, bits_n (k a multiple of 32), bits_t (n a multiple of 32), plain")
      ->delimiter(',')
      ->check(CLI::IsMember({"plane", "bits_n", "bits_t", "plain"}));
  gemm->add_option("--tile", tiles, "bm,bn,bk,wm,wn,stages[,prefetch] (repeatable; default: the library's choice)")
      ->check(strict(bench::parse_gemm_tile, "bm,bn,bk,wm,wn,stages[,prefetch]"));
  gemm->add_option("--reps", gopt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  gemm->add_option("--warmup", gopt.warmup, "untimed runs of the whole batch first")->check(CLI::Range(0u, 100000u));
  gemm->add_flag("--check", gopt.check, "compare 256 sampled outputs of each case with an f64 host product");
  gemm->add_flag("--stats", gopt.stats,
                 "the driver's compiler statistics of each GEMM kernel (registers, spills; "
                 "VK_KHR_pipeline_executable_properties)");

  CLI::App* gemm_f32 =
      app.add_subcommand("gemm-f32", "f32 GEMM rates (default: the shapes of vkblr-fit's init on an LLM MLP layer)");
  std::vector<std::string> f32_shapes, f32_tiles;
  bench::GemmF32BenchOptions fopt;
  gemm_f32->add_option("--shape", f32_shapes, "MxNxK: out[M][N] = op(A)[M][K]·op(B)[K][N] (repeatable), sizes >= 1")
      ->check(strict(bench::parse_gemm_f32_shape, "MxNxK"));
  gemm_f32->add_flag("--ta", fopt.trans_a, "A stored transposed ([K][M])");
  gemm_f32->add_flag("--tb", fopt.trans_b, "B stored transposed ([N][K])");
  gemm_f32->add_option("--tile", f32_tiles, "bm,bn,bk,tm,tn (repeatable; default: the library's choice)")
      ->check(strict(bench::parse_gemm_f32_tile, "bm,bn,bk,tm,tn"));
  gemm_f32->add_option("--reps", fopt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  gemm_f32->add_option("--warmup", fopt.warmup, "untimed runs of the whole batch first")
      ->check(CLI::Range(0u, 100000u));
  gemm_f32->add_flag("--check", fopt.check, "compare 256 sampled outputs of each case with an f64 host product");

  CLI::App* blr = app.add_subcommand("blr", "blr layer step times (forward + backward + sign gradients)");
  std::vector<std::string> cases;
  bench::BlrBenchOptions bopt;
  bool no_sign = false;
  blr->add_option("--case", cases, "m,n,r,ntok,P (repeatable; default: issue 5's four cases)")
      ->check(strict(bench::parse_layer_case, "m,n,r,ntok,P"));
  blr->add_flag("--no-sign", no_sign, "without the sign gradients");
  blr->add_option("--lanes", bopt.lanes, "paths recorded side by side (ops::BlrShared lanes; 1 = path after path)")
      ->check(CLI::Range(1u, 64u));
  blr->add_option("--reps", bopt.reps, "steps per timed batch (>= 20)")->check(CLI::Range(20u, 100000u));
  blr->add_option("--warmup", bopt.warmup, "untimed runs of the whole batch first")->check(CLI::Range(0u, 100000u));

  CLI::App* rows = app.add_subcommand(
      "rows", "row-wise transformer ops (RMSNorm, SwiGLU, embedding, RoPE): GB/s beside a copy's, at three models' shapes");
  bench::RowsBenchOptions ropt;
  std::vector<std::string> row_models, row_ops;
  for (const auto& m : bench::rows_models()) row_models.push_back(m.name);
  rows->add_option("--model", ropt.models, "models (default: all)")->delimiter(',')->check(CLI::IsMember(row_models));
  rows->add_option("--op", ropt.ops, "ops (default: all)")->delimiter(',')->check(CLI::IsMember(bench::rows_ops()));
  rows->add_option("--tokens", ropt.tokens, "tokens per batch (default: the model's, rows_bench.hpp)")
      ->check(CLI::Range(1u, 1u << 20));
  rows->add_option("--reps", ropt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  rows->add_flag("--stats", ropt.stats, "report each kernel's compiler statistics (registers, ...)");
  rows->add_option("--warmup", ropt.warmup, "untimed runs of the whole batch first")->check(CLI::Range(0u, 100000u));

  CLI::App* train = app.add_subcommand("train", "whole training steps per second (BlrTrainer, vkblr-fit's loop)");
  std::vector<std::string> train_cases;
  bench::TrainBenchOptions topt;
  std::string sign_opt = "adam";
  bool frozen_signs = false;
  train->add_option("--case", train_cases, "m,n,r,ntok,P (repeatable; default: vkblr-fit's H200 layer at 1 bpw)")
      ->check(strict(bench::parse_layer_case, "m,n,r,ntok,P"));
  train->add_option("--sign-opt", sign_opt, "sign optimizer")->check(CLI::IsMember({"adam", "fact", "bop"}));
  train->add_option("--flip-budget", topt.flip_budget, "fraction of signs that may flip per step (0: no cap)")
      ->check(kFraction);
  train->add_flag("--frozen-signs", frozen_signs, "scales only: no sign gradients or steps (vkblr-fit --sign-lr 0)");
  train->add_option("--steps", topt.steps, "timed steps (>= 20)")->check(CLI::Range(20u, 1000000u));
  train->add_option("--warmup", topt.warmup, "untimed steps first")->check(CLI::Range(0u, 1000000u));

  CLI::App* attention =
      app.add_subcommand("attention", "causal self-attention: forward and forward + backward times, TFLOP/s");
  std::vector<std::string> attention_cases;
  std::string attention_kernel = "automatic";
  bench::AttentionBenchOptions aopt;
  attention
      ->add_option("--case", attention_cases,
                   "B,T,H,KVH,D: sequences, tokens each, heads, kv heads, head_dim (repeatable; default: the "
                   "reference model, Qwen-0.5B- and Llama-8B-class)")
      ->check(strict(bench::parse_attention_case, "B,T,H,KVH,D"));
  attention->add_option("--kernel", attention_kernel, "the kernel (automatic: the library's choice)")
      ->check(CLI::IsMember({"automatic", "plain", "coopmat", "coopmat2"}));
  attention->add_option("--reps", aopt.reps, "timed repetitions (>= 5)")->check(CLI::Range(5u, 100000u));
  attention->add_option("--warmup", aopt.warmup, "untimed runs of the whole batch first")
      ->check(CLI::Range(0u, 100000u));
  attention->add_flag("--check", aopt.check, "compare o, lse and dq of 16 sampled rows with an f64 host reference");
  attention
      ->add_option("--block", aopt.blocks,
                   "coopmat tile block: 64, 32 or 16, or 0 for the library's choice (repeatable: each case with each)")
      ->check(CLI::IsMember({0u, 16u, 32u, 64u}));
  std::vector<std::string> attention_prefetch;
  attention
      ->add_option("--prefetch", attention_prefetch,
                   "coopmat: load the next block while computing (on), or not (off); automatic: the library's "
                   "choice (repeatable: each case and block with each)")
      ->check(CLI::IsMember({"automatic", "on", "off"}));
  attention->add_flag("--stats", aopt.stats, "report each attention kernel's compiler statistics (registers, ...)");
  CLI::App* loss = app.add_subcommand(
      "loss", "a training step's loss over a large vocabulary (cross_entropy, or kl_distill with --kl), both gradients");
  std::vector<std::string> loss_cases, loss_slices;
  bench::LossBenchOptions lopt;
  loss->add_option("--case", loss_cases,
                   "tokens,hidden,vocab (repeatable; default: 4096 tokens at 512/272, 896/151936, 4096/128256)")
      ->check(strict(bench::parse_loss_case, "tokens,hidden,vocab"));
  loss->add_option("--slice", loss_slices,
                   "rows of W per slice, a multiple of 32; 0: the whole vocabulary (repeatable; default 8192 and 0)")
      ->check(strict(bench::parse_loss_slice, "a multiple of 32"));
  loss->add_flag("--kl", lopt.kl, "the KL against a teacher's logits (kl_distill) instead of the cross-entropy");
  loss->add_option("--teacher-hidden", lopt.teacher_hidden, "--kl: the teacher's hidden size (0: the student's)")
      ->check(strict(
          [](const std::string& text) {
            const std::uint32_t v = bench::parse_numbers(text, ',', 1, 1, "a number")[0];
            if (v % 16 != 0) throw std::invalid_argument("expected a multiple of 16, got " + text);
            return v;
          },
          "a multiple of 16"));
  loss->add_option("--reps", lopt.reps, "timed steps per batch (>= 3)")->check(CLI::Range(3u, 100000u));
  loss->add_option("--warmup", lopt.warmup, "untimed runs of the whole batch first")->check(CLI::Range(0u, 100000u));

  CLI::App* adamw = app.add_subcommand(
      "adamw", "one AdamW step over dense f32 parameters (ops::adam with weight decay), its GB/s");
  std::vector<std::string> adamw_sizes;
  std::string adamw_copy = "bf16";
  bench::AdamwBenchOptions wopt;
  adamw->add_option("--n", adamw_sizes,
                    "entries (repeatable; default: 272·512, 2^20, 151936·896, 128256·4096: the three models' "
                    "embeddings and a 1M-entry case)")
      ->check(strict(bench::parse_adamw_size, "an entry count >= 1"));
  adamw->add_option("--copy", adamw_copy, "the storage copy written in the same pass")
      ->check(CLI::IsMember({"none", "f16", "bf16"}));
  adamw->add_option("--decay", wopt.weight_decay, "weight decay λ in [0, 1]")->check(kFraction);
  adamw->add_flag("--cat", wopt.concat, "adam_cat (per-entry mask and floor) instead of adam");
  adamw->add_option("--reps", wopt.reps, "timed repetitions (>= 20)")->check(CLI::Range(20u, 100000u));
  adamw->add_option("--warmup", wopt.warmup, "untimed runs of the whole batch first")->check(CLI::Range(0u, 100000u));

  CLI::App* model = app.add_subcommand(
      "model", "whole-model distillation steps (LlamaTrainer) on a random model with blr projections: tokens/s");
  std::vector<std::string> model_cases;
  bench::ModelBenchOptions mopt;
  model->add_option("--case", model_cases,
                    "MODEL,SEQUENCESxSEQ[,keep|recompute][,dense|factored], MODEL ref|qwen0.5b|llama8b (repeatable; default: "
                    "ref,8x1024 and qwen0.5b,1x4096, keep and recompute)")
      ->check(strict(bench::parse_model_case, "MODEL,SEQUENCESxSEQ[,keep|recompute][,dense|factored]"));
  model->add_option("--bpw", mopt.bpw, "bits per weight of every projection (the rank for it)")
      ->check(CLI::Range(0.1, 16.0));
  model->add_option("--paths", mopt.paths, "paths per blr layer")->check(CLI::Range(1u, 8u));
  model->add_flag("--live-teacher", mopt.live_teacher, "run the teacher's forward in every step (no cache)");
  CLI::Option* model_profile =
      model->add_flag("--profile", mopt.profile, "also GPU time per dispatch name (a second, profiled trainer)");
  model->add_option("--trace", mopt.trace, "with --profile: write the profiled steps as a Chrome trace (JSON) here")
      ->needs(model_profile);
  model->add_option("--steps", mopt.steps, "timed steps (>= 3)")->check(CLI::Range(3u, 100000u));
  model->add_option("--warmup", mopt.warmup, "untimed steps first")->check(CLI::Range(0u, 100000u));

  try {
    app.parse(argc, argv);
    if (shapes.empty()) shapes = {"4096x3584x1024", "4096x1024x3584", "3584x1024x4096", "4096x6144x1024"};
    for (const auto& s : shapes) {
      gopt.shapes.push_back(bench::parse_gemm_shape(s));
      for (const auto& mode : modes) {
        try {
          bench::check_gemm_mode(gopt.shapes.back(), mode);
        } catch (const std::invalid_argument& e) {
          throw CLI::ValidationError("--shape, --mode", e.what());
        }
      }
    }
    for (const auto& t : tiles) gopt.tiles.push_back(bench::parse_gemm_tile(t));
    // Y = W·Ω, the Gram YᵀY (with --ta), Y·R⁻¹ at m = 4096, n = 14336, l = 1600
    if (f32_shapes.empty()) f32_shapes = {"4096x1600x14336", "1600x1600x4096", "4096x1600x1600"};
    for (const auto& s : f32_shapes) fopt.shapes.push_back(bench::parse_gemm_f32_shape(s));
    for (const auto& t : f32_tiles) fopt.tiles.push_back(bench::parse_gemm_f32_tile(t));
    if (cases.empty()) {
      cases = {"3584,1024,512,4096,2", "1024,3584,512,4096,2", "6144,1024,512,4096,2", "1024,1024,256,4096,2"};
    }
    for (const auto& c : cases) bopt.cases.push_back(bench::parse_layer_case(c));
    if (train_cases.empty()) train_cases = {"3584,1024,352,4096,2"};
    for (const auto& c : train_cases) topt.cases.push_back(bench::parse_layer_case(c));
    // the reference model (8 heads of 64 on 4 kv heads, sequences of 1024),
    // Qwen-0.5B-class (14 on 2, head 64, 4096), Llama-8B-class (32 on 8,
    // head 128, 4096), several sequences each
    if (attention_cases.empty()) attention_cases = {"8,1024,8,4,64", "4,4096,14,2,64", "2,4096,32,8,128"};
    for (const auto& c : attention_cases) aopt.cases.push_back(bench::parse_attention_case(c));
    // the reference model, a Qwen-0.5B-class and a Llama-8B-class head, 4096 tokens each
    if (loss_cases.empty()) loss_cases = {"4096,512,272", "4096,896,151936", "4096,4096,128256"};
    for (const auto& c : loss_cases) lopt.cases.push_back(bench::parse_loss_case(c));
    if (loss_slices.empty()) loss_slices = {"8192", "0"};
    for (const auto& s : loss_slices) lopt.slices.push_back(bench::parse_loss_slice(s));
    if (adamw_sizes.empty()) adamw_sizes = {"139264", "1048576", "136134656", "525336576"};
    for (const auto& n : adamw_sizes) wopt.sizes.push_back(bench::parse_adamw_size(n));
    if (model_cases.empty()) {
      model_cases = {"ref,8x1024,keep", "ref,8x1024,recompute", "qwen0.5b,1x4096,keep", "qwen0.5b,1x4096,recompute"};
    }
    for (const auto& c : model_cases) mopt.cases.push_back(bench::parse_model_case(c));
    if (adamw_copy == "f16") wopt.copy = vkblr::ops::CopyType::f16;
    if (adamw_copy == "bf16") wopt.copy = vkblr::ops::CopyType::bf16;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0
  }

  try {
    vkblr::ContextOptions copt;
    copt.validation = validate;
    copt.kernel_statistics = gopt.stats || aopt.stats || ropt.stats;
    vkblr::Context ctx(copt);
    const vkblr::Caps& caps = ctx.caps();
    nlohmann::json report = {{"device", caps.device_name}, {"driver", caps.driver_info},
                             {"api", caps.api_version_string}, {"vkblr", std::string(vkblr::version())},
                             {"gemm_policy", vkblr::to_string(ctx.gemm_policy())}};
    if (!json) std::fprintf(stderr, "device: %s (%s)\n", caps.device_name.c_str(), caps.driver_info.c_str());
    std::size_t cases_run = 0, cases_failed = 0;
    auto add = [&](const char* key, const auto& results) {
      report[key] = nlohmann::json::array();
      for (const auto& r : results) {
        report[key].push_back(bench::to_json(r));
        ++cases_run;
        if (bench::failed(r)) ++cases_failed;
      }
    };
    if (gemm->parsed()) {
      gopt.modes = modes;
      const vkblr::GemmKernel kernel = vkblr::default_gemm_kernel(ctx);
      for (auto& t : gopt.tiles) t.kernel = kernel;
      gopt.quiet = json;
      add("gemm", bench::run_gemm_bench(ctx, gopt));
    }
    if (gemm_f32->parsed()) {
      fopt.quiet = json;
      add("gemm_f32", bench::run_gemm_f32_bench(ctx, fopt));
    }
    if (blr->parsed()) {
      bopt.sign_grads = !no_sign;
      bopt.quiet = json;
      add("blr", bench::run_blr_bench(ctx, bopt));
    }
    if (rows->parsed()) {
      ropt.quiet = json;
      add("rows", bench::run_rows_bench(ctx, ropt));
    }
    if (train->parsed()) {
      topt.sign_opt = vkblr::sign_opt_from_string(sign_opt);
      topt.train_signs = !frozen_signs;
      topt.quiet = json;
      add("train", bench::run_train_bench(ctx, topt));
    }
    if (attention->parsed()) {
      aopt.kernel = attention_kernel == "plain"     ? vkblr::ops::AttentionKernel::plain
                    : attention_kernel == "coopmat" ? vkblr::ops::AttentionKernel::coopmat
                    : attention_kernel == "coopmat2" ? vkblr::ops::AttentionKernel::coopmat2
                                                    : vkblr::ops::AttentionKernel::automatic;
      for (const std::string& p : attention_prefetch) {
        aopt.prefetches.push_back(p == "on"    ? vkblr::ops::AttentionPrefetch::on
                                  : p == "off" ? vkblr::ops::AttentionPrefetch::off
                                               : vkblr::ops::AttentionPrefetch::automatic);
      }
      aopt.quiet = json;
      add("attention", bench::run_attention_bench(ctx, aopt));
    }
    if (loss->parsed()) {
      lopt.quiet = json;
      add("loss", bench::run_loss_bench(ctx, lopt));
    }
    if (adamw->parsed()) {
      wopt.quiet = json;
      add("adamw", bench::run_adamw_bench(ctx, wopt));
    }
    if (model->parsed()) {
      mopt.quiet = json;
      add("model", bench::run_model_bench(ctx, mopt));
    }
    if (json) std::printf("%s\n", report.dump(1).c_str());
    if (validate) {
      for (const std::string& m : ctx.validation_messages()) std::fprintf(stderr, "validation: %s\n", m.c_str());
      if (ctx.validation_message_count() > 0) return 1;
    }
    if (cases_failed > 0) {
      std::fprintf(stderr, "vkblr-bench: %zu of %zu cases failed\n", cases_failed, cases_run);
      return 1;
    }
    return 0;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr-bench: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-bench: unexpected error: %s\n", e.what());
    return 1;
  }
}
