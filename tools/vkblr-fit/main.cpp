// vkblr-fit — distil a dense linear layer W (m×n) into a binary low-rank
// layer on the GPU: Dual-SVID init, then training of signs and scales on
// calibration activations against the dense layer's outputs.
//
//   vkblr-fit                         a synthetic LLM-like layer (runs out of the box)
//   vkblr-fit --weight W.safetensors --tensor NAME [--activations X.npy] [--bpw 1.0 | --rank R]
//   vkblr-fit --eval out.safetensors [--weight ...]   re-evaluate a saved layer
//   vkblr-fit --manifest job.json [--resume]          every layer of a checkpoint
//                                     (manifest/run_manifest.hpp)
//   vkblr-fit --manifest job.json --model-bpw B       ... under one bit budget
//                                     (manifest/model_allocation.hpp)
//   mpirun -np N vkblr-fit ...        N ranks, each on its slice of every batch,
//                                     or with --manifest on its share of the layers
//                                     (built with vkblr::mpi; docs/mpi.md)
//
// Writes <out>.safetensors (the layer), <out>.json (the report) and
// <out>.svg (held-out error against step); with --manifest, the same three
// for all the layers, and <out>.layers/. Exit code 0 on success, 1 on a
// bad input or any error (with a message), 2 on bad command-line usage.
// Under mpirun only rank 0 writes the outputs (with --manifest every rank
// writes its layers' files into <out>.layers/ and prints its progress); an
// error on one rank of several ends the whole job (nonzero exit of mpirun).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr-fit/manifest/layer_settings.hpp"
#include "vkblr-fit/manifest/run_manifest.hpp"
#include "vkblr-fit/tool_exit.hpp"
#include "vkblr/error.hpp"
#ifdef VKBLR_FIT_MPI
#include "vkblr-fit/fit_mpi.hpp"
#endif

namespace {

// A count on the command line: 0 is refused, since in FitOptions it stands
// for the device's default, which a user who typed 0 did not ask for.
const CLI::Validator kPositiveCount(
    [](std::string& input) -> std::string {
      std::uint64_t value = 1;
      const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), value);
      if (ec == std::errc{} && end == input.data() + input.size() && value == 0) {
        return "0 is not a count here (leave the flag out for the default)";
      }
      return {};
    },
    "POSITIVE");

// --manifest and the flags that go with it: --out, --resume (without a
// value), --on-bad-layer, --model-bpw, --quiet, --json, --validate. Any
// other flag is refused with it: the manifest gives each layer's inputs
// and settings.
struct ManifestFlags {
  std::string path;
  std::string on_bad_layer = "fail";
  bool resume = false;  // --resume given (without a value)
  std::optional<double> model_bpw;
};

// Throws vkblr::Error for flags that do not go together: a --manifest
// with a single-layer flag or --resume FILE; --on-bad-layer, --model-bpw
// or a bare --resume without --manifest; and for a --model-bpw that is not
// a positive number.
void check_manifest_flags(const CLI::App& app, const vkblr::fit::FitOptions& o, const ManifestFlags& m) {
  const bool resume_given = app.get_option("--resume")->count() > 0;
  if (m.model_bpw) {
    vkblr::require(std::isfinite(*m.model_bpw) && *m.model_bpw > 0,
                   "--model-bpw {}: want a positive number of bits per weight", *m.model_bpw);
  }
  if (m.path.empty()) {
    vkblr::require(app.get_option("--on-bad-layer")->count() == 0, "--on-bad-layer goes with --manifest");
    vkblr::require(!m.model_bpw, "--model-bpw goes with --manifest: a single layer's budget is --bpw");
    vkblr::require(!resume_given || !o.resume.empty(),
                   "--resume: name the checkpoint to continue from (without a value it goes with --manifest)");
    return;
  }
  vkblr::require(o.resume.empty(), "--resume {}: with --manifest, --resume takes no value: it takes the layers "
                 "done from <out>.layers/", o.resume);
  for (const CLI::Option* option : app.get_options()) {
    const std::string flag = option->get_name(false, true);
    if (option->count() == 0 || flag == "--manifest" || flag == "--out" || flag == "--resume" ||
        flag == "--on-bad-layer" || flag == "--model-bpw" || flag == "--quiet" || flag == "--json" ||
        flag == "--validate") {
      continue;
    }
    std::string key = flag.substr(2);
    for (char& c : key) c = c == '-' ? '_' : c;
    if (key == "tau" || vkblr::fit::is_layer_setting(key)) {
      vkblr::fail("{}: not with --manifest: set \"{}\" in the manifest's \"defaults\" or in a layer's entry", flag,
                  key);
    }
    vkblr::fail("{}: not with --manifest: the manifest names every layer's inputs and settings", flag);
  }
}

vkblr::fit::FitOptions parse(CLI::App& app, int argc, char** argv, ManifestFlags& manifest) {
  vkblr::fit::FitOptions o;
  for (int i = 0; i < argc; ++i) o.command_line.emplace_back(argv[i]);
  app.add_option("--weight", o.weight_path, "W as .safetensors or .npy [m][n] (default: synthetic)");
  app.add_option("--tensor", o.tensor, "tensor name in a safetensors weight file");
  app.add_option("--activations", o.activations_path, "calibration X as .safetensors or .npy [T][n] (default: synthetic)");
  app.add_option("--activations-tensor", o.activations_tensor, "tensor name in a safetensors activations file");
  app.add_option("--activation-decay", o.activation_decay,
                 "synthetic X: covariance eigenvalues decay as (i+1)^-D (0: independent channels)")
      ->check(CLI::Range(0.0, 4.0));
  app.add_option("--synthetic-m", o.synthetic_m, "rows of the synthetic W (default: by device)")
      ->check(kPositiveCount);
  app.add_option("--synthetic-n", o.synthetic_n, "columns of the synthetic W (default: by device)")
      ->check(kPositiveCount);
  app.add_option("--synthetic", o.synthetic,
                 "synthetic family: standard (power-law W, correlated X), exponential (exp(-k/(r/6)) spectrum, "
                 "independent X with outlier channels), planted (a 2-path blr layer of rank r plus 1 % noise)")
      ->check(CLI::IsMember({"standard", "exponential", "planted"}));
  app.add_option("--synthetic-rank", o.synthetic_rank, "r of the exponential and planted families (default: the layer's rank)")
      ->check(kPositiveCount);
  app.add_option("--x-memory", o.x_memory,
                 "where X's f16 tokens live: auto (device memory when they take at most half of it), device, "
                 "host (read by the GPU over the bus at every step)")
      ->check(CLI::IsMember({"auto", "device", "host"}));
  app.add_option("--tokens", o.tokens, "training tokens (default: 8 batches)")->check(kPositiveCount);
  app.add_option("--held-out", o.held_out, "held-out tokens (default: one batch)")->check(kPositiveCount);
  app.add_option("--batch", o.batch, "tokens per step (default: 512 on a CPU device, 4096 on a GPU)")
      ->check(kPositiveCount);
  app.add_option("--micro-batches", o.micro_batches,
                 "cut each rank's slice of a batch into K equal parts, accumulated before each step")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--seed", o.seed, "seed of the synthetic data and the randomized SVD");
  auto* rank = app.add_option("--rank", o.rank, "rank per path (a multiple of 32)")->check(kPositiveCount);
  app.add_option("--bpw", o.bpw, "target bits per weight; the rank is derived")->excludes(rank);
  app.add_option("--paths", o.paths, "paths P")->check(CLI::Range(1u, 16u));
  const std::map<std::string, vkblr::fit::ScaleDtype> dtypes{{"f16", vkblr::fit::ScaleDtype::f16},
                                                             {"f32", vkblr::fit::ScaleDtype::f32}};
  app.add_option("--scale-dtype", o.scale_dtype, "dtype of stored scales (f16, f32)")
      ->transform(CLI::CheckedTransformer(dtypes, CLI::ignore_case));
  app.add_option("--steps", o.steps, "training steps (default: 300 on a CPU device, 2000 on a GPU)")
      ->check(kPositiveCount);
  app.add_option("--warmup", o.warmup, "warm-up steps of the cosine schedules (default: 5%, rounded down)");
  std::string sign_opt = "adam";
  app.add_option("--sign-opt", sign_opt, "sign optimizer")->check(CLI::IsMember({"adam", "fact", "bop"}));
  app.add_option("--sign-lr", o.sign_lr, "sign latent learning rate (peak of the schedule; 0: signs fixed)");
  app.add_option("--sign-beta1", o.sign_beta1, "sign optimizer beta1");
  app.add_option("--sign-beta2", o.sign_beta2, "sign optimizer beta2");
  app.add_option("--sign-eps", o.sign_eps, "sign optimizer epsilon (in squared-error units)");
  app.add_option("--sign-clamp", o.sign_clamp, "latent clamp");
  app.add_option("--sign-hyst", o.sign_hyst, "hysteresis half-width of the sign update");
  app.add_option("--tau", o.sign_tau, "latent init s·tau; bop: the flip threshold");
  app.add_option("--latent-init", o.latent_init,
                 "adam/fact latents start at s·|a|, a the Dual-SVID factor entry each sign stands for, scaled to "
                 "root-mean-square --latent-rms (magnitude), or at s·tau (uniform)")
      ->check(CLI::IsMember({"magnitude", "uniform"}));
  app.add_option("--latent-rms", o.latent_rms, "root-mean-square of the magnitude latent init");
  app.add_option("--flip-budget", o.flip_budget, "at most this fraction of signs flips per step (0: no cap)");
  app.add_flag("--bf16-state", o.bf16_state, "keep sign latents and moments in bf16 (stochastic rounding)");
  app.add_option("--scale-lr", o.scale_lr, "Adam learning rate of h, l, g (peak of the schedule)");
  app.add_option("--scale-rel-floor", o.scale_rel_floor, "> 0: relative Adam steps on the scales");
  app.add_option("--eval-every", o.eval_every, "held-out error every N steps (default: 20 points)")
      ->check(kPositiveCount);
  app.add_option("--gscale", o.gscale, "gradient staging scale (a power of two, 1 to 2^24)");
  std::string init = "dual-svid";
  app.add_option("--init", init, "initial paths (dual-svid, subspace, best)")
      ->check(CLI::IsMember({"dual-svid", "subspace", "best"}));
  app.add_option("--refit-sweeps", o.refit_sweeps,
                 "sweeps of output-aware binary least squares on the GPU after the init (default 0: none)")
      ->check(CLI::Range(0u, 100u));
  app.add_option("--out", o.out, "output prefix: <out>.safetensors, .json, .svg");
  app.add_option("--checkpoint-every", o.checkpoint_every, "write <out>.ckpt every N steps");
  app.add_option("--resume", o.resume,
                 "continue from a checkpoint; with --manifest (no value): take the layers done from <out>.layers/")
      ->expected(0, 1);
  app.add_option("--eval", o.eval, "re-evaluate a saved layer against W and X (no training)");
  app.add_option("--manifest", manifest.path,
                 "fit every layer a JSON manifest names, into <out>.safetensors, .json, .svg (docs/guide.md)");
  app.add_option("--on-bad-layer", manifest.on_bad_layer,
                 "with --manifest: a layer vkblr-fit cannot fit (not 2-D, m or n not a multiple of 16, ...) fails "
                 "the run, or is skipped")
      ->check(CLI::IsMember({"fail", "skip"}));
  app.add_option("--model-bpw", manifest.model_bpw,
                 "with --manifest: bits per weight of the whole model; the ranks of the layers without their own rank "
                 "or bpw are allocated where the error falls fastest");
  app.add_flag("--quiet", o.quiet, "no progress output");
  app.add_flag("--json", o.json, "print the report as JSON on stdout");
  app.add_flag("--validate", o.validate, "Khronos validation on; any message fails the run (slow)");
  app.add_flag("--timing-barrier", o.timing_barrier,
               "under mpirun: a barrier before each gradient exchange, so the report's step timing tells the wait "
               "for slower ranks from the exchange");
  app.parse(argc, argv);
  check_manifest_flags(app, o, manifest);
  manifest.resume = app.get_option("--resume")->count() > 0;
  o.sign_opt = vkblr::sign_opt_from_string(sign_opt);
  o.init = vkblr::fit::init_method_from_string(init);
  return o;
}

// The run on this process, one of `ranks`; returns the exit status.
int run(const vkblr::fit::FitOptions& options, const ManifestFlags& manifest, vkblr::fit::FitRanks& ranks,
        const std::string& device) {
  const char* too_large = "the inputs or the sizes asked for (--tokens, --batch, --synthetic-m, ...) are too large "
                          "for this machine";
  return vkblr::fit::run_to_exit_status(ranks, too_large, [&]() -> std::vector<std::string> {
    if (!options.eval.empty() && ranks.rank() != 0) return {};  // --eval: rank 0's job
    vkblr::ContextOptions context_options;
    context_options.device = device;
    context_options.validation = options.validate;
    vkblr::Context ctx(context_options);
    if (!manifest.path.empty()) {
      vkblr::fit::ManifestOptions m;
      m.manifest = manifest.path;
      m.out = options.out;
      m.resume = manifest.resume;
      m.skip_bad_layers = manifest.on_bad_layer == "skip";
      m.model_bpw = manifest.model_bpw;
      m.quiet = options.quiet;
      m.command_line = options.command_line;
      const vkblr::fit::ManifestReport report = vkblr::fit::run_manifest(ctx, m, ranks);
      if (options.json && ranks.rank() == 0) std::printf("%s\n", vkblr::fit::to_json(report).dump(1).c_str());
    } else if (!options.eval.empty()) {
      const auto j = vkblr::fit::run_eval(ctx, options);
      std::printf("%s\n", j.dump(1).c_str());
    } else {
      const vkblr::fit::FitReport report = vkblr::fit::run_fit(ctx, options, ranks);
      if (options.json && ranks.rank() == 0) std::printf("%s\n", vkblr::fit::to_json(report).dump(1).c_str());
    }
    return ctx.validation_messages();
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkblr-fit: distil a dense weight into a binary low-rank layer on the GPU"};
  vkblr::fit::FitOptions options;
  ManifestFlags manifest;
  try {
    options = parse(app, argc, argv, manifest);
    vkblr::fit::check_fit_options(options);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr-fit: %s\nRun with --help for more information.\n", e.what());
    return 2;
  }
#ifdef VKBLR_FIT_MPI
  // under an MPI launcher: every rank trains on its slice, or fits its share
  // of a manifest's layers (fit_mpi.hpp)
  if (vkblr::fit::launched_by_mpi()) {
    std::unique_ptr<vkblr::fit::MpiRanks> ranks;
    std::string device;
    try {
      ranks = std::make_unique<vkblr::fit::MpiRanks>(argc, argv, options.timing_barrier);
      device = ranks->device();
    } catch (const vkblr::Error& e) {
      if (ranks) return ranks->fail(e.what());
      std::fprintf(stderr, "vkblr-fit: %s\n", e.what());
      return 1;
    }
    return run(options, manifest, *ranks, device);
  }
#else
  if (!manifest.path.empty() && vkblr::fit::launched_by_mpi()) {
    std::fprintf(stderr, "vkblr-fit: built without vkblr::mpi: under an MPI launcher every process would fit every "
                         "layer of the manifest and write the same files; run it as one process\n");
    return 2;
  }
  if (vkblr::fit::launched_by_mpi()) {
    std::fprintf(stderr, "vkblr-fit: built without vkblr::mpi: under an MPI launcher every process runs the whole "
                         "fit on its own\n");
  }
#endif
  vkblr::fit::LocalRanks local;
  return run(options, manifest, local, "");
}
