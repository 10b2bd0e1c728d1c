// Whole-model distillation (vkblr/model/llama_trainer.hpp) on a toy Llama
// whose projections are all blr layers: the memory plans give the same
// bits; a cached teacher gives the bits of the teacher's forward; split
// steps give the bits of a step, and two fake ranks summing their blocks in
// rank order the bits of one rank's two micro-batches; a resumed run the
// bits of the uninterrupted one; the first step moves each sign and scale
// as the gradients say; distillation lowers the KL; bad inputs refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "support/gpu.hpp"
#include "support/blr_dense_ref.hpp"
#include "support/host.hpp"
#include "support/llama_model_ref.hpp"
#include "vkblr/half.hpp"
#include "vkblr/io/llama_config.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/model/llama_trainer.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// 2 blocks, hidden 64, 2 query heads of 32 over 1 KV head, MLP 96, vocab 40.
io::LlamaConfig toy_config() {
  io::LlamaConfig c;
  c.vocab_size = 40;
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 32;
  c.max_position_embeddings = 32;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500.0;
  c.torch_dtype = "float32";
  return c;
}

constexpr model::LlamaBatch kBatch{2, 16};

using Tensors = std::map<std::string, std::vector<float>>;  // by Hugging Face name

// The teacher's weights: the linear layers at 1.7/sqrt(fan-in), rounded to
// f16 (as the engine stores them), norms around 1, the embedding and head
// in ±1.
Tensors toy_tensors(const io::LlamaConfig& c) {
  Tensors w;
  std::uint64_t seed = 100;
  for (const io::LlamaParameter& p : io::llama_parameters(c)) {
    const std::size_t n = p.shape.size() == 2 ? p.shape[0] * p.shape[1] : p.shape[0];
    std::vector<float> v;
    if (p.linear_in_block) {
      v = vkt::random_floats(n, ++seed, 1.7f / std::sqrt(static_cast<float>(p.shape[1])));
      for (float& x : v) x = f16_to_f32(f32_to_f16(x));
    } else if (p.shape.size() == 1) {
      v = vkt::random_floats(n, ++seed, 0.3f);
      for (float& x : v) x += 1.0f;
    } else {
      v = vkt::random_floats(n, ++seed);
    }
    w[p.name] = std::move(v);
  }
  return w;
}

model::LlamaWeights upload(Context& ctx, const io::LlamaConfig& c, const Tensors& t) {
  model::LlamaWeights w;
  w.embed = ctx.upload(t.at("model.embed_tokens.weight"), "toy.embed");
  w.blocks.resize(c.num_hidden_layers);
  w.final_norm = ctx.upload(t.at("model.norm.weight"), "toy.norm");
  w.head = ctx.upload(t.at("lm_head.weight"), "toy.head");
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    const std::string prefix = "model.layers." + std::to_string(b) + ".";
    w.blocks[b].input_norm = ctx.upload(t.at(prefix + "input_layernorm.weight"), "toy.norm");
    w.blocks[b].post_norm = ctx.upload(t.at(prefix + "post_attention_layernorm.weight"), "toy.norm");
    for (const vkt::Proj j : vkt::kAllProjections) {
      const std::string name = vkt::proj_parameter(b, j);
      model::Projection* p = w.projection(name);
      const auto [out, in] = vkt::proj_shape(c, j);
      p->out = out;
      p->in = in;
      p->plane = ctx.upload(to_f16(t.at(name)), "toy.plane");
    }
  }
  return w;
}

model::LlamaWeights dense_toy(Context& ctx, const io::LlamaConfig& c) { return upload(ctx, c, toy_tensors(c)); }

// A blr layer of rank 32, 2 paths, random signs, scales around values that
// give Ŵ entries of about 1.7/sqrt(n) (the teacher's).
std::vector<BlrPathInit> random_blr(std::uint32_t m, std::uint32_t n, std::uint64_t seed) {
  constexpr std::uint32_t r = 32, paths = 2;
  std::vector<BlrPathInit> init(paths);
  const float l_level = 1.7f / std::sqrt(static_cast<float>(n * r * paths));
  for (std::uint32_t p = 0; p < paths; ++p) {
    BlrPathInit& i = init[p];
    i.bits_u = vkt::random_words(std::size_t{m} * (r / 32), seed * 10 + p);
    i.bits_v = vkt::random_words(std::size_t{n} * (r / 32), seed * 10 + p + 5);
    const auto around = [&](std::size_t count, float level, std::uint64_t s) {
      std::vector<float> v = vkt::random_floats(count, s, 0.2f);
      for (float& x : v) x = level * (1.0f + x);
      return v;
    };
    i.h = around(m, 1.0f, seed * 10 + p + 1);
    i.l = around(r, l_level, seed * 10 + p + 2);
    i.g = around(n, 1.0f, seed * 10 + p + 3);
  }
  return init;
}

// Every projection's blr layer (the same for the same seed), by name.
std::map<std::string, std::vector<BlrPathInit>> toy_blr(const io::LlamaConfig& c, std::uint64_t seed) {
  std::map<std::string, std::vector<BlrPathInit>> out;
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    for (const vkt::Proj j : vkt::kAllProjections) {
      const auto [m, n] = vkt::proj_shape(c, j);
      out[vkt::proj_parameter(b, j)] = random_blr(m, n, ++seed);
    }
  }
  return out;
}

// The student: the teacher's embedding, norms and head, every projection a
// random blr layer (the same for the same seed).
model::LlamaWeights blr_toy(Context& ctx, const io::LlamaConfig& c, std::uint64_t seed = 7) {
  model::LlamaWeights w = dense_toy(ctx, c);
  for (const auto& [name, init] : toy_blr(c, seed)) {
    model::Projection* p = w.projection(name);
    p->blr = std::make_shared<BlrLayer>(make_blr_layer(ctx, p->out, p->in, 32, init, false));
    p->plane = Buffer();
  }
  return w;
}

std::vector<std::uint32_t> batch_ids(std::uint64_t seed, const model::LlamaBatch& batch = kBatch) {
  std::vector<std::uint32_t> ids = vkt::random_words(batch.tokens(), seed);
  for (std::uint32_t& id : ids) id %= toy_config().vocab_size;
  return ids;
}

model::LlamaTrainConfig train_config() {
  model::LlamaTrainConfig t;
  t.scale_adam.eps = 1e-12f;
  t.sign_step.eps = 1e-12f;
  return t;
}

// Every state buffer's bytes, by name.
std::map<std::string, std::vector<std::uint32_t>> snapshot(model::LlamaTrainer& trainer) {
  std::map<std::string, std::vector<std::uint32_t>> out;
  for (auto& [name, buffer] : trainer.state()) out[name] = buffer->download<std::uint32_t>();
  return out;
}

void restore(model::LlamaTrainer& trainer, const std::map<std::string, std::vector<std::uint32_t>>& saved) {
  for (auto& [name, buffer] : trainer.state()) buffer->upload(saved.at(name));
}

// The names whose bits differ between two snapshots ("" when none).
std::string first_difference(const std::map<std::string, std::vector<std::uint32_t>>& a,
                             const std::map<std::string, std::vector<std::uint32_t>>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, words] : a) {
    if (b.at(name) != words) return name;
  }
  return "";
}

constexpr float kSignLr = 0.02f, kScaleLr = 0.01f;

// `steps` steps of a fresh student (seed 7) on batches 1.., its snapshot.
// prepared: prepare() right after construction (before any teacher cache,
// whose setting records the graphs again).
std::map<std::string, std::vector<std::uint32_t>> trained(Context& ctx, const model::LlamaTrainConfig& config,
                                                          int steps, bool cached_teacher = false,
                                                          bool prepared = false) {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaWeights student = blr_toy(ctx, c);
  model::LlamaTrainer trainer(ctx, c, student, c, teacher, kBatch, config);
  if (prepared) trainer.prepare();
  std::deque<Buffer> caches;  // where set_teacher_cache's buffers stay
  std::vector<std::uint32_t> rows;
  for (int s = 1; s <= steps; ++s) {
    const std::vector<std::uint32_t> ids = batch_ids(s);
    if (cached_teacher) {
      // a cache of this batch's teacher states, from LlamaForward
      model::LlamaForward forward(ctx, c, kBatch);
      const Buffer& cache = caches.emplace_back(
          ctx.buffer(std::uint64_t{kBatch.tokens()} * c.hidden_size * 4, "test.cache"));
      Buffer id_buffer = ctx.upload(ids, "test.ids");
      Recorder rec(ctx);
      forward.record(rec, teacher, id_buffer, cache, kBatch);
      rec.run();
      trainer.set_teacher_cache(cache, kBatch.tokens());
      rows.resize(kBatch.tokens());
      for (std::uint32_t t = 0; t < rows.size(); ++t) rows[t] = t;
    }
    const model::LlamaStepResult r = trainer.step(ids, rows, kSignLr, kScaleLr);
    REQUIRE(r.applied);
    REQUIRE(std::isfinite(r.loss));
  }
  return snapshot(trainer);
}

}  // namespace

GPU_TEST("llama trainer: keep and recompute, a cached teacher and the teacher's forward, prepared or not, give "
         "the same bits",
         "[model][trainer]") {
  const model::BlrRoute route = GENERATE(model::BlrRoute::dense, model::BlrRoute::factored);
  INFO(model::to_string(route) << " route");
  model::LlamaTrainConfig keep = train_config();
  keep.blr_route = route;
  const auto base = trained(ctx, keep, 2);
  CHECK(first_difference(base, trained(ctx, keep, 2)).empty());  // run after run
  model::LlamaTrainConfig recompute = keep;
  recompute.memory = model::MemoryPlan::recompute;
  CHECK(first_difference(base, trained(ctx, recompute, 2)).empty());
  CHECK(first_difference(base, trained(ctx, keep, 2, true)).empty());
  // graphs recorded ahead of the first step, and again after a cache is set
  CHECK(first_difference(base, trained(ctx, keep, 2, false, true)).empty());
  CHECK(first_difference(base, trained(ctx, keep, 2, true, true)).empty());
  // and the steps changed something: signs and scales
  const auto init = trained(ctx, keep, 0);
  CHECK_FALSE(base.at("model.layers.0.mlp.up_proj.weight.scales") ==
              init.at("model.layers.0.mlp.up_proj.weight.scales"));
}

GPU_TEST("llama trainer: the gradients of every blr layer match the f64 model's", "[model][trainer]") {
  // The host model (support/llama_model_ref.hpp, itself checked against
  // finite differences) with each projection the dense Ŵ of its blr layer
  // and the engine's f16 staging of the projections' inputs; its dŴ mapped
  // to dh, dℓ, dg, G_U, G_V (support/blr_dense_ref.hpp). The teacher's
  // hidden states come from the host, through a cache, so both sides see
  // the same teacher. The engine stages the blr operands (x⊙g, dy⊙h, a⊙ℓ)
  // and attention's (q, k, v, P, dS on the coopmat path) to f16 where the
  // host rounds only each projection's input: a vector's relative L2 error
  // is bounded at 3e-2 (measured on lavapipe: at most 1.0e-2, most 3e-3 to
  // 6e-3). A wrong or missing term moves a vector by far more. Both routes
  // of the blr projections (the dense one stages Ŵ, dy and dŴ instead).
  const model::BlrRoute route = GENERATE(model::BlrRoute::dense, model::BlrRoute::factored);
  INFO(model::to_string(route) << " route");
  const io::LlamaConfig c = toy_config();
  const Tensors tensors = toy_tensors(c);
  const auto blr = toy_blr(c, 7);
  const std::vector<std::uint32_t> ids = batch_ids(11);
  constexpr double kTemperature = 1.5;

  const vkt::HostLlama teacher_host = vkt::host_llama_from_tensors(c, tensors);
  const vkt::HostForward teacher_fwd = vkt::host_llama_forward(teacher_host, ids, kBatch.sequences, kBatch.seq);
  std::vector<float> teacher_hidden(teacher_fwd.out.begin(), teacher_fwd.out.end());
  std::vector<double> teacher_hidden64(teacher_hidden.begin(), teacher_hidden.end());
  vkt::HostLlama student_host = teacher_host;
  std::map<std::string, vkt::RealBlrLayer> real;
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    for (const vkt::Proj j : vkt::kAllProjections) {
      const std::string name = vkt::proj_parameter(b, j);
      const auto [m, n] = vkt::proj_shape(c, j);
      real[name] = vkt::real_blr_from_bits(m, n, 32, blr.at(name));
      student_host.blocks[b][j].w = vkt::blr_dense(real[name]);
    }
  }
  const vkt::HostDistill host =
      vkt::kl_distill_grads(student_host, teacher_hidden64, teacher_host.head_weight(), {}, ids, kBatch.sequences,
                            kBatch.seq, kTemperature, vkt::Staging::f16);

  model::LlamaWeights teacher = upload(ctx, c, tensors);
  model::LlamaWeights student = upload(ctx, c, tensors);
  for (const auto& [name, init] : blr) {
    model::Projection* p = student.projection(name);
    p->blr = std::make_shared<BlrLayer>(make_blr_layer(ctx, p->out, p->in, 32, init, false));
    p->plane = Buffer();
  }
  model::LlamaTrainConfig config = train_config();
  config.blr_route = route;
  config.split = true;
  config.temperature = static_cast<float>(kTemperature);
  model::LlamaTrainer trainer(ctx, c, student, c, teacher, kBatch, config);
  const Buffer cache = ctx.upload(teacher_hidden, "test.teacher_cache");
  trainer.set_teacher_cache(cache, kBatch.tokens());
  std::vector<std::uint32_t> rows(kBatch.tokens());
  for (std::uint32_t t = 0; t < rows.size(); ++t) rows[t] = t;
  const double loss = trainer.accumulate(ids, rows);
  CHECK(std::abs(loss - host.loss) <= 2e-3 * host.loss);

  const model::LlamaGradientBlock& block = trainer.gradient_block();
  const auto* g = static_cast<const float*>(block.buffer->mapped());
  // relative L2 error of one gradient vector
  double worst = 0;
  std::string worst_name;
  const auto compare = [&](const std::string& what, const float* got, const std::vector<double>& want) {
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      err += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    const double rel = std::sqrt(err / norm);
    INFO(what << ": relative error " << rel);
    CHECK(rel <= 3e-2);
    if (rel > worst) {
      worst = rel;
      worst_name = what;
    }
  };
  std::uint64_t at = 1;  // the block: the loss, every layer's scales, every sign matrix
  std::map<std::string, std::vector<vkt::RealBlrGrads>> want;
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    for (const vkt::Proj j : vkt::kAllProjections) {
      const std::string name = vkt::proj_parameter(b, j);
      want[name] = vkt::blr_grads_from_dense(real[name], host.grads.blocks[b][j]);
      const BlrLayer& layer = *student.projection(name)->blr;
      for (std::size_t p = 0; p < layer.paths.size(); ++p) {
        const vkt::RealBlrGrads& w = want[name][p];
        compare(name + " dh" + std::to_string(p), g + at + layer.segment(p, Scale::h).offset, w.dh);
        compare(name + " dl" + std::to_string(p), g + at + layer.segment(p, Scale::l).offset, w.dl);
        compare(name + " dg" + std::to_string(p), g + at + layer.segment(p, Scale::g).offset, w.dg);
      }
      at += layer.scale_count;
    }
  }
  for (std::uint32_t b = 0; b < c.num_hidden_layers; ++b) {
    for (const vkt::Proj j : vkt::kAllProjections) {
      const std::string name = vkt::proj_parameter(b, j);
      for (const vkt::RealBlrGrads& w : want[name]) {
        compare(name + " G_U", g + at, w.gu);
        at += w.gu.size();
        compare(name + " G_V", g + at, w.gv);
        at += w.gv.size();
      }
    }
  }
  CHECK(at == block.floats);
  WARN(model::to_string(route) << " route: worst relative error " << worst << " (" << worst_name << ")");
}

GPU_TEST("llama trainer: recompute keeps only each block's input", "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaWeights a = blr_toy(ctx, c), b = blr_toy(ctx, c);
  model::LlamaTrainConfig config = train_config();
  model::LlamaTrainer keep(ctx, c, a, c, teacher, kBatch, config);
  config.memory = model::MemoryPlan::recompute;
  model::LlamaTrainer recompute(ctx, c, b, c, teacher, kBatch, config);
  const std::vector<std::uint32_t> ids = batch_ids(1);
  keep.step(ids, {}, kSignLr, kScaleLr);
  recompute.step(ids, {}, kSignLr, kScaleLr);
  const std::uint64_t stream = std::uint64_t{kBatch.tokens()} * c.hidden_size * 4;
  CHECK(recompute.activation_bytes() == c.num_hidden_layers * stream);
  CHECK(keep.activation_bytes() > 4 * recompute.activation_bytes());
  CHECK(keep.device_bytes() > recompute.device_bytes());
}

GPU_TEST("llama trainer: a split step is a step; two ranks' summed blocks are one rank's two micro-batches",
         "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  const model::LlamaBatch half{1, 16};
  const std::vector<std::uint32_t> ids = batch_ids(3);
  const std::span<const std::uint32_t> first(ids.data(), half.tokens()), second(ids.data() + half.tokens(),
                                                                                half.tokens());
  // one micro-batch: a split step is bit for bit an unsplit one
  {
    model::LlamaWeights a = blr_toy(ctx, c), b = blr_toy(ctx, c);
    model::LlamaTrainConfig config = train_config();
    model::LlamaTrainer whole(ctx, c, a, c, teacher, kBatch, config);
    config.split = true;
    model::LlamaTrainer split(ctx, c, b, c, teacher, kBatch, config);
    const model::LlamaStepResult r1 = whole.step(ids, {}, kSignLr, kScaleLr);
    const double sum = split.accumulate(ids, {});
    const model::LlamaStepResult r2 = split.apply(kSignLr, kScaleLr);
    CHECK(r1.loss == r2.loss);
    CHECK(sum / kBatch.tokens() == r2.loss);
    CHECK(first_difference(snapshot(whole), snapshot(split)).empty());
  }
  // two micro-batches on one rank against two fake ranks of one each
  model::LlamaTrainConfig config = train_config();
  config.split = true;
  config.tokens_per_step = kBatch.tokens();
  model::LlamaWeights w1 = blr_toy(ctx, c), w2 = blr_toy(ctx, c), w3 = blr_toy(ctx, c);
  model::LlamaTrainer one(ctx, c, w1, c, teacher, half, config);
  model::LlamaTrainer rank0(ctx, c, w2, c, teacher, half, config);
  model::LlamaTrainer rank1(ctx, c, w3, c, teacher, half, config);
  for (int step = 0; step < 2; ++step) {
    one.accumulate(first, {});
    one.accumulate(second, {});
    const model::LlamaStepResult r = one.apply(kSignLr, kScaleLr);
    rank0.accumulate(first, {});
    rank1.accumulate(second, {});
    // vkblr::mpi's order: every element ((0 + v₀) + v₁) in f32
    const model::LlamaGradientBlock& b0 = rank0.gradient_block();
    const model::LlamaGradientBlock& b1 = rank1.gradient_block();
    REQUIRE(b0.floats == b1.floats);
    auto* v0 = static_cast<float*>(b0.buffer->mapped());
    auto* v1 = static_cast<float*>(b1.buffer->mapped());
    for (std::uint64_t i = 0; i < b0.floats; ++i) {
      const float sum = (0.0f + v0[i]) + v1[i];
      v0[i] = sum;
      v1[i] = sum;
    }
    const model::LlamaStepResult r0 = rank0.apply(kSignLr, kScaleLr);
    const model::LlamaStepResult r1 = rank1.apply(kSignLr, kScaleLr);
    CHECK(r.loss == r0.loss);
    CHECK(r.loss == r1.loss);
  }
  const auto s = snapshot(one);
  CHECK(first_difference(s, snapshot(rank0)).empty());
  CHECK(first_difference(s, snapshot(rank1)).empty());
}

GPU_TEST("llama trainer: a run resumed from its state is the uninterrupted run", "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  const model::LlamaTrainConfig config = train_config();
  const auto whole = trained(ctx, config, 3);
  std::map<std::string, std::vector<std::uint32_t>> saved;
  {
    model::LlamaWeights w = blr_toy(ctx, c);
    model::LlamaTrainer first(ctx, c, w, c, teacher, kBatch, config);
    first.step(batch_ids(1), {}, kSignLr, kScaleLr);
    saved = snapshot(first);
    REQUIRE(first.steps() == 1);
  }
  model::LlamaWeights w = blr_toy(ctx, c, 99);  // other values: the state restores them all
  model::LlamaTrainer resumed(ctx, c, w, c, teacher, kBatch, config);
  restore(resumed, saved);
  resumed.set_steps(1, 0);
  for (int s = 2; s <= 3; ++s) REQUIRE(resumed.step(batch_ids(s), {}, kSignLr, kScaleLr).step == std::uint32_t(s));
  CHECK(first_difference(whole, snapshot(resumed)).empty());
}

GPU_TEST("llama trainer: a loss scale that overflows f16 skips the step and halves; clean steps double it back",
         "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaTrainConfig config = train_config();
  config.gscale = 0x1p30f;  // every f16 staging of the backward overflows at first
  config.gscale_growth = 3;
  model::LlamaWeights w = blr_toy(ctx, c);
  model::LlamaTrainer trainer(ctx, c, w, c, teacher, kBatch, config);
  REQUIRE(trainer.gscale() == 0x1p30f);
  // batch 1 until a step applies: each skipped step changes no state bit
  auto before = snapshot(trainer);
  model::LlamaStepResult r;
  int skips = 0;
  for (; skips < 40; ++skips) {
    r = trainer.step(batch_ids(1), {}, kSignLr, kScaleLr);
    if (r.applied) break;
    CHECK(trainer.gscale() == r.gscale / 2);
    CHECK(first_difference(before, snapshot(trainer)).empty());
  }
  REQUIRE(r.applied);
  CHECK(skips >= 2);
  CHECK(trainer.skipped() == std::uint32_t(skips));
  CHECK(r.step == 1);
  const float settled = r.gscale;
  // the skipped steps left no trace: a trainer started at the settled scale
  // makes the same bits in one step
  {
    model::LlamaTrainConfig at = config;
    at.gscale = settled;
    at.gscale_growth = 0;
    model::LlamaWeights w2 = blr_toy(ctx, c);
    model::LlamaTrainer fresh(ctx, c, w2, c, teacher, kBatch, at);
    REQUIRE(fresh.step(batch_ids(1), {}, kSignLr, kScaleLr).applied);
    CHECK(first_difference(snapshot(fresh), snapshot(trainer)).empty());
  }
  // the rule over the next steps: a skip halves; 3 applied in a row double
  // (to gscale at most)
  float scale = trainer.gscale();
  std::uint32_t clean = trainer.gscale_clean_steps();
  CHECK(clean == 1);
  int applied = 0, skipped = 0;
  for (int s = 2; s <= 12; ++s) {
    r = trainer.step(batch_ids(s), {}, kSignLr, kScaleLr);
    CHECK(r.gscale == scale);
    if (!r.applied) {
      scale /= 2, clean = 0, ++skipped;
    } else if (++clean == 3) {
      scale = std::min(scale * 2, config.gscale), clean = 0, ++applied;
    } else {
      ++applied;
    }
    CHECK(trainer.gscale() == scale);
    CHECK(trainer.gscale_clean_steps() == clean);
  }
  CHECK(applied >= 3);
  CHECK(skipped >= 1);  // the doubled scale overflowed again
  // resume refusals
  CHECK_THROWS_WITH(trainer.set_gscale(3.0f, 0), ContainsSubstring("gscale = 3"));
  CHECK_THROWS_WITH(trainer.set_gscale(0x1p31f, 0), ContainsSubstring("want a power of two in"));
  CHECK_THROWS_WITH(trainer.set_gscale(0x1p-25f, 0), ContainsSubstring("want a power of two in"));
  CHECK_THROWS_WITH(trainer.set_gscale(1.0f, 3), ContainsSubstring("3 clean steps"));
  trainer.set_gscale(1.0f, 2);
  CHECK(trainer.gscale() == 1.0f);
  CHECK(trainer.step(batch_ids(13), {}, kSignLr, kScaleLr).gscale == 1.0f);
  CHECK(trainer.gscale() == 2.0f);
}

GPU_TEST("llama trainer: the first step moves each sign and scale as its gradient says", "[model][trainer]") {
  // Adam's first step is lr·m̂/(√v̂ + eps) = lr·sign(G) (eps negligible):
  // a latent starting at s·τ with lr > τ ends at s·τ − lr·sign(G), past zero
  // exactly where s·G > 0; a scale moves by −lr·sign(its gradient).
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaWeights w = blr_toy(ctx, c);
  model::LlamaTrainConfig config = train_config();
  config.split = true;
  const float tau = config.sign_init.tau, sign_lr = 1.5f * tau, scale_lr = 1e-3f;
  model::LlamaTrainer trainer(ctx, c, w, c, teacher, kBatch, config);
  const auto before = snapshot(trainer);
  trainer.accumulate(batch_ids(5), {});
  const model::LlamaGradientBlock& block = trainer.gradient_block();
  const auto* g = static_cast<const float*>(block.buffer->mapped());
  // the block's layout: the loss, every layer's scale gradients, every sign matrix's G
  std::uint64_t at = 1;
  std::vector<std::pair<std::string, std::uint64_t>> scale_at;
  for (const auto& [name, buffer] : trainer.state()) {
    if (name.ends_with(".scales")) {
      scale_at.emplace_back(name, at);
      at += buffer->size() / 4;
    }
  }
  const std::uint64_t sign_start = at;
  std::vector<std::vector<float>> sign_grads;
  std::vector<std::size_t> ranks;
  for (SignMatrix* s : trainer.sign_matrices()) {
    ranks.push_back(s->r());
    sign_grads.emplace_back(g + at, g + at + std::uint64_t{s->rows()} * s->r());
    at += std::uint64_t{s->rows()} * s->r();
  }
  REQUIRE(at == block.floats);
  REQUIRE(sign_start > 1);
  std::vector<std::vector<float>> scale_grads;
  for (const auto& [name, offset] : scale_at) {
    scale_grads.emplace_back(g + offset, g + offset + before.at(name).size());
  }
  REQUIRE(trainer.apply(sign_lr, scale_lr).applied);
  const auto after = snapshot(trainer);

  std::size_t flipped = 0, kept = 0, layer = 0, matrix = 0;
  for (const auto& [name, offset] : scale_at) {
    const std::vector<std::uint32_t>& old_bits = before.at(name);
    const std::vector<std::uint32_t>& new_bits = after.at(name);
    const std::vector<float>& grad = scale_grads[layer++];
    for (std::size_t i = 0; i < old_bits.size(); ++i) {
      float w0, w1;
      std::memcpy(&w0, &old_bits[i], 4);
      std::memcpy(&w1, &new_bits[i], 4);
      const float want = grad[i] == 0 ? w0 : w0 - (grad[i] > 0 ? scale_lr : -scale_lr);
      INFO(name << "[" << i << "] " << w0 << " -> " << w1 << ", gradient " << grad[i]);
      // lr·m̂/√v̂ is lr within a few f32 roundings of Adam's moments and bias corrections
      REQUIRE(std::abs(w1 - want) <= 1e-6f * std::abs(w0) + 1e-4f * scale_lr);
    }
    const std::string layer_name = name.substr(0, name.size() - std::string(".scales").size());
    for (std::size_t p = 0; p < 2; ++p) {
      for (const char* side : {"bits_u", "bits_v"}) {
        const std::string key = layer_name + ".path" + std::to_string(p) + "." + side;
        const std::vector<std::uint32_t>& b0 = before.at(key);
        const std::vector<std::uint32_t>& b1 = after.at(key);
        const std::size_t r = ranks[matrix];
        const std::vector<float>& G = sign_grads[matrix++];
        for (std::size_t e = 0; e < G.size(); ++e) {
          const std::size_t word = e / r * (r / 32) + (e % r) / 32, bit = e % 32;
          const bool plus = (b0[word] >> bit) & 1;
          const bool want_flip = plus ? G[e] > 0 : G[e] < 0;
          const bool flip = ((b0[word] ^ b1[word]) >> bit) & 1;
          INFO(key << " element " << e << " G " << G[e]);
          REQUIRE(flip == want_flip);
          (flip ? flipped : kept) += 1;
        }
      }
    }
  }
  CHECK(flipped > 1000);
  CHECK(kept > 1000);
}

GPU_TEST("llama trainer: distillation lowers the KL to the teacher", "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaWeights w = blr_toy(ctx, c);
  model::LlamaTrainer trainer(ctx, c, w, c, teacher, kBatch, train_config());
  const std::vector<std::uint32_t> held = batch_ids(1000);
  const double before = trainer.loss(held, {});
  for (int s = 1; s <= 30; ++s) REQUIRE(trainer.step(batch_ids(s), {}, 0.01f, 0.01f).applied);
  const double after = trainer.loss(held, {});
  INFO("held-out KL " << before << " -> " << after);
  CHECK(after < 0.7 * before);
  CHECK(trainer.steps() == 30);
  CHECK(trainer.skipped() == 0);
}

GPU_TEST("llama trainer: bad models, settings and batches are refused by name", "[model][trainer]") {
  const io::LlamaConfig c = toy_config();
  const model::LlamaWeights teacher = dense_toy(ctx, c);
  model::LlamaWeights w = blr_toy(ctx, c);
  const model::LlamaTrainConfig config = train_config();
  const auto refused = [&](const model::LlamaTrainConfig& cfg, const model::LlamaBatch& batch,
                           const std::string& what) {
    CHECK_THROWS_WITH((model::LlamaTrainer(ctx, c, w, c, teacher, batch, cfg)), ContainsSubstring(what));
  };
  model::LlamaTrainConfig bad = config;
  bad.gscale = 3;
  refused(bad, kBatch, "gscale = 3");
  bad.gscale = 0x1p-25f;
  refused(bad, kBatch, "want at least 2^-24");
  bad = config;
  bad.temperature = 0;
  refused(bad, kBatch, "temperature = 0");
  bad = config;
  bad.sign_step.grad_scale = 2;
  refused(bad, kBatch, "sign_step.grad_scale = 2");
  bad = config;
  bad.tokens_per_step = 5;
  refused(bad, kBatch, "tokens_per_step = 5");
  refused(config, {2, 33}, "of 1 to 32 tokens");
  {
    io::LlamaConfig other = c;
    other.vocab_size = 48;
    CHECK_THROWS_WITH((model::LlamaTrainer(ctx, c, w, other, teacher, kBatch, config)),
                      ContainsSubstring("vocabulary is 40, the teacher's 48"));
    model::LlamaWeights dense = dense_toy(ctx, c);
    CHECK_THROWS_WITH((model::LlamaTrainer(ctx, c, dense, c, teacher, kBatch, config)),
                      ContainsSubstring("no blr projection"));
  }
  model::LlamaTrainer trainer(ctx, c, w, c, teacher, kBatch, config);
  std::vector<std::uint32_t> ids = batch_ids(1);
  ids[7] = 40;
  CHECK_THROWS_WITH(trainer.step(ids, {}, 0.01f, 0.01f), ContainsSubstring("ids[7] = 40 is out of range"));
  ids.pop_back();
  CHECK_THROWS_WITH(trainer.step(ids, {}, 0.01f, 0.01f), ContainsSubstring("31 token ids for a batch of 32"));
  const std::vector<std::uint32_t> rows(32, 0);
  CHECK_THROWS_WITH(trainer.step(batch_ids(1), rows, 0.01f, 0.01f), ContainsSubstring("no teacher cache"));
  CHECK_THROWS_WITH(trainer.accumulate(batch_ids(1), {}), ContainsSubstring("without split"));
  CHECK_THROWS_WITH(trainer.step(batch_ids(1), {}, NAN, 0.01f), ContainsSubstring("learning rates"));
  Buffer cache = ctx.buffer(16 * c.hidden_size * 4, "test.cache");
  trainer.set_teacher_cache(cache, 16);
  std::vector<std::uint32_t> past(32, 3);
  past[9] = 16;
  CHECK_THROWS_WITH(trainer.step(batch_ids(1), past, 0.01f, 0.01f),
                    ContainsSubstring("cache_rows[9] = 16 is past the cache's 16 rows"));
  CHECK_THROWS_WITH(trainer.set_teacher_cache(cache, 17), ContainsSubstring("17 rows"));
  CHECK_THROWS_WITH(model::memory_plan_from_string("some"), ContainsSubstring("'some'"));
  CHECK_THROWS_WITH(model::blr_route_from_string("sparse"), ContainsSubstring("blr route 'sparse'"));
  CHECK(model::blr_route_from_string(model::to_string(model::BlrRoute::factored)) == model::BlrRoute::factored);
}
