#include "vkblr-fit/train/train_steps.hpp"

#include <algorithm>
#include <chrono>
#include <format>

#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr-fit/train/skip_guard.hpp"
#include "vkblr-fit/train/trainer_config.hpp"

namespace vkblr::fit {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

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

double run_train_steps(Context& ctx, const TrainSteps& run, FitProgress& prog, StageProgress& stages) {
  const FitOptions& o = run.options;
  stages.begin(Stage::train, o.steps, "steps");
  stages.update(prog.next_step);
  std::uint64_t flips_before = total_flips(ctx, run.trainer.trainer(), nullptr);
  std::uint32_t last_eval_step = prog.next_step;
  double train_s = prog.train_s;
  SkipGuard skip_guard(o);
  for (std::uint32_t s = prog.next_step; s < o.steps; ++s) {
    const Clock::time_point t0 = Clock::now();
    const StepResult step = run.trainer.step(s % run.batches, scheduled_rate(o.sign_lr, s, o.steps, *o.warmup),
                                             scheduled_rate(o.scale_lr, s, o.steps, *o.warmup));
    train_s += seconds_since(t0);
    skip_guard.after_step(s, step.applied, run.trainer.trainer().skipped());
    const bool last = s + 1 == o.steps;
    if ((s + 1) % o.eval_every == 0 || last) {
      const double err = run.held_out();
      prog.curve.push_back({s + 1, err});
      prog.best.offer(err, s + 1, LayerStage::training, [&] { return download_paths(run.layer); });
      const std::uint64_t flips = total_flips(ctx, run.trainer.trainer(), nullptr);
      const double flips_per_step =
          static_cast<double>(flips - flips_before) / std::max<std::uint32_t>(1, s + 1 - last_eval_step);
      const double tokens_per_s =
          static_cast<double>(s + 1 - prog.next_step) * o.batch / std::max(train_s - prog.train_s, 1e-9);
      stages.update(s + 1, std::format("held-out {:.4e}  {:.0f} flips/step  {:.3g} tok/s", err, flips_per_step,
                                       tokens_per_s));
      flips_before = flips;
      last_eval_step = s + 1;
    }
    if (run.writer && o.checkpoint_every && (s + 1) % o.checkpoint_every == 0 && !last) {
      FitProgress snap = prog;
      snap.next_step = s + 1;
      snap.train_s = train_s;
      write_fit_checkpoint(run.checkpoint, run.key, run.layer, run.trainer.trainer(), snap);
    }
  }
  stages.end();
  return train_s;
}

}  // namespace vkblr::fit
