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
#include "vkblr-fit/fit_inputs.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init_paths.hpp"
#include "vkblr-fit/input_range.hpp"
#include "vkblr-fit/metrics.hpp"
#include "vkblr-fit/progress.hpp"
#include "vkblr-fit/refit.hpp"
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

// The batches on the device, this rank's parts of each (fit_ranks.hpp):
// inputs and their dense targets y* = X·Wᵀ (one f16 GEMM per part,
// computed once). Batch b's parts are entries [b·parts, (b+1)·parts).
struct DeviceBatches {
  std::size_t parts = 1;
  std::vector<Buffer> x, target;            // training
  std::vector<Buffer> x_eval, target_eval;  // held out
  double train_target_sq = 0;               // mean over batches of ‖y*‖² (every rank's parts)
  double eval_target_sq = 0;                // Σ over held-out batches of ‖y*‖² (every rank's parts)
  std::size_t batches() const { return x.size() / parts; }
  std::size_t eval_batches() const { return x_eval.size() / parts; }
};

// ‖b‖² of a device buffer of n floats, through sumsq (64 partials summed in f64).
double device_sumsq(Context& ctx, const Buffer& b, std::uint32_t n, const Buffer& partials) {
  Recorder rec(ctx);
  rec.add(ops::sumsq(ctx, b, n, partials));
  rec.run();
  double s = 0;
  for (float p : partials.download<float>(ops::kSumsqPartials)) s += p;
  return s;
}

// Collective (FitRanks::sum once per batch).
DeviceBatches upload_batches(Context& ctx, FitRanks& ranks, const FitInputs& in, std::uint32_t batch,
                             std::span<const FitSlice> parts) {
  const auto m = static_cast<std::uint32_t>(in.w.rows), n = static_cast<std::uint32_t>(in.w.cols);
  Buffer plane = ctx.upload(to_f16(in.w.values), "fit.w16");
  Buffer act16 = ctx.buffer(std::uint64_t{batch} * n * 2, "fit.x16");
  Buffer partials = ctx.host_buffer(ops::kSumsqPartials * 4, "fit.partials");
  DeviceBatches d;
  d.parts = parts.size();
  auto add = [&](const Matrix& x, std::vector<Buffer>& xs, std::vector<Buffer>& ts) {
    double sq = 0;
    for (std::size_t first = 0; first + batch <= x.rows; first += batch) {
      double batch_sq = 0;  // this rank's parts, in order
      for (const FitSlice& part : parts) {
        const std::span<const float> rows(x.values.data() + (first + part.first) * n, std::size_t{part.count} * n);
        xs.push_back(ctx.upload(rows, "fit.x"));
        ts.push_back(ctx.buffer(std::uint64_t{part.count} * m * 4, "fit.target"));
        Recorder rec(ctx);
        rec.add(plane_linear(ctx, plane, xs.back(), act16, ts.back(), part.count, m, n, 1.0f));
        rec.run();
        batch_sq += device_sumsq(ctx, ts.back(), part.count * m, partials);
      }
      sq += ranks.sum(batch_sq, "the targets' squared norm");
    }
    return sq;
  };
  d.train_target_sq = add(in.x_train, d.x, d.target) / static_cast<double>(in.x_train.rows / batch);
  d.eval_target_sq = add(in.x_held_out, d.x_eval, d.target_eval);
  const std::string inputs = std::format("W {}, X {}", in.weight_source, in.activation_source);
  check_target_norm(d.train_target_sq, "training", inputs);
  check_target_norm(d.eval_target_sq, "held-out", inputs);
  return d;
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
    flips += t.total_flips + t.flips;
    osc += t.oscillations;
  }
  if (oscillations) *oscillations = osc;
  return flips;
}

LayerShape layer_shape_for(const FitOptions& o, const Matrix& w) {
  LayerShape shape{static_cast<std::uint32_t>(w.rows), static_cast<std::uint32_t>(w.cols), o.rank, o.paths};
  if (shape.rank == 0) shape.rank = rank_for_bpw(shape.m, shape.n, shape.paths, o.scale_dtype, o.bpw);
  check_layer_shape(shape, o.rank ? "--rank" : "--bpw");
  return shape;
}

// --eval: whether W and X are those the result was fitted to, by checksum:
// {"weight": "as fitted" | "other", "activations": ...}, with a warning on
// stderr for each other one (evaluating on other tokens is a use; on
// another W, rarely).
nlohmann::json compare_inputs(const std::string& result_path, const InputChecksums& fitted, const FitInputs& in) {
  const auto compare = [&](const char* what, const std::string& source, std::uint64_t given, std::uint64_t fit) {
    if (given == fit) return "as fitted";
    std::fprintf(stderr, "vkblr-fit: warning: %s %s is not the one %s was fitted to (checksum %s, the fit's %s)\n",
                 what, source.c_str(), result_path.c_str(), checksum_hex(given).c_str(), checksum_hex(fit).c_str());
    return "other";
  };
  return {{"weight", compare("W", in.weight_source, in.checksums.weight, fitted.weight)},
          {"activations", compare("X", in.activation_source, in.checksums.activations, fitted.activations)}};
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
  const ProgressStyle style = progress_style_for(stderr, o.quiet || !writer);
  auto say = [&](const std::string& line) {
    if (style != ProgressStyle::quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };

  // the outputs are checked before any work (fit_outputs.hpp)
  const FitOutputPaths outputs = fit_output_paths(o);
  if (writer) {
    const std::size_t stale = prepare_fit_outputs(outputs, o);
    if (stale > 0) say(std::format("removed {} stale temporary file(s) of {}.*", stale, o.out));
  }
  const FitInputs in = load_fit_inputs(o);
  const LayerShape shape = layer_shape_for(o, in.w);
  const BitsPerWeight bpw = bits_per_weight(shape, o.scale_dtype);
  say(std::format("vkblr-fit: W {}x{} ({}), X {} train + {} held-out tokens ({})", shape.m, shape.n,
                  in.weight_source, in.x_train.rows, in.x_held_out.rows, in.activation_source));
  say(std::format("layer: {} paths of rank {}; {}", shape.paths, shape.rank, bpw.formula()));
  if (ranks.size() > 1 || o.micro_batches > 1) {
    say(std::format("batches of {} tokens: {} rank(s) x {} micro-batch(es) of {} tokens", o.batch, ranks.size(),
                    o.micro_batches, parts.front().count));
  }

  // init (--init) on every rank (the same on each: the trainer's start-up
  // check compares the layers); a resumed run restores it from the checkpoint
  std::vector<BlrPathInit> init_paths;
  if (o.resume.empty()) {
    const Clock::time_point t0 = Clock::now();
    const std::vector<double> w64(in.w.values.begin(), in.w.values.end());
    const DeviceMatrix w_device = upload_matrix(ctx, w64, shape.m, shape.n, "fit.w");
    InitResult init = initial_paths(ctx, w_device, in.w, in.x_train, shape, o.init, o.seed);
    init_paths = std::move(init.paths);
    std::string found;
    for (const std::uint32_t k : init.subspace.found) found += std::format("{}{}", found.empty() ? "" : ", ", k);
    if (o.init == InitMethod::best) {
      say(std::format("init: training-token error Dual-SVID {:.4e}, subspace {:.4e} (binary vectors found per "
                      "path: {}, of rank {}); kept {}, in {:.1f} s",
                      init.dual_svid_error, init.subspace_error, found, shape.rank, init_method_name(init.used),
                      seconds_since(t0)));
    } else if (o.init == InitMethod::subspace) {
      say(std::format("subspace init in {:.1f} s; binary vectors found per path: {}, of rank {}", seconds_since(t0),
                      found, shape.rank));
    } else {
      say(std::format("Dual-SVID init in {:.1f} s", seconds_since(t0)));
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
  const DeviceBatches data = upload_batches(ctx, ranks, in, o.batch, parts);
  const std::unique_ptr<FitTrainer> trainer =
      ranks.make_trainer(ctx, layer, o.batch, o.micro_batches, trainer_config(o, data.train_target_sq));
  for (std::size_t b = 0; b < data.batches(); ++b) {
    trainer->add_batch(std::span(data.x).subspan(b * data.parts, data.parts),
                       std::span(data.target).subspan(b * data.parts, data.parts));
  }
  for (std::size_t b = 0; b < data.eval_batches(); ++b) {
    trainer->add_eval_batch(std::span(data.x_eval).subspan(b * data.parts, data.parts),
                            std::span(data.target_eval).subspan(b * data.parts, data.parts));
  }

  // the host-side metrics are rank 0's alone (its report); the held-out
  // error is collective, measured with the scales as stored (best_layer.hpp)
  const auto held_out_as_stored = [&] {
    return held_out_error_as_stored(*trainer, layer, o.scale_dtype, data.eval_batches(), data.eval_target_sq);
  };
  const nlohmann::json key = resume_key(o, shape, in.checksums);
  FitProgress prog;
  if (o.resume.empty()) {
    prog.init.output = held_out_as_stored();
    prog.best.offer(prog.init.output, 0, LayerStage::init, [&] { return init_paths; });
    if (writer) {
      const MatrixF64 w_hat = reconstruct_weight(shape, as_stored(init_paths, o.scale_dtype));
      prog.init.weight = relative_weight_error(w_hat, in.w);
      prog.init.activation_weighted = activation_weighted_error(w_hat, in.w, in.x_held_out);
    }
  } else {
    // every rank reads the file; the check makes sure they read the same
    prog = restore_fit_checkpoint(o.resume, key, o, shape, layer, trainer->trainer());
    trainer->check_agreement();
    say(std::format("resumed from {} at step {}", o.resume, prog.next_step));
  }
  say(std::format("init: held-out output error {:.4e}, weight error {:.4e}", prog.init.output, prog.init.weight));
  // host refit (refit.hpp): output-aware binary least squares on the
  // training tokens; part of training (the report's init stays the init's)
  if (o.resume.empty() && o.refit_sweeps > 0) {
    const Clock::time_point t0 = Clock::now();
    const RefitStats rs = refit_paths(in.w, in.x_train, shape, init_paths, {.sweeps = o.refit_sweeps});
    upload_paths(layer, init_paths);
    for (SignMatrix& sm : trainer->trainer().signs()) sm.reinit(ctx);
    trainer->check_agreement();  // every rank refit alike (a host computation on each)
    const double refit_error = held_out_as_stored();
    prog.best.offer(refit_error, 0, LayerStage::refit, [&] { return init_paths; });
    say(std::format("refit: {} sweeps in {:.1f} s, {} signs changed; training-token error {:.4e} -> {:.4e}, "
                    "held-out output error {:.4e}",
                    o.refit_sweeps, seconds_since(t0), rs.sign_changes, rs.train_error_before, rs.train_error_after,
                    refit_error));
  }

  // training: one replayed graph per step (per part and an update with
  // micro-batches or ranks)
  ProgressReporter progress(stderr, style, o.steps);
  std::uint64_t flips_before = total_flips(ctx, trainer->trainer(), nullptr);
  std::uint32_t last_eval_step = prog.next_step;
  double train_s = prog.train_s;
  SkipGuard skip_guard(o);
  for (std::uint32_t s = prog.next_step; s < o.steps; ++s) {
    const Clock::time_point t0 = Clock::now();
    const StepResult step = trainer->step(s % data.batches(), schedule(o.sign_lr, s, o.steps, *o.warmup),
                                          schedule(o.scale_lr, s, o.steps, *o.warmup));
    train_s += seconds_since(t0);
    skip_guard.after_step(s, step.applied, trainer->trainer().skipped());
    const bool last = s + 1 == o.steps;
    if ((s + 1) % o.eval_every == 0 || last) {
      const double err = held_out_as_stored();
      prog.curve.push_back({s + 1, err});
      prog.best.offer(err, s + 1, LayerStage::training, [&] { return download_paths(layer); });
      const std::uint64_t flips = total_flips(ctx, trainer->trainer(), nullptr);
      progress.update({s + 1, err,
                       static_cast<double>(flips - flips_before) / std::max<std::uint32_t>(1, s + 1 - last_eval_step),
                       static_cast<double>(s + 1 - prog.next_step) * o.batch / std::max(train_s - prog.train_s, 1e-9),
                       seconds_since(t_start)});
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
  progress.finish();

  // the result: the best layer seen, as stored; evaluated as stored
  BlrResult result{shape,          o.scale_dtype, as_stored(prog.best.paths, o.scale_dtype),
                   std::string(vkblr::version()), o.command_line, in.checksums};
  upload_paths(layer, result.paths);
  const std::string saved_note = saved_layer_note(prog.best, prog.curve);
  if (writer && !saved_note.empty()) std::fprintf(stderr, "vkblr-fit: %s\n", saved_note.c_str());

  FitReport report;
  report.tool_version = std::string(vkblr::version());
  report.command_line = o.command_line;
  report.device = ctx.caps().device_name + " (" + ctx.caps().driver_info + ")";
  report.weight_source = in.weight_source;
  report.activation_source = in.activation_source;
  report.bpw = bpw;
  report.init = prog.init;
  report.trained.output = held_out_error(*trainer, data.eval_batches(), data.eval_target_sq);
  if (writer) {
    const MatrixF64 w_hat = reconstruct_weight(shape, result.paths);
    report.trained.weight = relative_weight_error(w_hat, in.w);
    report.trained.activation_weighted = activation_weighted_error(w_hat, in.w, in.x_held_out);
  }
  report.steps = o.steps;
  report.tokens = std::uint64_t{o.steps} * o.batch;
  report.wall_s = seconds_since(t_start);
  report.tokens_per_s = train_s > 0 ? static_cast<double>(report.tokens) / train_s : 0;
  report.flips = total_flips(ctx, trainer->trainer(), &report.oscillations);
  report.curve = prog.curve;
  report.saved_step = prog.best.step;
  report.saved_stage = layer_stage_name(prog.best.stage);
  report.saved_held_out_error = prog.best.held_out_error;
  report.inputs = in.checksums;
  report.settings = {{"sign_opt", to_string(o.sign_opt)}, {"sign_lr", o.sign_lr},       {"scale_lr", o.scale_lr},
                     {"warmup", *o.warmup},               {"flip_budget", o.flip_budget}, {"tau", o.sign_tau},
                     {"hyst", o.sign_hyst},               {"clamp", o.sign_clamp},      {"bf16_state", o.bf16_state},
                     {"batch", o.batch},                  {"steps", o.steps},           {"steps_per_s", o.steps / std::max(train_s, 1e-9)},
                     {"skipped_steps", trainer->trainer().skipped()}, {"refit_sweeps", o.refit_sweeps},
                     {"init", init_method_name(o.init)}};
  report.parallel = {{"ranks", ranks.size()},
                     {"micro_batches", o.micro_batches},
                     {"tokens_per_part", parts.front().count},
                     {"step_timing", trainer->timing()}};
  if (!writer) return report;
  write_fit_outputs(outputs, serialize_blr_result(outputs.safetensors, result), json_file_text(to_json(report)),
                    error_chart_svg(report.curve, report.init.output,
                                    std::format("vkblr-fit {}x{}, {} paths, rank {}, {:.3f} bpw", shape.m, shape.n,
                                                shape.paths, shape.rank, bpw.total)));
  say(std::format("trained: held-out output error {:.4e} (init {:.4e}, {:.2f}x lower), weight error {:.4e}; "
                  "{:.0f} steps/s, {:.3g} tokens/s; wrote {}.safetensors, .json, .svg",
                  report.trained.output, report.init.output, report.init.output / report.trained.output,
                  report.trained.weight, o.steps / std::max(train_s, 1e-9), report.tokens_per_s, o.out));
  return report;
}

nlohmann::json run_eval(Context& ctx, FitOptions o) {
  resolve_fit_defaults(o, ctx.caps());
  const BlrResult result = read_blr_result(o.eval);
  const FitInputs in = load_fit_inputs(o);
  require(result.shape.m == in.w.rows && result.shape.n == in.w.cols,
          "result {} is {}x{} but W ({}) is {}x{}", o.eval, result.shape.m, result.shape.n, in.weight_source,
          in.w.rows, in.w.cols);
  const nlohmann::json inputs = compare_inputs(o.eval, result.inputs, in);
  BlrLayer layer = make_blr_layer(ctx, result.shape.m, result.shape.n, result.shape.rank, result.paths, false);
  LocalRanks local;
  const FitSlice whole{0, o.batch};
  const DeviceBatches data = upload_batches(ctx, local, in, o.batch, std::span(&whole, 1));
  const std::unique_ptr<FitTrainer> trainer =
      local.make_trainer(ctx, layer, o.batch, 1, trainer_config(o, data.train_target_sq));
  for (std::size_t b = 0; b < data.eval_batches(); ++b) {
    trainer->add_eval_batch(std::span(data.x_eval).subspan(b, 1), std::span(data.target_eval).subspan(b, 1));
  }
  const MatrixF64 w_hat = reconstruct_weight(result.shape, result.paths);
  const BitsPerWeight bpw = bits_per_weight(result.shape, result.scale_dtype);
  return {{"result", o.eval},
          {"weight", in.weight_source},
          {"activations", in.activation_source},
          {"inputs", inputs},
          {"layer", {{"m", result.shape.m}, {"n", result.shape.n}, {"rank", result.shape.rank}, {"paths", result.shape.paths}}},
          {"bpw", bpw.total},
          {"errors",
           {{"weight", relative_weight_error(w_hat, in.w)},
            {"output", held_out_error(*trainer, data.eval_batches(), data.eval_target_sq)},
            {"activation_weighted", activation_weighted_error(w_hat, in.w, in.x_held_out)}}}};
}

}  // namespace vkblr::fit
