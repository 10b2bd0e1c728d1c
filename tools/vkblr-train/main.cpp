// vkblr-train — distil a whole Llama-family model with blr layers from its
// dense teacher, on the GPU (vkblr::model::LlamaTrainer): KL distillation on
// the teacher's logits, every blr layer's signs and scales trained
// together, end to end.
//
//   vkblr-train --model DIR --blr LAYERS.safetensors --train TRAIN.npy --held-out HELDOUT.npy --out OUT
//       [--windows N] [--steps 100] [--batch 8] [--lr 1e-3] [--warmup 0] [--temperature 1]
//       [--memory keep|recompute] [--blr-route dense|factored] [--micro-batches K] [--eval-every N] [--checkpoint-every N]
//       [--resume OUT/checkpoint.safetensors] [--sample N [--prompt TEXT | --prompt-ids 1,2,3]]
//   mpirun -np N vkblr-train ...       N ranks, each on its share of every step's windows
//                                      (built with vkblr::mpi)
//
// Writes OUT/blr.safetensors (the trained layers, vkblr-fit's model file
// format), OUT/report.json and OUT/curve.svg; with --checkpoint-every,
// OUT/checkpoint.safetensors. README.md says what each holds. Exit code 0
// on success, 1 on a bad input or any error (with a message naming the
// file, field or position), 2 on bad command-line usage. Under mpirun only
// rank 0 writes and prints; an error on one rank ends the whole job.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vkblr-train/train_options.hpp"
#include "vkblr-train/train_ranks.hpp"
#include "vkblr-train/train_run.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/tool_exit.hpp"
#include "vkblr/error.hpp"
#ifdef VKBLR_TRAIN_MPI
#include "vkblr-train/train_mpi.hpp"
#endif

namespace {

// A count on the command line: 0 is refused where it would mean "none" to
// nobody (steps, batch, ...).
const CLI::Validator kPositive(
    [](std::string& input) -> std::string {
      std::uint64_t value = 1;
      const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), value);
      if (ec == std::errc{} && end == input.data() + input.size() && value == 0) return "want at least 1";
      return {};
    },
    "POSITIVE");

vkblr::train::TrainOptions parse(CLI::App& app, int argc, char** argv) {
  using vkblr::train::TeacherMode;
  vkblr::train::TrainOptions o;
  for (int i = 0; i < argc; ++i) o.command_line.emplace_back(argv[i]);
  app.add_option("--model", o.model, "checkpoint directory (config.json + model.safetensors or index and shards): "
                                      "the teacher, and the student's dense parts");
  app.add_option("--blr", o.blr, "the initial blr layers: a vkblr-fit --manifest model file");
  app.add_option("--init", o.init, "make the initial blr layers from the checkpoint instead of --blr: vkblr-fit's "
                                    "Dual-SVID init of every projection of every block")
      ->check(CLI::IsMember({"dual-svid"}));
  app.add_option("--bpw", o.bpw, "--init: bits per weight of each layer (the rank by vkblr-fit's rule)");
  app.add_option("--rank", o.rank, "--init: rank per path (a multiple of 32)");
  app.add_option("--paths", o.paths, "--init: paths per layer")->check(CLI::Range(1u, 16u));
  app.add_option("--latent-init", o.latent_init, "--init: where the sign latents start: each at its Dual-SVID factor "
                                                  "entry's size (magnitude, the default) or all at ±0.1 (uniform)");
  app.add_option("--latent-rms", o.latent_rms, "where the sign latents start: --init with --latent-init magnitude: "
                                              "their rms before the clamp at 1; --blr: every latent at ±this (0.1)");
  app.add_option("--train", o.train, "training token ids, .npy: 1-D (a stream; --windows are drawn from it) or 2-D "
                                      "[windows][context] (exactly those windows)");
  app.add_option("--windows", o.windows, "windows of the context drawn from a 1-D --train stream (seeded)")
      ->check(kPositive);
  app.add_option("--held-out", o.held_out, "held-out token stream, .npy 1-D (export_tokens.py's heldout.npy)");
  app.add_option("--held-out-bytes", o.held_out_bytes,
                 "the held-out text's bytes, for bits per byte (default: from tokens.json beside --held-out)");
  app.add_option("--context", o.context, "window length (default: the model's max_position_embeddings)")
      ->check(kPositive);
  app.add_option("--out", o.out, "output directory: blr.safetensors, report.json, curve.svg, checkpoint.safetensors");
  app.add_option("--steps", o.steps, "training steps")->check(kPositive);
  app.add_option("--batch", o.batch, "windows per step")->check(kPositive);
  app.add_option("--lr", o.lr, "learning rate of the sign latents and the scales (peak of the schedule)");
  app.add_option("--sign-lr", o.sign_lr, "the sign latents' rate instead of --lr");
  app.add_option("--scale-lr", o.scale_lr, "the scales' rate instead of --lr");
  app.add_option("--warmup", o.warmup, "steps of linear warm-up before the cosine decay to 0");
  app.add_option("--temperature", o.temperature, "τ of the KL distillation loss");
  const std::map<std::string, vkblr::model::MemoryPlan> plans{{"keep", vkblr::model::MemoryPlan::keep},
                                                              {"recompute", vkblr::model::MemoryPlan::recompute}};
  app.add_option("--memory", o.memory, "activations kept from the forward (keep) or each block's recomputed before "
                                       "its backward (recompute): the same bits")
      ->transform(CLI::CheckedTransformer(plans));
  const std::map<std::string, vkblr::model::BlrRoute> routes{{"dense", vkblr::model::BlrRoute::dense},
                                                             {"factored", vkblr::model::BlrRoute::factored}};
  app.add_option("--blr-route", o.blr_route, "how the blr layers run in training: through their dense weight, "
                                             "formed each step (dense), or path by path (factored)")
      ->transform(CLI::CheckedTransformer(routes));
  app.add_option("--seed", o.seed, "seed of the windows drawn from a stream and of the data order");
  app.add_option("--micro-batches", o.micro_batches, "cut each step's windows (each rank's share) into K parts, "
                                                     "gradients accumulated before the update")
      ->check(CLI::Range(1u, 1024u));
  const std::map<std::string, TeacherMode> teachers{
      {"auto", TeacherMode::automatic}, {"cache", TeacherMode::cache}, {"live", TeacherMode::live}};
  app.add_option("--teacher", o.teacher, "the teacher's hidden states of every window computed once into device "
                                         "memory (cache), in every step (live), or cache when it fits the budget (auto)")
      ->transform(CLI::CheckedTransformer(teachers));
  app.add_option("--teacher-cache-fraction", o.teacher_cache_fraction,
                 "auto: the cache's budget, a fraction of device memory (default 0.25)");
  app.add_option("--eval-every", o.eval_every, "held-out perplexity every N steps (default: 10 points)")
      ->check(kPositive);
  app.add_option("--eval-batch", o.eval_batch, "windows per forward of the held-out measure")->check(kPositive);
  app.add_option("--checkpoint-every", o.checkpoint_every, "write OUT/checkpoint.safetensors every N steps")
      ->check(kPositive);
  app.add_option("--resume", o.resume, "continue from a checkpoint (the same settings and inputs)");
  app.add_option("--sample", o.sample, "after training, generate N tokens with the student and the teacher")
      ->check(kPositive);
  app.add_option("--prompt", o.prompt, "--sample's prompt, for the byte-level vocabulary (default \"The \")");
  app.add_option("--prompt-ids", o.prompt_ids, "--sample's prompt as token ids (any vocabulary)")->delimiter(',');
  app.add_option("--sample-seed", o.sample_seed, "--sample draws from the softmax with this seed (default: greedy)");
  app.add_flag("--quiet", o.quiet, "no progress output");
  app.add_flag("--json", o.json, "print the report as JSON on stdout");
  app.add_flag("--validate", o.validate, "Khronos validation on; any message fails the run (slow)");
  app.parse(argc, argv);
  return o;
}

int run(const vkblr::train::TrainOptions& options, vkblr::train::TrainRanks& ranks, const std::string& device) {
  const char* too_large = "the model, the token data or the sizes asked for are too large for this machine";
  return vkblr::fit::run_to_exit_status(ranks, too_large, [&]() -> std::vector<std::string> {
    vkblr::ContextOptions context_options;
    context_options.device = device;
    context_options.validation = options.validate;
    vkblr::Context ctx(context_options);
    const nlohmann::json report = vkblr::train::run_train(ctx, options, ranks);
    if (options.json && ranks.rank() == 0) std::printf("%s\n", report.dump(1).c_str());
    return ctx.validation_messages();
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkblr-train: distil a whole Llama model with blr layers from its dense teacher, on the GPU"};
  vkblr::train::TrainOptions options;
  try {
    options = parse(app, argc, argv);
    vkblr::train::check_train_options(options);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr-train: %s\nRun with --help for more information.\n", e.what());
    return 2;
  }
#ifdef VKBLR_TRAIN_MPI
  if (vkblr::fit::launched_by_mpi()) {
    std::unique_ptr<vkblr::train::MpiTrainRanks> ranks;
    std::string device;
    try {
      ranks = std::make_unique<vkblr::train::MpiTrainRanks>(argc, argv);
      device = ranks->device();
    } catch (const vkblr::Error& e) {
      if (ranks) return ranks->fail(e.what());
      std::fprintf(stderr, "vkblr-train: %s\n", e.what());
      return 1;
    }
    return run(options, *ranks, device);
  }
#else
  if (vkblr::fit::launched_by_mpi()) {
    std::fprintf(stderr, "vkblr-train: built without vkblr::mpi: under an MPI launcher every process would train "
                         "the whole model and write the same files; run it as one process\n");
    return 2;
  }
#endif
  vkblr::train::LocalRanks local;
  return run(options, local, "");
}
