#include "vkblr-fit/fit_job.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <format>
#include <span>

#include "vkblr-fit/best_layer.hpp"
#include "vkblr-fit/blr_result.hpp"
#include "vkblr-fit/bpw.hpp"
#include "vkblr-fit/dual_svid.hpp"
#include "vkblr-fit/fit_checkpoint.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init_paths.hpp"
#include "vkblr-fit/io/calibration.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/progress.hpp"
#include "vkblr-fit/refit.hpp"
#include "vkblr-fit/refit/gpu_refit.hpp"
#include "vkblr-fit/report/device_metrics.hpp"
#include "vkblr-fit/report/stages.hpp"
#include "vkblr-fit/train/fit_batches.hpp"
#include "vkblr-fit/train/latent_start.hpp"
#include "vkblr-fit/skip_guard.hpp"
#include "vkblr-fit/svg_chart.hpp"
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

// Warm-up then cosine decay to zero over `steps`.
float schedule(float base, std::uint32_t s, std::uint32_t steps, std::uint32_t warmup) {
  if (s < warmup) return base * static_cast<float>(s + 1) / static_cast<float>(warmup);
  const double t = static_cast<double>(s - warmup) / std::max<double>(1.0, static_cast<double>(steps - warmup));
  return static_cast<float>(base * 0.5 * (1.0 + std::cos(3.141592653589793 * t)));
}

BlrTrainerConfig trainer_config(const FitOptions& o, double loss_norm) {
  BlrTrainerConfig c;
  // --sign-lr 0 keeps the signs (of the refit): no sign gradients or steps
  c.train_signs = o.sign_lr > 0;
  c.sign_init.opt = o.sign_opt;
  c.sign_init.tau = o.sign_tau;
  c.sign_init.state = o.bf16_state ? StateType::bf16 : StateType::f32;
  c.sign_init.seed = o.seed;
  c.sign_init.keep_bits0 = true;
  c.sign_step.beta1 = o.sign_beta1;
  c.sign_step.beta2 = o.sign_beta2;
  c.sign_step.eps = o.sign_eps;
  c.sign_step.clamp = o.sign_clamp;
  c.sign_step.hyst = o.sign_hyst;
  c.sign_step.flip_budget = o.flip_budget;
  // sign gradients in the units of the raw squared error, where bop's tau
  // and Adam's eps have a meaning independent of the target's size
  c.sign_step.grad_scale = static_cast<float>(loss_norm);
  c.scale_rel_floor = o.scale_rel_floor;
  c.gscale = o.gscale;
  c.loss_norm = static_cast<float>(loss_norm);
  return c;
}

std::uint64_t total_flips(Context& ctx, BlrTrainer& trainer, std::uint64_t* oscillations) {
  std::uint64_t flips = 0, osc = 0;
  for (SignMatrix& sm : trainer.signs()) {
    const SignTelemetry t = sm.telemetry(ctx);
    flips += t.total_flips;  // (it counts the last step's flips already)
    osc += t.oscillations;
  }
  if (oscillations) *oscillations = osc;
  return flips;
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

  // load: W and X on the device once (io/device_data.hpp)
  stages.begin(Stage::load, 1, "inputs");
  // the synthetic families' rank is the layer's (known before the data for synthetic W)
  const std::uint32_t family_rank = o.weight_path.empty() ? layer_shape_for(o, o.synthetic_m, o.synthetic_n).rank : 0;
  const DeviceData data = load_device_data(ctx, data_spec(o, family_rank));
  const InputChecksums checksums{data.weight_hash, data.activation_hash};
  const LayerShape shape = layer_shape_for(o, data.m, data.n);
  const BitsPerWeight bpw = bits_per_weight(shape, o.scale_dtype);
  stages.update(1);
  stages.end();
  stages.say(std::format("vkblr-fit: W {}x{} ({}), X {} train + {} held-out tokens ({}){}", shape.m, shape.n,
                         data.weight_source, data.train_tokens, data.held_out_tokens, data.activation_source,
                         data.x_in_host_memory ? ", in host memory (read over the bus)" : ""));
  stages.say(std::format("layer: {} paths of rank {}; {}", shape.paths, shape.rank, bpw.formula()));
  if (ranks.size() > 1 || o.micro_batches > 1) {
    stages.say(std::format("batches of {} tokens: {} rank(s) x {} micro-batch(es) of {} tokens", o.batch,
                           ranks.size(), o.micro_batches, parts.front().count));
  }

  // statistics: the dense targets of every batch, their norms; C = XᵀX/T
  // for the refit
  const bool refit = o.resume.empty() && o.refit_sweeps > 0;
  stages.begin(Stage::statistics, refit ? 2 : 1, "products");
  const FitBatches batches = make_fit_batches(ctx, ranks, data, o.batch, parts);
  stages.update(1);
  std::optional<DeviceMatrix> calibration;
  if (refit) {
    calibration = calibration_gram(ctx, data);
    stages.update(2);
  }
  stages.end();
  DeviceMetrics metrics(ctx, data.w, data.tokens(data.train_tokens, data.held_out_tokens), data.held_out_tokens);

  // init (--init) on every rank (the same on each: the trainer's start-up
  // check compares the layers); a resumed run restores it from the checkpoint
  std::vector<BlrPathInit> init_paths;
  std::vector<SignMagnitudes> magnitudes;  // Dual-SVID's, for --latent-init magnitude
  if (o.resume.empty()) {
    stages.begin(Stage::init, 1, "layers");
    const bool host = o.init != InitMethod::dual_svid;  // the subspace init runs on the host
    InitResult init = initial_paths(ctx, data.w, host ? host_weight(data) : Matrix{},
                                    o.init == InitMethod::best ? host_training_tokens(data) : Matrix{}, shape, o.init,
                                    o.seed);
    init_paths = std::move(init.paths);
    magnitudes = std::move(init.magnitudes);
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
  } else {
    // placeholder values of the right shape; the checkpoint overwrites them
    for (std::uint32_t p = 0; p < shape.paths; ++p) {
      init_paths.push_back({std::vector<std::uint32_t>(std::size_t{shape.m} * (shape.rank / 32), 0u),
                            std::vector<std::uint32_t>(std::size_t{shape.n} * (shape.rank / 32), 0u),
                            std::vector<float>(shape.m, 1.0f), std::vector<float>(shape.rank, 1.0f),
                            std::vector<float>(shape.n, 1.0f)});
    }
  }
  BlrLayer layer = make_blr_layer(ctx, shape.m, shape.n, shape.rank, init_paths, false);
  const std::unique_ptr<FitTrainer> trainer =
      ranks.make_trainer(ctx, layer, o.batch, o.micro_batches, trainer_config(o, batches.train_target_sq));
  add_fit_batches(*trainer, batches);

  // the held-out error is collective, measured with the scales as stored
  // (best_layer.hpp); the weight-space errors are measured on the device
  const auto held_out_as_stored = [&] {
    return held_out_error_as_stored(*trainer, layer, o.scale_dtype, batches.eval_batches(), batches.eval_target_sq);
  };
  const nlohmann::json key = resume_key(o, shape, checksums);
  FitProgress prog;
  if (o.resume.empty()) {
    prog.init.output = held_out_as_stored();
    prog.best.offer(prog.init.output, 0, LayerStage::init, [&] { return init_paths; });
    const WeightErrors we = metrics.errors(shape, as_stored(init_paths, o.scale_dtype));
    prog.init.weight = we.weight;
    prog.init.activation_weighted = we.activation_weighted;
    // (bop keeps no latents; signs not trained have no sign matrices)
    if (o.latent_init == "magnitude" && o.sign_opt != SignOpt::bop && o.sign_lr > 0 && !magnitudes.empty()) {
      start_latents_from_magnitudes(ctx, trainer->trainer().signs(), magnitudes, o.latent_rms, o.sign_clamp);
    }
    magnitudes = {};
  } else {
    // every rank reads the file; the check makes sure they read the same
    prog = restore_fit_checkpoint(o.resume, key, o, shape, layer, trainer->trainer());
    trainer->check_agreement();
    stages.say(std::format("resumed from {} at step {}", o.resume, prog.next_step));
  }
  stages.say(
      std::format("init: held-out output error {:.4e}, weight error {:.4e}", prog.init.output, prog.init.weight));

  // refit on the device (refit/gpu_refit.hpp): output-aware binary least
  // squares on the training tokens through C; part of training (the
  // report's init stays the init's)
  if (refit) {
    stages.begin(Stage::refit, 1, "refits");
    const GpuRefitStats rs = gpu_refit_paths(ctx, data.w, *calibration, batches.train_target_sq / o.batch, shape,
                                             init_paths, {.sweeps = o.refit_sweeps});
    calibration.reset();
    upload_paths(layer, init_paths);
    for (SignMatrix& sm : trainer->trainer().signs()) sm.reinit(ctx);
    trainer->check_agreement();  // every rank refit alike (the same device computation on each)
    const double refit_error = held_out_as_stored();
    prog.best.offer(refit_error, 0, LayerStage::refit, [&] { return init_paths; });
    stages.update(1);
    stages.end();
    stages.say(std::format("refit: {} of {} sweeps kept, {} signs changed; training-token error {:.4e} -> {:.4e}, "
                           "held-out output error {:.4e}",
                           rs.sweeps_kept, o.refit_sweeps, rs.sign_changes, rs.train_error.front(),
                           rs.train_error[rs.sweeps_kept], refit_error));
  }

  // train: one replayed graph per step (per part and an update with
  // micro-batches or ranks)
  stages.begin(Stage::train, o.steps, "steps");
  stages.update(prog.next_step);
  std::uint64_t flips_before = total_flips(ctx, trainer->trainer(), nullptr);
  std::uint32_t last_eval_step = prog.next_step;
  double train_s = prog.train_s;
  SkipGuard skip_guard(o);
  for (std::uint32_t s = prog.next_step; s < o.steps; ++s) {
    const Clock::time_point t0 = Clock::now();
    const StepResult step = trainer->step(s % batches.batches(), schedule(o.sign_lr, s, o.steps, *o.warmup),
                                          schedule(o.scale_lr, s, o.steps, *o.warmup));
    train_s += seconds_since(t0);
    skip_guard.after_step(s, step.applied, trainer->trainer().skipped());
    const bool last = s + 1 == o.steps;
    if ((s + 1) % o.eval_every == 0 || last) {
      const double err = held_out_as_stored();
      prog.curve.push_back({s + 1, err});
      prog.best.offer(err, s + 1, LayerStage::training, [&] { return download_paths(layer); });
      const std::uint64_t flips = total_flips(ctx, trainer->trainer(), nullptr);
      const double flips_per_step =
          static_cast<double>(flips - flips_before) / std::max<std::uint32_t>(1, s + 1 - last_eval_step);
      const double tokens_per_s =
          static_cast<double>(s + 1 - prog.next_step) * o.batch / std::max(train_s - prog.train_s, 1e-9);
      stages.update(s + 1, std::format("held-out {:.4e}  {:.0f} flips/step  {:.3g} tok/s", err, flips_per_step,
                                       tokens_per_s));
      flips_before = flips;
      last_eval_step = s + 1;
    }
    if (writer && o.checkpoint_every && (s + 1) % o.checkpoint_every == 0 && !last) {
      FitProgress snap = prog;
      snap.next_step = s + 1;
      snap.train_s = train_s;
      write_fit_checkpoint(outputs.checkpoint, key, layer, trainer->trainer(), snap);
    }
  }
  stages.end();

  // write: the best layer seen, as stored; evaluated as stored
  stages.begin(Stage::write, 1, "files");
  BlrResult result{shape,          o.scale_dtype, as_stored(prog.best.paths, o.scale_dtype),
                   std::string(vkblr::version()), o.command_line, checksums};
  upload_paths(layer, result.paths);
  const std::string saved_note = saved_layer_note(prog.best, prog.curve);

  FitReport report;
  report.tool_version = std::string(vkblr::version());
  report.command_line = o.command_line;
  report.device = ctx.caps().device_name + " (" + ctx.caps().driver_info + ")";
  report.weight_source = data.weight_source;
  report.activation_source = data.activation_source;
  report.bpw = bpw;
  report.init = prog.init;
  report.trained.output = held_out_error(*trainer, batches.eval_batches(), batches.eval_target_sq);
  const WeightErrors trained = metrics.errors(shape, result.paths);
  report.trained.weight = trained.weight;
  report.trained.activation_weighted = trained.activation_weighted;
  report.steps = o.steps;
  report.tokens = std::uint64_t{o.steps} * o.batch;
  report.tokens_per_s = train_s > 0 ? static_cast<double>(report.tokens) / train_s : 0;
  report.flips = total_flips(ctx, trainer->trainer(), &report.oscillations);
  report.curve = prog.curve;
  report.saved_step = prog.best.step;
  report.saved_stage = layer_stage_name(prog.best.stage);
  report.saved_held_out_error = prog.best.held_out_error;
  report.inputs = checksums;
  report.settings = {{"sign_opt", to_string(o.sign_opt)}, {"sign_lr", o.sign_lr},       {"scale_lr", o.scale_lr},
                     {"warmup", *o.warmup},               {"flip_budget", o.flip_budget}, {"tau", o.sign_tau},
                     {"latent_init", o.latent_init},      {"latent_rms", o.latent_rms},
                     {"hyst", o.sign_hyst},               {"clamp", o.sign_clamp},      {"bf16_state", o.bf16_state},
                     {"batch", o.batch},                  {"steps", o.steps},           {"steps_per_s", o.steps / std::max(train_s, 1e-9)},
                     {"skipped_steps", trainer->trainer().skipped()}, {"refit_sweeps", o.refit_sweeps},
                     {"init", init_method_name(o.init)},
                     {"x_memory", data.x_in_host_memory ? "host" : "device"}};
  report.parallel = {{"ranks", ranks.size()},
                     {"micro_batches", o.micro_batches},
                     {"tokens_per_part", parts.front().count},
                     {"step_timing", trainer->timing()}};
  if (!writer) return report;
  // the report's stage times cover everything up to the files' text; the
  // write itself is timed on the terminal's line only
  report.stages = stages.to_json();
  report.wall_s = seconds_since(t_start);
  write_fit_outputs(outputs, serialize_blr_result(outputs.safetensors, result), json_file_text(to_json(report)),
                    error_chart_svg(report.curve, report.init.output,
                                    std::format("vkblr-fit {}x{}, {} paths, rank {}, {:.3f} bpw", shape.m, shape.n,
                                                shape.paths, shape.rank, bpw.total)));
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
