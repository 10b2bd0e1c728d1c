#include "vkblr-fit/fit_job.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <format>
#include <functional>
#include <optional>
#include <span>

#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/train/fit_checkpoint.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init/init_paths.hpp"
#include "vkblr-fit/io/calibration.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/report/progress.hpp"
#include "vkblr-fit/refit/refit.hpp"
#include "vkblr-fit/refit/gpu_refit.hpp"
#include "vkblr-fit/report/device_metrics.hpp"
#include "vkblr-fit/report/stages.hpp"
#include "vkblr-fit/train/fit_batches.hpp"
#include "vkblr-fit/train/latent_start.hpp"
#include "vkblr-fit/train/train_steps.hpp"
#include "vkblr-fit/train/trainer_config.hpp"
#include "vkblr-fit/report/svg_chart.hpp"
#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/half.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/trainer.hpp"

namespace vkblr::fit {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Where a run's W and X come from (options resolved).
DataSpec data_spec(const FitOptions& o, std::uint32_t layer_rank) {
  DataSpec d;
  d.weight_path = o.weight_path;
  d.weight_tensor = o.tensor;
  d.activations_path = o.activations_path;
  d.activations_tensor = o.activations_tensor;
  d.train_tokens = o.tokens;
  d.held_out_tokens = o.held_out;
  d.family = o.synthetic == "exponential" ? DataSpec::Family::exponential
             : o.synthetic == "planted"   ? DataSpec::Family::planted
                                          : DataSpec::Family::standard;
  d.synthetic_m = o.synthetic_m;
  d.synthetic_n = o.synthetic_n;
  d.family_rank = o.synthetic_rank ? o.synthetic_rank : layer_rank;
  d.activation_decay = o.activation_decay;
  d.seed = o.seed;
  d.x_memory = o.x_memory == "host"     ? DataSpec::XMemory::host
               : o.x_memory == "device" ? DataSpec::XMemory::device
                                        : DataSpec::XMemory::automatic;
  return d;
}

// The host copies the subspace init reads (--init subspace or best): W
// and the training tokens, f32.
Matrix host_weight(const DeviceData& data) {
  Matrix w(data.m, data.n);
  w.values = data.w.buffer.download<float>(w.values.size());
  return w;
}
Matrix host_training_tokens(const DeviceData& data) {
  Matrix x(data.train_tokens, data.n);
  x.values = from_f16(data.x16.download<std::uint16_t>(x.values.size()));
  return x;
}

LayerShape layer_shape_for(const FitOptions& o, std::uint32_t m, std::uint32_t n) {
  LayerShape shape{m, n, o.rank, o.paths};
  if (shape.rank == 0) shape.rank = rank_for_bpw(shape.m, shape.n, shape.paths, o.scale_dtype, o.bpw);
  check_layer_shape(shape, o.rank ? "--rank" : "--bpw");
  return shape;
}

// --eval: whether W and X are those the result was fitted to, by checksum:
// {"weight": "as fitted" | "other", "activations": ...}, with a warning on
// stderr for each other one (evaluating on other tokens is a use; on
// another W, rarely).
nlohmann::json compare_inputs(const std::string& result_path, const InputChecksums& fitted, const DeviceData& in) {
  const auto compare = [&](const char* what, const std::string& source, std::uint64_t given, std::uint64_t fit) {
    if (given == fit) return "as fitted";
    std::fprintf(stderr, "vkblr-fit: warning: %s %s is not the one %s was fitted to (checksum %s, the fit's %s)\n",
                 what, source.c_str(), result_path.c_str(), checksum_hex(given).c_str(), checksum_hex(fit).c_str());
    return "other";
  };
  return {{"weight", compare("W", in.weight_source, in.weight_hash, fitted.weight)},
          {"activations", compare("X", in.activation_source, in.activation_hash, fitted.activations)}};
}

// ---- the stages of run_fit, in order -----------------------------------

// load: W and X on the device once (io/device_data.hpp), and the layer's
// shape (its rank from --rank or --bpw).
struct LoadedLayer {
  DeviceData data;
  LayerShape shape;
  BitsPerWeight bpw;
};

LoadedLayer load_stage(Context& ctx, const FitOptions& o, StageProgress& stages) {
  stages.begin(Stage::load, 1, "inputs");
  // the synthetic families' rank is the layer's (known before the data for synthetic W)
  const std::uint32_t family_rank = o.weight_path.empty() ? layer_shape_for(o, o.synthetic_m, o.synthetic_n).rank : 0;
  LoadedLayer in{load_device_data(ctx, data_spec(o, family_rank)), {}, {}};
  in.shape = layer_shape_for(o, in.data.m, in.data.n);
  in.bpw = bits_per_weight(in.shape, o.scale_dtype);
  stages.update(1);
  stages.end();
  const DeviceData& d = in.data;
  stages.say(std::format("vkblr-fit: W {}x{} ({}), X {} train + {} held-out tokens ({}){}", in.shape.m, in.shape.n,
                         d.weight_source, d.train_tokens, d.held_out_tokens, d.activation_source,
                         d.x_in_host_memory ? ", in host memory (read over the bus)" : ""));
  stages.say(std::format("layer: {} paths of rank {}; {}", in.shape.paths, in.shape.rank, in.bpw.formula()));
  return in;
}

// statistics: the dense targets of every batch and their norms; C = XᵀX/T
// when the refit runs.
struct Statistics {
  FitBatches batches;
  std::optional<DeviceMatrix> calibration;
};

Statistics statistics_stage(Context& ctx, FitRanks& ranks, const DeviceData& data, const FitOptions& o,
                            std::span<const FitSlice> parts, bool refit, StageProgress& stages) {
  stages.begin(Stage::statistics, refit ? 2 : 1, "products");
  Statistics st{make_fit_batches(ctx, ranks, data, o.batch, parts), std::nullopt};
  stages.update(1);
  if (refit) {
    st.calibration = calibration_gram(ctx, data);
    stages.update(2);
  }
  stages.end();
  return st;
}

// init (--init), the same on every rank (the trainer's start-up check
// compares the layers).
InitResult init_stage(Context& ctx, const DeviceData& data, const LayerShape& shape, const FitOptions& o,
                      StageProgress& stages) {
  stages.begin(Stage::init, 1, "layers");
  const bool host = o.init != InitMethod::dual_svid;  // the subspace init runs on the host
  InitResult init = initial_paths(ctx, data.w, host ? host_weight(data) : Matrix{},
                                  o.init == InitMethod::best ? host_training_tokens(data) : Matrix{}, shape, o.init,
                                  o.seed);
  stages.update(1);
  stages.end();
  std::string found;
  for (const std::uint32_t k : init.subspace.found) found += std::format("{}{}", found.empty() ? "" : ", ", k);
  if (o.init == InitMethod::best) {
    stages.say(std::format("init: training-token error Dual-SVID {:.4e}, subspace {:.4e} (binary vectors found "
                           "per path: {}, of rank {}); kept {}",
                           init.dual_svid_error, init.subspace_error, found, shape.rank,
                           init_method_name(init.used)));
  } else if (o.init == InitMethod::subspace) {
    stages.say(std::format("subspace init: binary vectors found per path: {}, of rank {}", found, shape.rank));
  }
  return init;
}

// A resumed run's layer before the checkpoint overwrites it: values of the
// right shape.
std::vector<BlrPathInit> placeholder_paths(const LayerShape& shape) {
  std::vector<BlrPathInit> paths;
  for (std::uint32_t p = 0; p < shape.paths; ++p) {
    paths.push_back({std::vector<std::uint32_t>(std::size_t{shape.m} * (shape.rank / 32), 0u),
                     std::vector<std::uint32_t>(std::size_t{shape.n} * (shape.rank / 32), 0u),
                     std::vector<float>(shape.m, 1.0f), std::vector<float>(shape.rank, 1.0f),
                     std::vector<float>(shape.n, 1.0f)});
  }
  return paths;
}

// refit on the device (refit/gpu_refit.hpp): output-aware binary least
// squares on the training tokens through C, from `paths` (the init), which
// it replaces; the layer and the sign matrices take the result. Part of
// training: the report's init stays the init's.
void refit_stage(Context& ctx, const FitOptions& o, const DeviceData& data, const DeviceMatrix& calibration,
                 const FitBatches& batches, const LayerShape& shape, std::vector<BlrPathInit>& paths,
                 BlrLayer& layer, FitTrainer& trainer, const std::function<double()>& held_out, FitProgress& prog,
                 StageProgress& stages) {
  stages.begin(Stage::refit, 1, "refits");
  const GpuRefitStats rs = gpu_refit_paths(ctx, data.w, calibration, batches.train_target_sq / o.batch, shape, paths,
                                           {.sweeps = o.refit_sweeps});
  upload_paths(layer, paths);
  for (SignMatrix& sm : trainer.trainer().signs()) sm.reinit(ctx);
  trainer.check_agreement();  // every rank refit alike (the same device computation on each)
  const double refit_error = held_out();
  prog.best.offer(refit_error, 0, LayerStage::refit, [&] { return paths; });
  stages.update(1);
  stages.end();
  stages.say(std::format("refit: {} of {} sweeps kept, {} signs changed; training-token error {:.4e} -> {:.4e}, "
                         "held-out output error {:.4e}",
                         rs.sweeps_kept, o.refit_sweeps, rs.sign_changes, rs.train_error.front(),
                         rs.train_error[rs.sweeps_kept], refit_error));
}

// The report of a trained layer `result`, but for its stage and wall
// times (the writer's, once the files' text is made).
FitReport trained_report(Context& ctx, const FitOptions& o, const LoadedLayer& in, const FitProgress& prog,
                         FitTrainer& trainer, const FitBatches& batches, DeviceMetrics& metrics,
                         const BlrResult& result, double train_s, const FitRanks& ranks, const FitSlice& part) {
  FitReport report;
  report.tool_version = std::string(vkblr::version());
  report.command_line = o.command_line;
  report.device = ctx.caps().device_name + " (" + ctx.caps().driver_info + ")";
  report.weight_source = in.data.weight_source;
  report.activation_source = in.data.activation_source;
  report.bpw = in.bpw;
  report.init = prog.init;
  report.trained.output = held_out_error(trainer, batches.eval_batches(), batches.eval_target_sq);
  const WeightErrors trained = metrics.errors(in.shape, result.paths);
  report.trained.weight = trained.weight;
  report.trained.activation_weighted = trained.activation_weighted;
  report.steps = o.steps;
  report.tokens = std::uint64_t{o.steps} * o.batch;
  report.tokens_per_s = train_s > 0 ? static_cast<double>(report.tokens) / train_s : 0;
  report.flips = total_flips(ctx, trainer.trainer(), &report.oscillations);
  report.curve = prog.curve;
  report.saved_step = prog.best.step;
  report.saved_stage = layer_stage_name(prog.best.stage);
  report.saved_held_out_error = prog.best.held_out_error;
  report.inputs = result.inputs;
  report.settings = {{"sign_opt", to_string(o.sign_opt)}, {"sign_lr", o.sign_lr},       {"scale_lr", o.scale_lr},
                     {"warmup", *o.warmup},               {"flip_budget", o.flip_budget}, {"tau", o.sign_tau},
                     {"latent_init", o.latent_init},      {"latent_rms", o.latent_rms},
                     {"hyst", o.sign_hyst},               {"clamp", o.sign_clamp},      {"bf16_state", o.bf16_state},
                     {"batch", o.batch},                  {"steps", o.steps},           {"steps_per_s", o.steps / std::max(train_s, 1e-9)},
                     {"skipped_steps", trainer.trainer().skipped()}, {"refit_sweeps", o.refit_sweeps},
                     {"init", init_method_name(o.init)},
                     {"x_memory", in.data.x_in_host_memory ? "host" : "device"}};
  report.parallel = {{"ranks", ranks.size()},
                     {"micro_batches", o.micro_batches},
                     {"tokens_per_part", part.count},
                     {"step_timing", trainer.timing()}};
  return report;
}

}  // namespace

void resolve_fit_defaults(FitOptions& o, const Caps& caps) {
  check_fit_options(o);
  const bool cpu = caps.device_type == "cpu";
  if (o.weight_path.empty()) {
    if (o.synthetic_m == 0) o.synthetic_m = cpu ? 512 : 3584;
    if (o.synthetic_n == 0) o.synthetic_n = cpu ? 512 : 1024;
  }
  if (o.batch == 0) o.batch = cpu ? 512 : 4096;
  if (o.tokens == 0) o.tokens = 8 * o.batch;
  if (o.held_out == 0) o.held_out = o.batch;
  if (o.steps == 0) o.steps = cpu ? 300 : 2000;
  if (!o.warmup) o.warmup = o.steps / 20;
  if (o.eval_every == 0) o.eval_every = std::max<std::uint32_t>(1, o.steps / 20);
  require(o.tokens % o.batch == 0, "--tokens {} is not a multiple of --batch {}", o.tokens, o.batch);
  require(o.held_out % o.batch == 0, "--held-out {} is not a multiple of --batch {}", o.held_out, o.batch);
  require(*o.warmup < o.steps, "--warmup {} must be below --steps {}", *o.warmup, o.steps);
}

DataSpec fit_data_spec(const FitOptions& resolved, std::uint32_t family_rank) { return data_spec(resolved, family_rank); }

FitReport run_fit(Context& ctx, FitOptions o) {
  LocalRanks local;
  return run_fit(ctx, std::move(o), local);
}

FitReport run_fit(Context& ctx, FitOptions o, FitRanks& ranks) {
  const Clock::time_point t_start = Clock::now();
  resolve_fit_defaults(o, ctx.caps());
  const std::vector<FitSlice> parts = rank_parts(ranks, o.batch, o.micro_batches);
  // rank 0 writes the files and prints; the others compute alike, quietly
  const bool writer = ranks.rank() == 0;
  StageProgress stages(ctx, stderr, progress_style_for(stderr, o.quiet || !writer));

  // the outputs are checked before any work (fit_outputs.hpp)
  const FitOutputPaths outputs = fit_output_paths(o);
  if (writer) {
    const std::size_t stale = prepare_fit_outputs(outputs, o);
    if (stale > 0) stages.say(std::format("removed {} stale temporary file(s) of {}.*", stale, o.out));
  }

  const LoadedLayer in = load_stage(ctx, o, stages);
  const LayerShape& shape = in.shape;
  const InputChecksums checksums{in.data.weight_hash, in.data.activation_hash};
  if (ranks.size() > 1 || o.micro_batches > 1) {
    stages.say(std::format("batches of {} tokens: {} rank(s) x {} micro-batch(es) of {} tokens", o.batch,
                           ranks.size(), o.micro_batches, parts.front().count));
  }

  const bool refit = o.resume.empty() && o.refit_sweeps > 0;
  Statistics statistics = statistics_stage(ctx, ranks, in.data, o, parts, refit, stages);
  const FitBatches& batches = statistics.batches;
  DeviceMetrics metrics(ctx, in.data.w, in.data.tokens(in.data.train_tokens, in.data.held_out_tokens),
                        in.data.held_out_tokens);

  // a resumed run restores the layer from the checkpoint instead
  InitResult init = o.resume.empty() ? init_stage(ctx, in.data, shape, o, stages)
                                     : InitResult{.paths = placeholder_paths(shape)};
  BlrLayer layer = make_blr_layer(ctx, shape.m, shape.n, shape.rank, init.paths, false);
  const std::unique_ptr<FitTrainer> trainer =
      ranks.make_trainer(ctx, layer, o.batch, o.micro_batches, trainer_config(o, batches.train_target_sq));
  add_fit_batches(*trainer, batches);

  // the held-out error is collective, measured with the scales as stored
  // (best_layer.hpp); the weight-space errors are measured on the device
  const std::function<double()> held_out_as_stored = [&] {
    return held_out_error_as_stored(*trainer, layer, o.scale_dtype, batches.eval_batches(), batches.eval_target_sq);
  };
  const nlohmann::json key = resume_key(o, shape, checksums);
  FitProgress prog;
  if (o.resume.empty()) {
    prog.init.output = held_out_as_stored();
    prog.best.offer(prog.init.output, 0, LayerStage::init, [&] { return init.paths; });
    const WeightErrors we = metrics.errors(shape, as_stored(init.paths, o.scale_dtype));
    prog.init.weight = we.weight;
    prog.init.activation_weighted = we.activation_weighted;
    // (bop keeps no latents; signs not trained have no sign matrices)
    if (o.latent_init == "magnitude" && o.sign_opt != SignOpt::bop && o.sign_lr > 0 && !init.magnitudes.empty()) {
      start_latents_from_magnitudes(ctx, trainer->trainer().signs(), init.magnitudes, o.latent_rms, o.sign_clamp);
    }
    init.magnitudes = {};
  } else {
    // every rank reads the file; the check makes sure they read the same
    prog = restore_fit_checkpoint(o.resume, key, o, shape, layer, trainer->trainer());
    trainer->check_agreement();
    stages.say(std::format("resumed from {} at step {}", o.resume, prog.next_step));
  }
  stages.say(
      std::format("init: held-out output error {:.4e}, weight error {:.4e}", prog.init.output, prog.init.weight));

  if (refit) {
    refit_stage(ctx, o, in.data, *statistics.calibration, batches, shape, init.paths, layer, *trainer,
                held_out_as_stored, prog, stages);
    statistics.calibration.reset();
  }

  // train: one replayed graph per step (per part and an update with
  // micro-batches or ranks)
  const double train_s = run_train_steps(ctx,
                                         {.options = o,
                                          .trainer = *trainer,
                                          .layer = layer,
                                          .batches = batches.batches(),
                                          .held_out = held_out_as_stored,
                                          .writer = writer,
                                          .checkpoint = outputs.checkpoint,
                                          .key = key},
                                         prog, stages);

  // write: the best layer seen, as stored; evaluated as stored
  stages.begin(Stage::write, 1, "files");
  BlrResult result{shape,          o.scale_dtype, as_stored(prog.best.paths, o.scale_dtype),
                   std::string(vkblr::version()), o.command_line, checksums};
  upload_paths(layer, result.paths);
  const std::string saved_note = saved_layer_note(prog.best, prog.curve);
  FitReport report = trained_report(ctx, o, in, prog, *trainer, batches, metrics, result, train_s, ranks, parts.front());
  if (!writer) return report;
  // the report's stage times cover everything up to the files' text; the
  // write itself is timed on the terminal's line only
  report.stages = stages.to_json();
  report.wall_s = seconds_since(t_start);
  write_fit_outputs(outputs, serialize_blr_result(outputs.safetensors, result), json_file_text(to_json(report)),
                    error_chart_svg(report.curve, report.init.output,
                                    std::format("vkblr-fit {}x{}, {} paths, rank {}, {:.3f} bpw", shape.m, shape.n,
                                                shape.paths, shape.rank, in.bpw.total)));
  stages.update(1);
  stages.end();
  if (!saved_note.empty()) stages.say("vkblr-fit: " + saved_note);
  stages.say(std::format("trained: held-out output error {:.4e} (init {:.4e}, {:.2f}x lower), weight error {:.4e}; "
                         "{:.0f} steps/s, {:.3g} tokens/s; wrote {}.safetensors, .json, .svg",
                         report.trained.output, report.init.output, report.init.output / report.trained.output,
                         report.trained.weight, o.steps / std::max(train_s, 1e-9), report.tokens_per_s, o.out));
  return report;
}

nlohmann::json run_eval(Context& ctx, FitOptions o) {
  resolve_fit_defaults(o, ctx.caps());
  const BlrResult result = read_blr_result(o.eval);
  const DeviceData data = load_device_data(ctx, data_spec(o, result.shape.rank));
  require(result.shape.m == data.m && result.shape.n == data.n, "result {} is {}x{} but W ({}) is {}x{}", o.eval,
          result.shape.m, result.shape.n, data.weight_source, data.m, data.n);
  const nlohmann::json inputs = compare_inputs(o.eval, result.inputs, data);
  BlrLayer layer = make_blr_layer(ctx, result.shape.m, result.shape.n, result.shape.rank, result.paths, false);
  LocalRanks local;
  const FitSlice whole{0, o.batch};
  const FitBatches batches = make_fit_batches(ctx, local, data, o.batch, std::span(&whole, 1));
  const std::unique_ptr<FitTrainer> trainer =
      local.make_trainer(ctx, layer, o.batch, 1, trainer_config(o, batches.train_target_sq));
  add_fit_batches(*trainer, batches);
  DeviceMetrics metrics(ctx, data.w, data.tokens(data.train_tokens, data.held_out_tokens), data.held_out_tokens);
  const WeightErrors we = metrics.errors(result.shape, result.paths);
  const BitsPerWeight bpw = bits_per_weight(result.shape, result.scale_dtype);
  return {{"result", o.eval},
          {"weight", data.weight_source},
          {"activations", data.activation_source},
          {"inputs", inputs},
          {"layer", {{"m", result.shape.m}, {"n", result.shape.n}, {"rank", result.shape.rank}, {"paths", result.shape.paths}}},
          {"bpw", bpw.total},
          {"errors",
           {{"weight", we.weight},
            {"output", held_out_error(*trainer, batches.eval_batches(), batches.eval_target_sq)},
            {"activation_weighted", we.activation_weighted}}}};
}

}  // namespace vkblr::fit
