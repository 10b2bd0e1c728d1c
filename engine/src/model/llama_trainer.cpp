// LlamaTrainer: a student Llama's distillation step recorded once, replayed.
#include "vkblr/model/llama_trainer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <format>
#include <map>
#include <optional>
#include <tuple>

#include "../ops/gscale.hpp"
#include "../train/step_scalars.hpp"
#include "block.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/blr_lane.hpp"
#include "vkblr/ops/embedding.hpp"
#include "vkblr/ops/logit_loss.hpp"
#include "vkblr/ops/rmsnorm.hpp"
#include "vkblr/ops/rope.hpp"
#include "vkblr/ops/train.hpp"

namespace vkblr::model {
namespace {

std::uint64_t f32_bytes(std::uint64_t a, std::uint64_t b = 1) { return a * b * 4; }

// The f16 plane [out][in] transposed to [in][out] (a download, a host
// transpose, an upload: once per dense projection of a student).
Buffer transposed_plane(Context& ctx, const Projection& p) {
  const std::vector<std::uint16_t> plane = p.plane.download<std::uint16_t>(std::uint64_t{p.out} * p.in);
  std::vector<std::uint16_t> t(plane.size());
  for (std::uint32_t o = 0; o < p.out; ++o) {
    for (std::uint32_t i = 0; i < p.in; ++i) t[std::size_t{i} * p.out + o] = plane[std::size_t{o} * p.in + i];
  }
  return ctx.upload(t, "llama.plane_t");
}

// One blr projection the trainer trains, with its optimizer state.
struct TrainedLayer {
  std::string name;  // "model.layers.B.<suffix>"
  std::size_t block = 0, slot = 0;
  BlrLayer* layer = nullptr;
  std::size_t first_sign = 0;             // its sign matrices: U0 V0 U1 V1 ... from here
  std::vector<BlrSignGrads> sign_grads;   // the kept gradients, one entry per path (empty: signs frozen)
  Buffer moment1, moment2, mask, floors;  // Adam over layer->scales
  Buffer segment_table;                   // u32 [segments][2] for the guard's sumsq_cat
};

// The buffers of one block's forward the backward reads.
struct BlockStorage {
  Buffer x_in, h1, inv1, q, k, v, attn, lse, x_mid, h2, inv2, gate, up, act;
};

}  // namespace

const char* to_string(MemoryPlan plan) noexcept { return plan == MemoryPlan::keep ? "keep" : "recompute"; }

MemoryPlan memory_plan_from_string(const std::string& name) {
  if (name == "keep") return MemoryPlan::keep;
  if (name == "recompute") return MemoryPlan::recompute;
  fail("memory plan '{}': want keep or recompute", name);
}

const char* to_string(BlrRoute route) noexcept { return route == BlrRoute::dense ? "dense" : "factored"; }

BlrRoute blr_route_from_string(const std::string& name) {
  if (name == "dense") return BlrRoute::dense;
  if (name == "factored") return BlrRoute::factored;
  fail("blr route '{}': want dense or factored", name);
}

struct LlamaTrainer::Impl {
  Context& ctx;
  io::LlamaConfig config, teacher_config;
  LlamaWeights& student;
  const LlamaWeights& teacher;
  LlamaBatch batch;
  LlamaTrainConfig settings;
  std::uint32_t tokens_per_step = 0;

  std::vector<TrainedLayer> layers;
  std::vector<SignMatrix> signs;
  // the blr transients, one set per projection slot (the projections of
  // one input run side by side), lanes for every path
  std::array<std::unique_ptr<ops::BlrShared>, detail::kSlots> shared;
  std::map<const BlrLayer*, BlrScratch> scratch_by_layer;  // keep: a, c of every layer
  // recompute: one per slot and shape, shared by the blocks (two slots of a
  // block never share one: the backward of one reads it after the other's
  // forward)
  std::map<std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t, std::size_t>, BlrScratch>
      scratch_by_slot;
  // dense route: one staging per slot and shape, shared by the blocks
  std::map<std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t, std::size_t>,
           std::unique_ptr<BlrDense>>
      dense_by_slot;

  Buffer rope, positions, ids, rows, staged, blr_out;
  Buffer x, x_work;  // the stream; recompute: the block's stream again
  std::vector<BlockStorage> kept;  // keep: one per block; recompute: x_in only per block, kept[0] the rest
  Buffer hidden_out, inv_final, dhidden_out;
  Buffer dx, dh, dh_part, dh_part2, dattn, dq, dk, dv, dact, dgate, dup, dnorm;
  Buffer teacher_h;
  const Buffer* teacher_cache = nullptr;
  std::uint64_t teacher_cache_rows = 0;
  std::unique_ptr<LlamaForward> teacher_forward;
  ops::LogitLossScratch loss_scratch;
  Buffer loss;  // u32 [4], kl_distill's
  std::unique_ptr<vkblr::detail::StepScalars> scalars;  // the optimizers' live blocks
  Buffer grad_partials;
  std::uint32_t partial_rows = 0;
  Buffer block;  // split: the gradient block (host-visible)
  LlamaGradientBlock layout;
  std::vector<std::uint64_t> block_scales, block_signs;  // offsets in floats
  Graph step_graph, apply_graph, eval_graph;
  std::uint32_t applied = 0, skipped = 0, pending = 0;
  float gscale = 0;                // the dynamic loss scale the step graph is recorded with
  std::uint32_t clean_steps = 0;   // applied steps in a row at it
  std::uint64_t owned = 0, activations = 0;
  const detail::BlrDenseFor dense_provider = [this](std::size_t slot, const BlrLayer& layer) {
    return dense_for(slot, layer);
  };

  Impl(Context& c, const io::LlamaConfig& sc, LlamaWeights& s, const io::LlamaConfig& tc, const LlamaWeights& t,
       const LlamaBatch& b, const LlamaTrainConfig& cfg)
      : ctx(c), config(sc), teacher_config(tc), student(s), teacher(t), batch(b), settings(cfg) {
    check_settings();
    collect_layers();
    allocate();
    make_optimizer();
    if (settings.split) make_block();
  }

  Buffer make(std::uint64_t bytes, const char* label, bool activation = false) {
    owned += bytes;
    if (activation) activations += bytes;
    return ctx.buffer(bytes, label);
  }

  void check_settings() {
    check_llama_supported(ctx, config);
    check_llama_supported(ctx, teacher_config);
    if (config.vocab_size != teacher_config.vocab_size) {
      fail("LlamaTrainer: the student's vocabulary is {}, the teacher's {}", config.vocab_size,
           teacher_config.vocab_size);
    }
    if (student.blocks.size() != config.num_hidden_layers || teacher.blocks.size() != teacher_config.num_hidden_layers) {
      fail("LlamaTrainer: weights of {} and {} blocks, the configs have {} and {}", student.blocks.size(),
           teacher.blocks.size(), config.num_hidden_layers, teacher_config.num_hidden_layers);
    }
    const std::uint32_t context = std::min(config.max_position_embeddings, teacher_config.max_position_embeddings);
    if (batch.sequences == 0 || batch.seq == 0 || batch.seq > context) {
      fail("LlamaTrainer: batch of {} sequences of {} tokens: want at least one, of 1 to {} tokens", batch.sequences,
           batch.seq, context);
    }
    if (std::uint64_t{batch.sequences} * batch.seq > (1u << 24)) {
      fail("LlamaTrainer: {} tokens in a batch, more than {}", std::uint64_t{batch.sequences} * batch.seq, 1u << 24);
    }
    if (!(settings.temperature > 0) || !std::isfinite(settings.temperature)) {
      fail("LlamaTrainer: temperature = {}", settings.temperature);
    }
    vkblr::detail::require_gscale("LlamaTrainer", settings.gscale);
    if (settings.gscale < kMinGscale) fail("LlamaTrainer: gscale = {}: want at least 2^-24", settings.gscale);
    gscale = settings.gscale;
    if (settings.sign_step.grad_scale != 1.0f || settings.scale_adam.grad_scale != 1.0f) {
      fail("LlamaTrainer: sign_step.grad_scale = {}, scale_adam.grad_scale = {} (the trainer sets them to "
           "1 / tokens_per_step; leave them at 1)",
           settings.sign_step.grad_scale, settings.scale_adam.grad_scale);
    }
    tokens_per_step = settings.tokens_per_step == 0 ? batch.tokens() : settings.tokens_per_step;
    if (tokens_per_step < batch.tokens()) {
      fail("LlamaTrainer: tokens_per_step = {}, fewer than a batch's {}", tokens_per_step, batch.tokens());
    }
  }

  void collect_layers() {
    for (std::size_t b = 0; b < student.blocks.size(); ++b) {
      for (std::size_t slot = 0; slot < detail::kSlots; ++slot) {
        Projection& p = student.blocks[b].*detail::kProjections[slot].second;
        if (!p.is_blr()) {
          if (!p.plane_t) {
            p.plane_t = transposed_plane(ctx, p);
            owned += p.plane_t.size();
          }
          continue;
        }
        p.blr->check("LlamaTrainer");
        if (!p.blr->scales || p.blr->scale_count == 0) {
          fail("LlamaTrainer: blr layer of block {} has no concatenated scales (make it with make_blr_layer)", b);
        }
        TrainedLayer t;
        t.name = std::format("model.layers.{}.{}", b, detail::kProjections[slot].first);
        t.block = b;
        t.slot = slot;
        t.layer = p.blr.get();
        layers.push_back(std::move(t));
      }
    }
    if (layers.empty()) fail("LlamaTrainer: the student has no blr projection to train");
  }

  void allocate() {
    const io::LlamaConfig& c = config;
    const std::uint64_t t = batch.tokens();
    for (std::size_t slot = 0; slot < detail::kSlots; ++slot) {
      std::uint32_t m = 0, n = 0, r = 0, lanes = settings.path_lanes;
      for (const TrainedLayer& l : layers) {
        if (l.slot != slot || dense(*l.layer)) continue;
        m = std::max(m, l.layer->m);
        n = std::max(n, l.layer->n);
        r = std::max(r, l.layer->r);
        lanes = std::max(lanes, static_cast<std::uint32_t>(l.layer->paths.size()));
      }
      if (m > 0) shared[slot] = std::make_unique<ops::BlrShared>(ctx, batch.tokens(), m, n, r, std::min(lanes, 64u));
    }
    rope = ctx.upload(ops::rope_table(c.head_dim, c.rope_theta, batch.seq), "trainer.rope");
    std::vector<std::uint32_t> pos(t);
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::uint32_t>(i % batch.seq);
    positions = ctx.upload(pos, "trainer.positions");
    ids = ctx.host_buffer(t * 4, "trainer.ids");
    rows = ctx.host_buffer(t * 4, "trainer.cache_rows");
    const std::uint64_t widest = std::max({c.hidden_size, c.q_size(), c.intermediate_size});
    staged = make(t * widest * 2, "trainer.staged16");
    blr_out = make(f32_bytes(t, c.hidden_size), "trainer.blr_out");
    x = make(f32_bytes(t, c.hidden_size), "trainer.x");

    const bool keep = settings.memory == MemoryPlan::keep;
    kept.resize(c.num_hidden_layers);
    for (std::size_t b = 0; b < kept.size(); ++b) {
      BlockStorage& s = kept[b];
      s.x_in = make(f32_bytes(t, c.hidden_size), "trainer.x_in", true);
      if (!keep && b > 0) continue;
      s.h1 = make(f32_bytes(t, c.hidden_size), "trainer.h1", keep);
      s.inv1 = make(f32_bytes(t), "trainer.inv1", keep);
      s.q = make(f32_bytes(t, c.q_size()), "trainer.q", keep);
      s.k = make(f32_bytes(t, c.kv_size()), "trainer.k", keep);
      s.v = make(f32_bytes(t, c.kv_size()), "trainer.v", keep);
      s.attn = make(f32_bytes(t, c.q_size()), "trainer.attn", keep);
      s.lse = make(f32_bytes(t, c.num_attention_heads), "trainer.lse", keep);
      s.x_mid = make(f32_bytes(t, c.hidden_size), "trainer.x_mid", keep);
      s.h2 = make(f32_bytes(t, c.hidden_size), "trainer.h2", keep);
      s.inv2 = make(f32_bytes(t), "trainer.inv2", keep);
      s.gate = make(f32_bytes(t, c.intermediate_size), "trainer.gate", keep);
      s.up = make(f32_bytes(t, c.intermediate_size), "trainer.up", keep);
      s.act = make(f32_bytes(t, c.intermediate_size), "trainer.act", keep);
    }
    if (!keep) x_work = make(f32_bytes(t, c.hidden_size), "trainer.x_work");

    hidden_out = make(f32_bytes(t, c.hidden_size), "trainer.hidden_out");
    inv_final = make(f32_bytes(t), "trainer.inv_final");
    dhidden_out = make(f32_bytes(t, c.hidden_size), "trainer.dhidden_out");
    dx = make(f32_bytes(t, c.hidden_size), "trainer.dx");
    dh = make(f32_bytes(t, c.hidden_size), "trainer.dh");
    dh_part = make(f32_bytes(t, c.hidden_size), "trainer.dh_part");
    dh_part2 = make(f32_bytes(t, c.hidden_size), "trainer.dh_part2");
    dattn = make(f32_bytes(t, c.q_size()), "trainer.dattn");
    dq = make(f32_bytes(t, c.q_size()), "trainer.dq");
    dk = make(f32_bytes(t, c.kv_size()), "trainer.dk");
    dv = make(f32_bytes(t, c.kv_size()), "trainer.dv");
    dact = make(f32_bytes(t, c.intermediate_size), "trainer.dact");
    dgate = make(f32_bytes(t, c.intermediate_size), "trainer.dgate");
    dup = make(f32_bytes(t, c.intermediate_size), "trainer.dup");
    dnorm = make(f32_bytes(c.hidden_size), "trainer.dnorm");
    teacher_h = make(f32_bytes(t, teacher_config.hidden_size), "trainer.teacher_h");
    teacher_forward = std::make_unique<LlamaForward>(ctx, teacher_config, batch);
    loss_scratch = ops::make_logit_loss_scratch(ctx, loss_shape(), true);
    owned += ops::logit_loss_scratch_bytes(loss_shape(), true);
    loss = ctx.host_buffer(16, "trainer.loss");
    scalars = std::make_unique<vkblr::detail::StepScalars>(ctx);
  }

  ops::LogitLossShape loss_shape() const {
    return {batch.tokens(), config.hidden_size, config.vocab_size, settings.logit_slice, teacher_config.hidden_size};
  }

  void make_optimizer() {
    SignInit init = settings.sign_init;
    init.deferred = true;
    std::size_t sign_count = 0;
    for (const TrainedLayer& l : layers) sign_count += 2 * l.layer->paths.size();
    if (settings.train_signs) signs.reserve(sign_count);
    std::uint32_t vectors = 0;
    for (TrainedLayer& l : layers) {
      const BlrLayer& layer = *l.layer;
      std::vector<float> mask(layer.scale_count, 0.0f);
      std::vector<std::uint32_t> table;
      for (std::size_t s = 0; s < layer.segments.size(); ++s) {
        const ScaleSegment seg = layer.segments[s];
        const Scale which = BlrLayer::scale_of_segment(s);
        const bool trained = (which == Scale::h && settings.train_h) || (which == Scale::l && settings.train_l) ||
                             (which == Scale::g && settings.train_g);
        std::fill_n(mask.begin() + seg.offset, seg.length, trained ? 1.0f : 0.0f);
        table.push_back(seg.offset);
        table.push_back(seg.length);
      }
      l.mask = ctx.upload(mask, "trainer.scale_mask");
      l.floors = ctx.upload(std::vector<float>(layer.scale_count, 0.0f), "trainer.scale_floors");
      l.moment1 = ctx.upload(std::vector<float>(layer.scale_count, 0.0f), "trainer.adam_m1");
      l.moment2 = ctx.upload(std::vector<float>(layer.scale_count, 0.0f), "trainer.adam_m2");
      l.segment_table = ctx.upload(table, "trainer.segments");
      owned += 4ull * 4 * layer.scale_count;
      vectors += static_cast<std::uint32_t>(layer.segments.size());
      l.first_sign = signs.size();
      if (!settings.train_signs) continue;
      for (std::size_t p = 0; p < layer.paths.size(); ++p) {
        const BlrPath& path = layer.paths[p];
        const auto id = static_cast<std::uint32_t>(signs.size());
        signs.emplace_back(ctx, path.bits_u, layer.m, layer.r, init, id);
        signs.emplace_back(ctx, path.bits_v, layer.n, layer.r, init, id + 1);
      }
      for (std::size_t p = 0; p < layer.paths.size(); ++p) {
        l.sign_grads.push_back(
            {&signs[l.first_sign + 2 * p].kept_gradient(), &signs[l.first_sign + 2 * p + 1].kept_gradient()});
      }
    }
    for (const SignMatrix& s : signs) owned += s.state_bytes();
    partial_rows = vectors + static_cast<std::uint32_t>(signs.size());
    grad_partials = make(std::uint64_t{partial_rows} * ops::kSumsqPartials * 4, "trainer.grad_partials");
  }

  void make_block() {
    std::uint64_t floats = 1;  // the loss sum
    for (const TrainedLayer& l : layers) {
      block_scales.push_back(floats);
      floats += l.layer->scale_count;
    }
    for (const SignMatrix& s : signs) {
      block_signs.push_back(floats);
      floats += std::uint64_t{s.rows()} * s.r();
    }
    block = ctx.host_buffer(floats * 4, "trainer.gradient_block");
    block.fill(0);
    layout = {&block, floats};
  }

  // ---- recording ---------------------------------------------------------

  BlrScratch& scratch_for(std::size_t slot, const BlrLayer& layer, bool per_layer) {
    if (per_layer) {
      auto it = scratch_by_layer.find(&layer);
      if (it == scratch_by_layer.end()) {
        it = scratch_by_layer.emplace(&layer, BlrScratch(ctx, layer, *shared[slot])).first;
        count_scratch(layer);
      }
      return it->second;
    }
    const auto key = std::tuple{slot, layer.m, layer.n, layer.r, layer.paths.size()};
    auto it = scratch_by_slot.find(key);
    if (it == scratch_by_slot.end()) {
      it = scratch_by_slot.emplace(key, BlrScratch(ctx, layer, *shared[slot])).first;
      count_scratch(layer);
    }
    return it->second;
  }

  bool dense(const BlrLayer& layer) const {
    return settings.blr_route == BlrRoute::dense && blr_dense_fits(layer);
  }

  BlrDense* dense_for(std::size_t slot, const BlrLayer& layer) {
    if (!dense(layer)) return nullptr;
    const auto key = std::tuple{slot, layer.m, layer.n, layer.r, layer.paths.size()};
    std::unique_ptr<BlrDense>& d = dense_by_slot[key];
    if (!d) {
      d = std::make_unique<BlrDense>(ctx, batch.tokens(), layer.m, layer.n, layer.r,
                                     static_cast<std::uint32_t>(layer.paths.size()));
      owned += d->bytes();
    }
    return d.get();
  }

  void count_scratch(const BlrLayer& layer) {
    const std::uint64_t bytes = f32_bytes(batch.tokens(), std::uint64_t{layer.r} + layer.m) * layer.paths.size();
    owned += bytes;
    if (settings.memory == MemoryPlan::keep) activations += bytes;
  }

  detail::BlockContext block_context() const {
    return {ctx, config, batch, rope, batch.seq, positions, staged, blr_out, &dense_provider};
  }

  // The forward's buffers of block b: keep, its own; recompute, the shared
  // set with its own input copy.
  detail::BlockBuffers buffers(std::size_t b) const {
    const BlockStorage& own = kept[b];
    const BlockStorage& s = settings.memory == MemoryPlan::keep ? own : kept[0];
    detail::BlockBuffers a;
    a.x_in = &own.x_in;
    a.h1 = &s.h1;
    a.inv1 = &s.inv1;
    a.q = &s.q;
    a.k = &s.k;
    a.v = &s.v;
    a.attn = &s.attn;
    a.lse = &s.lse;
    a.x_mid = &s.x_mid;
    a.h2 = &s.h2;
    a.inv2 = &s.inv2;
    a.gate = &s.gate;
    a.up = &s.up;
    a.act = &s.act;
    return a;
  }

  detail::BlrScratchFor scratch_provider() {
    const bool per_layer = settings.memory == MemoryPlan::keep;
    return [this, per_layer](std::size_t slot, const BlrLayer& layer) -> BlrScratch& {
      return scratch_for(slot, layer, per_layer);
    };
  }

  void record_teacher(Recorder& rec) {
    if (teacher_cache != nullptr) {
      rec.add(ops::embedding_fwd(ctx, rows, *teacher_cache, teacher_h,
                                 {batch.tokens(), static_cast<std::uint32_t>(teacher_cache_rows),
                                  teacher_config.hidden_size}));
    } else {
      teacher_forward->record(rec, teacher, ids, teacher_h, batch);
    }
  }

  void record_forward(Recorder& rec) {
    const io::LlamaConfig& c = config;
    const std::uint32_t t = batch.tokens();
    rec.add(ops::embedding_fwd(ctx, ids, student.embed, x, {t, c.vocab_size, c.hidden_size}));
    const detail::BlockContext bc = block_context();
    const detail::BlrScratchFor scratch = scratch_provider();
    for (std::size_t b = 0; b < student.blocks.size(); ++b) {
      detail::record_block_forward(rec, bc, student.blocks[b], buffers(b), x, scratch);
    }
    rec.add(ops::rmsnorm_fwd(ctx, x, student.final_norm, hidden_out, inv_final,
                             {t, c.hidden_size, static_cast<float>(c.rms_norm_eps)}));
  }

  void record_loss(Recorder& rec, bool gradient) {
    ops::LogitLossGrads grads;
    if (gradient) {
      grads.dh = &dhidden_out;
      grads.grad_scale = 1.0f;  // the token-summed loss
      grads.accumulate_dh = false;
    }
    ops::KlDistillOptions options;
    options.temperature = settings.temperature;
    rec.add(ops::kl_distill(ctx, loss_shape(), hidden_out, student.head_weight(), teacher_h, teacher.head_weight(), loss,
                            grads, loss_scratch, options));
  }

  void record_backward(Recorder& rec) {
    const io::LlamaConfig& c = config;
    const std::uint32_t t = batch.tokens();
    rec.add(ops::rmsnorm_bwd(ctx, x, student.final_norm, inv_final, dhidden_out, dx, dnorm,
                             {t, c.hidden_size, static_cast<float>(c.rms_norm_eps)}));
    const detail::BlockContext bc = block_context();
    const detail::BlrScratchFor scratch = scratch_provider();
    const detail::BackwardBuffers g{&dh, &dh_part, &dh_part2, &dattn, &dq, &dk, &dv, &dact, &dgate, &dup, &dnorm};
    const detail::BackwardSettings backward{gscale};
    for (std::size_t b = student.blocks.size(); b-- > 0;) {
      detail::BlockBuffers a = buffers(b);
      if (settings.memory == MemoryPlan::recompute) {
        rec.copy(kept[b].x_in, x_work, f32_bytes(t, c.hidden_size));
        detail::BlockBuffers again = a;
        again.x_in = nullptr;  // kept already
        detail::record_block_forward(rec, bc, student.blocks[b], again, x_work, scratch);
      }
      const detail::SignGradsFor signs_of = [this, b](std::size_t slot) -> std::span<const BlrSignGrads> {
        for (const TrainedLayer& l : layers) {
          if (l.block == b && l.slot == slot) return l.sign_grads;
        }
        return {};
      };
      detail::record_block_backward(rec, bc, student.blocks[b], a, g, dx, scratch, signs_of, backward);
      // a step's gradients of this block are complete: their sums of squares
      // run beside the blocks before it instead of after the whole backward
      if (!settings.split) record_sums(rec, b);
    }
  }

  void zero_scale_grads(Recorder& rec) {
    for (const TrainedLayer& l : layers) rec.fill(l.layer->scale_grads, 0);
  }

  // The guard's sums of squares of the gradients of block `of_block`'s
  // layers (every layer's when none), into their rows of grad_partials:
  // every layer's scale segments in order, then every sign matrix in order.
  void record_sums(Recorder& rec, std::optional<std::size_t> of_block) {
    const auto partials = [&](std::uint32_t row, std::uint32_t count) {
      return grad_partials.view(std::uint64_t{row} * ops::kSumsqPartials * 4,
                                std::uint64_t{count} * ops::kSumsqPartials * 4);
    };
    std::uint32_t row = 0;
    for (const TrainedLayer& l : layers) {
      const auto segments = static_cast<std::uint32_t>(l.layer->segments.size());
      if (!of_block || l.block == *of_block) {
        rec.add(ops::sumsq_cat(ctx, l.layer->scale_grads, l.layer->scale_count, l.segment_table, segments,
                               partials(row, segments)));
      }
      row += segments;
    }
    for (const TrainedLayer& l : layers) {
      if (of_block && l.block != *of_block) continue;
      for (std::size_t i = l.first_sign; i < l.first_sign + l.sign_grads.size() * 2; ++i) {
        const SignMatrix& sm = signs[i];
        rec.add(ops::sumsq(ctx, sm.kept_gradient(), sm.rows() * sm.r(),
                           partials(row + static_cast<std::uint32_t>(i), 1)));
      }
    }
  }

  // The guard, the sign steps and Adam on the summed gradients in place
  // (the sums of squares recorded already where `sums_recorded`: in a
  // step, after each block's backward).
  void record_update(Recorder& rec, bool sums_recorded) {
    if (!sums_recorded) record_sums(rec, std::nullopt);
    const std::uint32_t count = partial_rows * ops::kSumsqPartials;
    for (const std::uint32_t word : vkblr::detail::StepScalars::kSkipWords) {
      rec.add(ops::finite_guard(ctx, grad_partials, count, scalars->buffer(), word));
    }
    const float grad_scale = 1.0f / static_cast<float>(tokens_per_step);
    SignStep step = settings.sign_step;
    step.grad_scale = grad_scale;
    step.live = scalars->sign();
    record_kept_sign_steps(rec, ctx, signs, step);
    ops::AdamOptions adam = settings.scale_adam;
    adam.grad_scale = grad_scale;
    adam.live = scalars->scale();
    for (const TrainedLayer& l : layers) {
      rec.add(ops::adam_cat(ctx, l.layer->scales, l.layer->scale_grads, l.moment1, l.moment2, l.mask, l.floors,
                            l.layer->scale_count, adam));
    }
  }

  void record_block_copies(Recorder& rec, bool to_block) {
    const auto copy = [&](const Buffer& gradient, std::uint64_t offset, std::uint64_t floats) {
      if (to_block) {
        rec.copy(gradient, block, floats * 4, 0, offset * 4);
      } else {
        rec.copy(block, gradient, floats * 4, offset * 4, 0);
      }
    };
    for (std::size_t i = 0; i < layers.size(); ++i) {
      copy(layers[i].layer->scale_grads, block_scales[i], layers[i].layer->scale_count);
    }
    for (std::size_t i = 0; i < signs.size(); ++i) {
      copy(signs[i].kept_gradient(), block_signs[i], std::uint64_t{signs[i].rows()} * signs[i].r());
    }
  }

  void record_graphs() {
    {
      Recorder rec(ctx);
      if (!settings.split) zero_scale_grads(rec);  // split: zeroed by the apply graph
      record_teacher(rec);
      record_forward(rec);
      record_loss(rec, true);
      record_backward(rec);
      if (settings.split) {
        record_block_copies(rec, true);
      } else {
        record_update(rec, true);
      }
      step_graph = rec.finish();
    }
    if (settings.split) {
      Recorder rec(ctx);
      record_block_copies(rec, false);
      record_update(rec, false);
      zero_scale_grads(rec);
      apply_graph = rec.finish();
    }
    Recorder rec(ctx);
    record_teacher(rec);
    record_forward(rec);
    record_loss(rec, false);
    eval_graph = rec.finish();
  }

  // ---- running -------------------------------------------------------------

  void write_batch(const char* op, std::span<const std::uint32_t> token_ids, std::span<const std::uint32_t> cache_rows) {
    const std::uint32_t t = batch.tokens();
    if (token_ids.size() != t) fail("{}: {} token ids for a batch of {} tokens", op, token_ids.size(), t);
    for (std::size_t i = 0; i < token_ids.size(); ++i) {
      if (token_ids[i] >= config.vocab_size) {
        fail("{}: ids[{}] = {} is out of range (vocab = {})", op, i, token_ids[i], config.vocab_size);
      }
    }
    ids.write(token_ids.data(), token_ids.size_bytes());
    if (teacher_cache == nullptr) {
      if (!cache_rows.empty()) fail("{}: cache rows given, but no teacher cache is set", op);
    } else {
      if (cache_rows.size() != t) fail("{}: {} cache rows for a batch of {} tokens", op, cache_rows.size(), t);
      for (std::size_t i = 0; i < cache_rows.size(); ++i) {
        if (cache_rows[i] >= teacher_cache_rows) {
          fail("{}: cache_rows[{}] = {} is past the cache's {} rows", op, i, cache_rows[i], teacher_cache_rows);
        }
      }
      rows.write(cache_rows.data(), cache_rows.size_bytes());
    }
    if (!step_graph) record_graphs();
  }

  float loss_sum() const { return ops::read_logit_loss(loss).sum; }

  LlamaStepResult finish_step(std::uint32_t t, double sum) {
    LlamaStepResult r;
    r.applied = !scalars->skipped();
    r.step = t;
    r.tokens = tokens_per_step;
    r.loss = sum / tokens_per_step;
    r.gscale = gscale;
    (r.applied ? applied : skipped) += 1;
    update_gscale(r.applied);
    return r;
  }

  // The dynamic loss scale after a step (see the header's Gradient scaling):
  // a new scale means new push constants, so the step graph is recorded
  // again by the next step.
  void update_gscale(bool step_applied) {
    if (settings.gscale_growth == 0) return;
    float next = gscale;
    if (!step_applied) {
      next = std::max(gscale / 2, kMinGscale);
      clean_steps = 0;
    } else if (++clean_steps >= settings.gscale_growth) {
      next = std::min(gscale * 2, settings.gscale);
      clean_steps = 0;
    }
    if (next != gscale) {
      gscale = next;
      step_graph = Graph();
    }
  }
};

LlamaTrainer::LlamaTrainer(Context& ctx, const io::LlamaConfig& student_config, LlamaWeights& student,
                           const io::LlamaConfig& teacher_config, const LlamaWeights& teacher, const LlamaBatch& batch,
                           const LlamaTrainConfig& config)
    : impl_(std::make_unique<Impl>(ctx, student_config, student, teacher_config, teacher, batch, config)) {}
LlamaTrainer::~LlamaTrainer() = default;

void LlamaTrainer::set_teacher_cache(const Buffer& hidden, std::uint64_t rows) {
  Impl& s = *impl_;
  const std::uint64_t width = s.teacher_config.hidden_size;
  if (rows == 0 || rows * width >= (1ull << 32) || hidden.size() < rows * width * 4) {
    fail("LlamaTrainer::set_teacher_cache: {} rows of {} floats in a buffer of {} bytes (rows · width below 2^32)",
         rows, width, hidden.size());
  }
  s.teacher_cache = &hidden;
  s.teacher_cache_rows = rows;
  s.step_graph = Graph();  // recorded again by the next run
}

void LlamaTrainer::prepare() {
  Impl& s = *impl_;
  if (!s.step_graph) s.record_graphs();
}

LlamaStepResult LlamaTrainer::step(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows,
                                   float sign_lr, float scale_lr) {
  Impl& s = *impl_;
  constexpr const char* op = "LlamaTrainer::step";
  if (s.settings.split) fail("{}: the trainer is split (accumulate, then apply)", op);
  s.write_batch(op, ids, cache_rows);
  const std::uint32_t t = s.scalars->set(op, sign_lr, scale_lr, s.applied);
  s.step_graph.run();
  return s.finish_step(t, s.loss_sum());
}

double LlamaTrainer::accumulate(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows) {
  Impl& s = *impl_;
  constexpr const char* op = "LlamaTrainer::accumulate";
  if (!s.settings.split) fail("{}: the trainer was made without split", op);
  s.write_batch(op, ids, cache_rows);
  s.step_graph.run();
  s.block.invalidate();
  const float sum = s.loss_sum();
  auto* loss = static_cast<float*>(s.block.mapped());
  loss[0] = (s.pending == 0 ? 0.0f : loss[0]) + sum;  // f32, in call order
  s.block.flush(0, 4);
  ++s.pending;
  return sum;
}

LlamaStepResult LlamaTrainer::apply(float sign_lr, float scale_lr) {
  Impl& s = *impl_;
  constexpr const char* op = "LlamaTrainer::apply";
  if (!s.settings.split) fail("{}: the trainer was made without split", op);
  if (s.pending == 0) fail("{}: no accumulate() since the last step", op);
  const std::uint32_t t = s.scalars->set(op, sign_lr, scale_lr, s.applied);
  s.block.flush();
  s.apply_graph.run();
  s.pending = 0;
  return s.finish_step(t, static_cast<const float*>(s.block.mapped())[0]);
}

const LlamaGradientBlock& LlamaTrainer::gradient_block() const {
  if (!impl_->settings.split) fail("LlamaTrainer::gradient_block: the trainer was made without split");
  return impl_->layout;
}

double LlamaTrainer::loss(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> cache_rows) {
  Impl& s = *impl_;
  s.write_batch("LlamaTrainer::loss", ids, cache_rows);
  s.eval_graph.run();
  return static_cast<double>(s.loss_sum()) / s.batch.tokens();
}

std::uint32_t LlamaTrainer::steps() const noexcept { return impl_->applied; }
std::uint32_t LlamaTrainer::skipped() const noexcept { return impl_->skipped; }

void LlamaTrainer::set_steps(std::uint32_t applied, std::uint32_t skipped) {
  impl_->applied = applied;
  impl_->skipped = skipped;
}

float LlamaTrainer::gscale() const noexcept { return impl_->gscale; }
std::uint32_t LlamaTrainer::gscale_clean_steps() const noexcept { return impl_->clean_steps; }

void LlamaTrainer::set_gscale(float gscale, std::uint32_t clean_steps) {
  Impl& s = *impl_;
  const std::uint32_t growth = s.settings.gscale_growth;
  vkblr::detail::require_gscale("LlamaTrainer::set_gscale", gscale);
  if (gscale < kMinGscale || gscale > s.settings.gscale) {
    fail("LlamaTrainer::set_gscale: gscale = {}: want a power of two in [2^-24, {}]", gscale, s.settings.gscale);
  }
  if (growth != 0 && clean_steps >= growth) {
    fail("LlamaTrainer::set_gscale: {} clean steps, but the scale grows after {}", clean_steps, growth);
  }
  if (gscale != s.gscale) s.step_graph = Graph();
  s.gscale = gscale;
  s.clean_steps = clean_steps;
}

std::vector<std::string> LlamaTrainer::layer_names() const {
  std::vector<std::string> out;
  for (const TrainedLayer& l : impl_->layers) out.push_back(l.name);
  return out;
}

std::vector<SignMatrix*> LlamaTrainer::sign_matrices() {
  std::vector<SignMatrix*> out;
  for (SignMatrix& s : impl_->signs) out.push_back(&s);
  return out;
}

std::vector<std::pair<std::string, Buffer*>> LlamaTrainer::state() {
  Impl& s = *impl_;
  std::vector<std::pair<std::string, Buffer*>> out;
  for (TrainedLayer& l : s.layers) {
    out.emplace_back(l.name + ".scales", &l.layer->scales);
    for (std::size_t p = 0; p < l.layer->paths.size(); ++p) {
      out.emplace_back(std::format("{}.path{}.bits_u", l.name, p), &l.layer->paths[p].bits_u);
      out.emplace_back(std::format("{}.path{}.bits_v", l.name, p), &l.layer->paths[p].bits_v);
    }
    out.emplace_back(l.name + ".adam_m1", &l.moment1);
    out.emplace_back(l.name + ".adam_m2", &l.moment2);
    if (!s.settings.train_signs) continue;
    for (std::size_t i = 0; i < 2 * l.layer->paths.size(); ++i) {
      const std::string prefix = std::format("{}.path{}.{}.", l.name, i / 2, i % 2 == 0 ? "u" : "v");
      for (auto& [name, buffer] : s.signs[l.first_sign + i].state()) out.emplace_back(prefix + name, buffer);
    }
  }
  return out;
}

std::uint64_t LlamaTrainer::device_bytes() const {
  const Impl& s = *impl_;
  std::uint64_t bytes = s.owned;
  for (const auto& shared : s.shared) {
    if (shared) bytes += shared->lane_bytes() * shared->lanes.size();
  }
  for (const Graph* g : {&s.step_graph, &s.apply_graph, &s.eval_graph}) bytes += g->transient_bytes();
  return bytes;
}

std::uint64_t LlamaTrainer::activation_bytes() const { return impl_->activations; }

}  // namespace vkblr::model
