// BlrTrainer: a layer's training step recorded once per batch, replayed.
#include "vkblr/trainer.hpp"

#include <cmath>
#include <string>

#include "../ops/op_util.hpp"
#include "step_scalars.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/ops/train.hpp"

namespace vkblr {
namespace {

}  // namespace

struct BlrTrainer::Impl {
  Context& ctx;
  const BlrLayer& layer;  // borrowed: its buffers' contents are trained, the object is not changed
  std::uint32_t ntok;
  BlrTrainerConfig config;
  BlrScratch scratch;  // with transients of its own (config.path_lanes lanes)
  Buffer y, dy, dx;
  Buffer x_wide;  // f32 [ntok][n]: f16 batches widened (allocated by the first)
  detail::StepScalars scalars;  // the optimizers' live blocks
  Buffer loss_partials;  // host-visible: 64 partial sums of (y - target)² (mse_grad)
  Buffer grad_partials;  // sumsq partials of every gradient, checked by the guard
  Buffer segment_table;  // (offset, length) of every scale vector
  Buffer mask, floors;   // per scale entry
  Buffer moment1, moment2;
  std::vector<SignMatrix> signs;
  // where the backward forms each path's G_U, G_V: the sign matrices' kept
  // gradients (the layer's own g_u/g_v, if any, are not used)
  std::vector<BlrSignGrads> sign_grads;
  std::vector<Graph> train_graphs, eval_graphs;
  struct BatchBuffers {
    const Buffer* x;
    const Buffer* target;
    BatchInput input;
  };
  std::vector<BatchBuffers> train_batches;
  std::uint32_t applied = 0, skipped = 0;
  // split steps: the block, its layout, graph B, accumulate() calls since
  // the last apply()
  Buffer block;  // the trainer's own: layout.buffer and .summed, unless use_external_blocks
  GradientBlock layout;
  Graph apply_graph;
  std::uint32_t pending = 0;

  Impl(Context& c, const BlrLayer& l, std::uint32_t t, const BlrTrainerConfig& cfg)
      : ctx(c), layer(l), ntok(detail::dim("BlrTrainer", "ntok", t)), config(cfg),
        scratch(c, l, t, cfg.path_lanes), scalars(c) {
    layer.check("BlrTrainer");
    require(layer.scales && layer.scale_count > 0,
            "BlrTrainer: the layer has no concatenated scales (make it with make_blr_layer)");
    require(config.loss_norm > 0 && std::isfinite(config.loss_norm), "BlrTrainer: loss_norm = {}", config.loss_norm);
    require(config.sign_step.grad_scale == 1.0f,
            "BlrTrainer: sign_step.grad_scale = {} (the trainer sets it to loss_norm = {}; leave it at 1)",
            config.sign_step.grad_scale, config.loss_norm);
    y = c.buffer(std::uint64_t{ntok} * l.m * 4, "trainer.y");
    dy = c.buffer(std::uint64_t{ntok} * l.m * 4, "trainer.dy");
    dx = c.buffer(std::uint64_t{ntok} * l.n * 4, "trainer.dx");
    loss_partials = c.host_buffer(GradientBlock::kLossPartials * 4, "trainer.loss_partials");

    // per-entry mask and relative floor of the scales; padding frozen
    std::vector<float> mask_h(layer.scale_count, 0.0f), floor_h(layer.scale_count, 0.0f);
    std::vector<std::uint32_t> table;
    for (std::size_t s = 0; s < layer.segments.size(); ++s) {
      const ScaleSegment seg = layer.segments[s];
      const Scale which = BlrLayer::scale_of_segment(s);
      const bool trained = (which == Scale::h && config.train_h) || (which == Scale::l && config.train_l) ||
                           (which == Scale::g && config.train_g);
      for (std::uint32_t i = 0; i < seg.length; ++i) {
        mask_h[seg.offset + i] = trained ? 1.0f : 0.0f;
        floor_h[seg.offset + i] = config.scale_rel_floor;
      }
      table.push_back(seg.offset);
      table.push_back(seg.length);
    }
    mask = c.upload(mask_h, "trainer.mask");
    floors = c.upload(floor_h, "trainer.floors");
    segment_table = c.upload(table, "trainer.segments");
    moment1 = c.upload(std::vector<float>(layer.scale_count, 0.0f), "trainer.adam_m1");
    moment2 = c.upload(std::vector<float>(layer.scale_count, 0.0f), "trainer.adam_m2");

    // sign matrices in deferred mode with one micro-batch: G lands in the
    // kept buffers, the guard sees it, then the steps consume it
    SignInit init = config.sign_init;
    init.deferred = true;
    if (config.train_signs) {
      signs.reserve(2 * layer.paths.size());
      for (std::size_t p = 0; p < layer.paths.size(); ++p) {
        const BlrPath& path = layer.paths[p];
        signs.emplace_back(c, path.bits_u, l.m, l.r, init, static_cast<std::uint32_t>(2 * p));
        signs.emplace_back(c, path.bits_v, l.n, l.r, init, static_cast<std::uint32_t>(2 * p + 1));
      }
      for (std::size_t p = 0; p < layer.paths.size(); ++p) {
        sign_grads.push_back({&signs[2 * p].kept_gradient(), &signs[2 * p + 1].kept_gradient()});
      }
    }
    // partials: 64 per scale vector, then 64 per sign gradient
    const std::uint64_t vectors = layer.segments.size() + signs.size();
    grad_partials = c.buffer(vectors * ops::kSumsqPartials * 4, "trainer.grad_partials");
    if (config.split) make_block();
  }

  // The split mode's block (GradientBlock's layout) and graph B; the
  // pending gradients start at zero (the kept ones are, after SignMatrix's
  // init).
  void make_block() {
    std::uint64_t floats = GradientBlock::kLossPartials;
    layout.loss = 0;
    layout.scales = static_cast<std::uint32_t>(floats);
    floats += layer.scale_count;
    for (const SignMatrix& sm : signs) {
      layout.signs.push_back(static_cast<std::uint32_t>(floats));
      floats += std::uint64_t{sm.rows()} * sm.r();
      require(floats <= 0xffffffffu, "BlrTrainer: a gradient block of {} floats (at most 2^32 - 1)", floats);
    }
    layout.floats = static_cast<std::uint32_t>(floats);
    block = ctx.host_buffer(floats * 4, "trainer.gradient_block");
    block.fill(0);
    layout.buffer = &block;
    layout.summed = &block;
    Recorder zero(ctx);
    zero.fill(layer.scale_grads, 0);
    zero.run();
    apply_graph = record_apply();
  }

  // Copies between the gradient buffers and the block, either way.
  void record_block_copies(Recorder& rec, bool to_block) {
    auto copy = [&](const Buffer& gradient, std::uint32_t offset, std::uint64_t floats) {
      if (to_block) {
        rec.copy(gradient, *layout.buffer, floats * 4, 0, std::uint64_t{offset} * 4);
      } else {
        rec.copy(*layout.summed, gradient, floats * 4, std::uint64_t{offset} * 4, 0);
      }
    };
    copy(layer.scale_grads, layout.scales, layer.scale_count);
    for (std::size_t s = 0; s < signs.size(); ++s) {
      copy(signs[s].kept_gradient(), layout.signs[s], std::uint64_t{signs[s].rows()} * signs[s].r());
    }
  }

  void record_forward_loss(Recorder& rec, const Buffer& x, const Buffer& target) {
    blr_forward(rec, ctx, layer, scratch, x, y, ntok);
    rec.add(ops::mse_grad(ctx, y, target, dy, ntok * layer.m, 1.0f / config.loss_norm, loss_partials));
  }

  // The f32 inputs of a batch: x itself, or (f16) x widened into x_wide by
  // a dispatch recorded first.
  const Buffer& record_inputs(Recorder& rec, const char* op, const Buffer& x, BatchInput input) {
    const std::uint64_t elements = std::uint64_t{ntok} * layer.n;
    if (input == BatchInput::f32) {
      detail::need_bytes(op, "x", x, elements * 4);
      return x;
    }
    detail::need_bytes(op, "x (f16)", x, elements * 2);
    detail::elements_fit(op, elements);
    if (!x_wide) x_wide = ctx.buffer(elements * 4, "trainer.x_wide");
    rec.add(ops::f16_to_f32(ctx, x, x_wide, static_cast<std::uint32_t>(elements)));
    return x_wide;
  }

  Graph record_train(const Buffer& x_in, const Buffer& target, BatchInput input) {
    const char* op = "BlrTrainer::add_batch";
    detail::need_bytes(op, "target", target, std::uint64_t{ntok} * layer.m * 4);
    Recorder rec(ctx);
    const Buffer& x = record_inputs(rec, op, x_in, input);
    if (!config.split) rec.fill(layer.scale_grads, 0);  // split: zeroed by graph B
    record_forward_loss(rec, x, target);
    BlrBackward backward;
    backward.gscale = config.gscale;
    backward.sign_grads = config.train_signs;
    backward.accumulate_sign_grads = true;  // into the kept buffers (zero after a step)
    blr_backward(rec, ctx, layer, scratch, x, dy, dx, ntok, sign_grads, backward);
    if (config.split) {
      record_block_copies(rec, true);
    } else {
      record_update(rec);
    }
    return rec.finish();
  }

  // Split mode's graph B: the block back into the gradient buffers, the
  // update, the pending scale gradients zeroed (the steps zero the kept ones).
  Graph record_apply() {
    Recorder rec(ctx);
    record_block_copies(rec, false);
    record_update(rec);
    rec.fill(layer.scale_grads, 0);
    return rec.finish();
  }

  // The guard, the sign steps and Adam on the gradients in place.
  void record_update(Recorder& rec) {
    // the guard: every gradient's sumsq partials, any NaN/Inf skips the step
    const auto segments = static_cast<std::uint32_t>(layer.segments.size());
    rec.add(ops::sumsq_cat(ctx, layer.scale_grads, layer.scale_count, segment_table, segments, grad_partials));
    for (std::size_t s = 0; s < signs.size(); ++s) {
      const SignMatrix& sm = signs[s];
      const Buffer part = grad_partials.view((segments + s) * ops::kSumsqPartials * 4, ops::kSumsqPartials * 4);
      rec.add(ops::sumsq(ctx, sm.kept_gradient(), sm.rows() * sm.r(), part));
    }
    const auto partials = static_cast<std::uint32_t>((segments + signs.size()) * ops::kSumsqPartials);
    for (const std::uint32_t word : detail::StepScalars::kSkipWords) {
      rec.add(ops::finite_guard(ctx, grad_partials, partials, scalars.buffer(), word));
    }
    SignStep sign_step = config.sign_step;
    sign_step.grad_scale = config.loss_norm;  // G of ½‖y − target‖²: undoes dy's 1 / loss_norm
    sign_step.live = scalars.sign();
    // all matrices phase by phase: shared barriers (record_sign_steps)
    record_kept_sign_steps(rec, ctx, signs, sign_step);
    ops::AdamOptions adam = config.scale_adam;
    adam.live = scalars.scale();
    rec.add(ops::adam_cat(ctx, layer.scales, layer.scale_grads, moment1, moment2, mask, floors, layer.scale_count,
                          adam));
  }

  Graph record_eval(const Buffer& x_in, const Buffer& target, BatchInput input) {
    const char* op = "BlrTrainer::add_eval_batch";
    detail::need_bytes(op, "target", target, std::uint64_t{ntok} * layer.m * 4);
    Recorder rec(ctx);
    const Buffer& x = record_inputs(rec, op, x_in, input);
    record_forward_loss(rec, x, target);
    return rec.finish();
  }

  double read_sq_error() const {
    const auto p = loss_partials.download<float>(GradientBlock::kLossPartials);
    double s = 0;
    for (float v : p) s += v;
    return s;
  }

  void require_split(const char* op) const {
    require(config.split, "{}: the trainer was made without BlrTrainerConfig::split", op);
  }

  // The outcome of step t after its update ran: the guard's verdict, counters.
  StepResult finish_step(std::uint32_t t, double sq_error) {
    StepResult r;
    r.applied = !scalars.skipped();
    r.step = t;
    r.sq_error = sq_error;
    r.loss = 0.5 * r.sq_error / config.loss_norm;
    if (r.applied) {
      ++applied;
    } else {
      ++skipped;
    }
    return r;
  }
};

BlrTrainer::BlrTrainer(Context& ctx, const BlrLayer& layer, std::uint32_t ntok, const BlrTrainerConfig& config)
    : impl_(std::make_unique<Impl>(ctx, layer, ntok, config)) {}
BlrTrainer::~BlrTrainer() = default;

std::size_t BlrTrainer::add_batch(const Buffer& x, const Buffer& target, BatchInput input) {
  impl_->train_graphs.push_back(impl_->record_train(x, target, input));
  impl_->train_batches.push_back({&x, &target, input});
  return impl_->train_graphs.size() - 1;
}

std::size_t BlrTrainer::add_eval_batch(const Buffer& x, const Buffer& target, BatchInput input) {
  impl_->eval_graphs.push_back(impl_->record_eval(x, target, input));
  return impl_->eval_graphs.size() - 1;
}

StepResult BlrTrainer::step(std::size_t batch, float sign_lr, float scale_lr) {
  Impl& s = *impl_;
  require(batch < s.train_graphs.size(), "BlrTrainer::step: batch {} of {}", batch, s.train_graphs.size());
  // the rates checked (and written) before anything runs
  const std::uint32_t t = s.scalars.set("BlrTrainer::step", sign_lr, scale_lr, s.applied);
  if (s.config.split) {
    accumulate(batch);
    return apply(sign_lr, scale_lr);
  }
  if (s.config.record_every_step) {
    const Impl::BatchBuffers& b = s.train_batches[batch];
    s.train_graphs[batch] = s.record_train(*b.x, *b.target, b.input);
  }
  s.train_graphs[batch].run();
  return s.finish_step(t, s.read_sq_error());
}

double BlrTrainer::accumulate(std::size_t batch) {
  Impl& s = *impl_;
  s.require_split("BlrTrainer::accumulate");
  require(batch < s.train_graphs.size(), "BlrTrainer::accumulate: batch {} of {}", batch, s.train_graphs.size());
  if (s.config.record_every_step) {
    const Impl::BatchBuffers& b = s.train_batches[batch];
    s.train_graphs[batch] = s.record_train(*b.x, *b.target, b.input);
  }
  s.train_graphs[batch].run();
  Buffer& out = *s.layout.buffer;
  out.invalidate();
  // the loss partials of the step so far, in f32 in call order
  float partials[GradientBlock::kLossPartials];
  s.loss_partials.read(partials, sizeof partials);
  auto* loss = static_cast<float*>(out.mapped()) + s.layout.loss;
  double sq = 0;
  for (std::uint32_t i = 0; i < GradientBlock::kLossPartials; ++i) {
    loss[i] = (s.pending == 0 ? 0.0f : loss[i]) + partials[i];
    sq += partials[i];
  }
  out.flush(std::uint64_t{s.layout.loss} * 4, sizeof partials);
  ++s.pending;
  return sq;
}

StepResult BlrTrainer::apply(float sign_lr, float scale_lr) {
  Impl& s = *impl_;
  s.require_split("BlrTrainer::apply");
  require(s.pending > 0, "BlrTrainer::apply: no accumulate() since the last step");
  const std::uint32_t t = s.scalars.set("BlrTrainer::apply", sign_lr, scale_lr, s.applied);
  s.layout.summed->flush();
  if (s.config.record_every_step) s.apply_graph = s.record_apply();
  s.apply_graph.run();
  s.pending = 0;
  const auto* loss = static_cast<const float*>(s.layout.summed->mapped()) + s.layout.loss;
  double sq = 0;
  for (std::uint32_t i = 0; i < GradientBlock::kLossPartials; ++i) sq += loss[i];
  return s.finish_step(t, sq);
}

const GradientBlock& BlrTrainer::gradient_block() const {
  impl_->require_split("BlrTrainer::gradient_block");
  return impl_->layout;
}

void BlrTrainer::use_external_blocks(Buffer& out, Buffer& in) {
  Impl& s = *impl_;
  constexpr const char* op = "BlrTrainer::use_external_blocks";
  s.require_split(op);
  require(s.train_graphs.empty(), "{}: after add_batch (graph A of {} batches records the block)", op,
          s.train_graphs.size());
  const std::uint64_t bytes = std::uint64_t{s.layout.floats} * 4;
  for (const Buffer* b : {&out, &in}) {
    require(b->mapped() != nullptr && b->size() == bytes, "{}: a buffer of {} bytes{} for a block of {} bytes", op,
            b->size(), b->mapped() != nullptr ? "" : ", not host-visible", bytes);
  }
  s.layout.buffer = &out;
  s.layout.summed = &in;
  s.apply_graph = s.record_apply();  // before the own block goes: the old graph B copies from it
  s.block = Buffer();
}

double BlrTrainer::eval(std::size_t batch) {
  Impl& s = *impl_;
  require(batch < s.eval_graphs.size(), "BlrTrainer::eval: batch {} of {}", batch, s.eval_graphs.size());
  s.eval_graphs[batch].run();
  return s.read_sq_error();
}

std::uint32_t BlrTrainer::steps() const noexcept { return impl_->applied; }
std::uint32_t BlrTrainer::skipped() const noexcept { return impl_->skipped; }
std::vector<SignMatrix>& BlrTrainer::signs() noexcept { return impl_->signs; }

std::vector<std::pair<std::string, Buffer*>> BlrTrainer::state() {
  Impl& s = *impl_;
  std::vector<std::pair<std::string, Buffer*>> out{{"scales.adam_m1", &s.moment1}, {"scales.adam_m2", &s.moment2}};
  for (std::size_t i = 0; i < s.signs.size(); ++i) {
    const std::string prefix = std::format("path{}.{}.", i / 2, i % 2 == 0 ? "u" : "v");
    for (auto& [name, buffer] : s.signs[i].state()) out.emplace_back(prefix + name, buffer);
  }
  return out;
}

void BlrTrainer::set_steps(std::uint32_t applied, std::uint32_t skipped) {
  impl_->applied = applied;
  impl_->skipped = skipped;
}

}  // namespace vkblr
