#include "vkblr/model/llama_forward.hpp"

#include <algorithm>
#include <format>
#include <string>

#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/half.hpp"
#include "vkblr/ops/attention.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/embedding.hpp"
#include "vkblr/ops/rmsnorm.hpp"
#include "vkblr/ops/rope.hpp"
#include "vkblr/ops/swiglu.hpp"

namespace vkblr::model {
namespace {

constexpr std::uint32_t kMaxNormHidden = 16384;  // rmsnorm's row limit

void require_multiple_of_16(std::string_view field, std::uint32_t value) {
  if (value % 16 != 0) {
    fail("llama model: '{}' is {}: vkblr's GEMM wants every linear layer's sides multiples of 16", field, value);
  }
}

std::uint64_t f32_bytes(std::uint64_t a, std::uint64_t b = 1) { return a * b * 4; }

// y[tokens][n] (+)= staged[tokens][k] (f16) · w[n][k]ᵀ (f16), f32 sums.
void linear(Recorder& rec, Context& ctx, const Buffer& staged, const Buffer& w, const Buffer& y, std::uint32_t tokens,
            std::uint32_t n, std::uint32_t k, bool accumulate) {
  GemmShape shape;
  shape.m = tokens;
  shape.n = n;
  shape.k = k;
  shape.accumulate = accumulate;
  rec.add(gemm(ctx, staged, w, GemmB::plane, y, shape));
}

}  // namespace

void check_llama_supported(const Context& ctx, const io::LlamaConfig& c) {
  require_multiple_of_16("hidden_size", c.hidden_size);
  require_multiple_of_16("intermediate_size", c.intermediate_size);
  require_multiple_of_16("num_attention_heads × head_dim", c.q_size());
  require_multiple_of_16("num_key_value_heads × head_dim", c.kv_size());
  if (c.hidden_size > kMaxNormHidden) {
    fail("llama model: 'hidden_size' is {}: RMSNorm takes rows of at most {}", c.hidden_size, kMaxNormHidden);
  }
  const bool attention_takes = c.head_dim % 32 == 0 && c.head_dim <= 128;  // ops/attention.hpp's head dims
  if (!attention_takes ||
      !ops::attention_kernel_available(ctx, ops::attention_kernel_for(ctx, c.head_dim), c.head_dim)) {
    fail("llama model: 'head_dim' is {}: the attention op runs head dims 32, 64, 96 and 128 (within this "
         "device's shared memory)",
         c.head_dim);
  }
}

DenseLlamaWeights upload_dense_llama(Context& ctx, const io::LlamaCheckpoint& checkpoint) {
  const io::LlamaConfig& c = checkpoint.config();
  check_llama_supported(ctx, c);
  const auto f32 = [&](const std::string& name) { return ctx.upload(checkpoint.read_f32(name), name); };
  const auto f16 = [&](const std::string& name) { return ctx.upload(to_f16(checkpoint.read_f32(name)), name); };
  DenseLlamaWeights w;
  w.embed = f32("model.embed_tokens.weight");
  for (std::uint32_t n = 0; n < c.num_hidden_layers; ++n) {
    const std::string p = std::format("model.layers.{}.", n);
    DenseLlamaWeights::Block b;
    b.input_norm = f32(p + "input_layernorm.weight");
    b.post_norm = f32(p + "post_attention_layernorm.weight");
    b.q = f16(p + "self_attn.q_proj.weight");
    b.k = f16(p + "self_attn.k_proj.weight");
    b.v = f16(p + "self_attn.v_proj.weight");
    b.o = f16(p + "self_attn.o_proj.weight");
    b.gate = f16(p + "mlp.gate_proj.weight");
    b.up = f16(p + "mlp.up_proj.weight");
    b.down = f16(p + "mlp.down_proj.weight");
    w.blocks.push_back(std::move(b));
  }
  w.final_norm = f32("model.norm.weight");
  if (!c.tie_word_embeddings) w.head = f32("lm_head.weight");
  return w;
}

LlamaForward::LlamaForward(Context& ctx, const io::LlamaConfig& config, const LlamaBatch& max)
    : ctx_(ctx), config_(config), max_(max) {
  check_llama_supported(ctx, config);
  if (max.sequences == 0 || max.seq == 0 || max.seq > config.max_position_embeddings) {
    fail("llama forward: batch of {} sequences of {} tokens: want at least one, of 1 to {} tokens "
         "(max_position_embeddings)",
         max.sequences, max.seq, config.max_position_embeddings);
  }
  const std::uint64_t t = max.tokens();
  if (t > (1u << 24)) fail("llama forward: {} tokens in a batch, more than {}", t, 1u << 24);
  const io::LlamaConfig& c = config_;
  rope_ = ctx.upload(ops::rope_table(c.head_dim, c.rope_theta, max.seq), "llama.rope");
  x_ = ctx.buffer(f32_bytes(t, c.hidden_size), "llama.x");
  h_ = ctx.buffer(f32_bytes(t, c.hidden_size), "llama.h");
  inv_rms_ = ctx.buffer(f32_bytes(t), "llama.inv_rms");
  q_ = ctx.buffer(f32_bytes(t, c.q_size()), "llama.q");
  k_ = ctx.buffer(f32_bytes(t, c.kv_size()), "llama.k");
  v_ = ctx.buffer(f32_bytes(t, c.kv_size()), "llama.v");
  attn_ = ctx.buffer(f32_bytes(t, c.q_size()), "llama.attn");
  lse_ = ctx.buffer(f32_bytes(t, c.num_attention_heads), "llama.lse");
  gate_ = ctx.buffer(f32_bytes(t, c.intermediate_size), "llama.gate");
  up_ = ctx.buffer(f32_bytes(t, c.intermediate_size), "llama.up");
  act_ = ctx.buffer(f32_bytes(t, c.intermediate_size), "llama.act");
  const std::uint64_t widest = std::max({c.hidden_size, c.q_size(), c.intermediate_size});
  staged_ = ctx.buffer(t * widest * 2, "llama.staged16");
}

const Buffer& LlamaForward::positions(const LlamaBatch& batch) {
  auto it = positions_.find(batch.seq);
  if (it == positions_.end()) {
    std::vector<std::uint32_t> p(max_.tokens());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint32_t>(i % batch.seq);
    it = positions_.emplace(batch.seq, ctx_.upload(p, "llama.positions")).first;
  }
  return it->second;
}

void LlamaForward::record(Recorder& rec, const DenseLlamaWeights& w, const Buffer& ids, const Buffer& out,
                          const LlamaBatch& batch) {
  const io::LlamaConfig& c = config_;
  if (batch.sequences == 0 || batch.seq == 0 || batch.tokens() > max_.tokens() || batch.seq > max_.seq) {
    fail("llama forward: batch of {} sequences of {} tokens: want at least one token, at most {} tokens and "
         "sequences of at most {} (the scratch's)",
         batch.sequences, batch.seq, max_.tokens(), max_.seq);
  }
  if (w.blocks.size() != c.num_hidden_layers) {
    fail("llama forward: weights of {} blocks, the config has {}", w.blocks.size(), c.num_hidden_layers);
  }
  const std::uint32_t t = batch.tokens(), hidden = c.hidden_size, inter = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const Buffer& pos = positions(batch);
  const ops::RmsNorm norm{t, hidden, eps};

  rec.add(ops::embedding_fwd(ctx_, ids, w.embed, x_, {t, c.vocab_size, hidden}));
  for (const DenseLlamaWeights::Block& b : w.blocks) {
    rec.add(ops::rmsnorm_fwd(ctx_, x_, b.input_norm, h_, inv_rms_, norm));
    rec.add(ops::cvt(ctx_, h_, staged_, t, hidden, 1.0f));
    linear(rec, ctx_, staged_, b.q, q_, t, c.q_size(), hidden, false);
    linear(rec, ctx_, staged_, b.k, k_, t, c.kv_size(), hidden, false);
    linear(rec, ctx_, staged_, b.v, v_, t, c.kv_size(), hidden, false);
    rec.add(ops::rope_fwd(ctx_, q_, pos, rope_, {t, c.num_attention_heads, c.head_dim, max_.seq}));
    rec.add(ops::rope_fwd(ctx_, k_, pos, rope_, {t, c.num_key_value_heads, c.head_dim, max_.seq}));
    rec.add(ops::attention_forward(ctx_, q_, k_, v_, attn_, lse_,
                                   {batch.sequences, batch.seq, c.num_attention_heads, c.num_key_value_heads,
                                    c.head_dim, 0.0f}));
    rec.add(ops::cvt(ctx_, attn_, staged_, t, c.q_size(), 1.0f));
    linear(rec, ctx_, staged_, b.o, x_, t, hidden, c.q_size(), true);
    rec.add(ops::rmsnorm_fwd(ctx_, x_, b.post_norm, h_, inv_rms_, norm));
    rec.add(ops::cvt(ctx_, h_, staged_, t, hidden, 1.0f));
    linear(rec, ctx_, staged_, b.gate, gate_, t, inter, hidden, false);
    linear(rec, ctx_, staged_, b.up, up_, t, inter, hidden, false);
    rec.add(ops::swiglu_fwd(ctx_, gate_, up_, act_, t, inter));
    rec.add(ops::cvt(ctx_, act_, staged_, t, inter, 1.0f));
    linear(rec, ctx_, staged_, b.down, x_, t, hidden, inter, true);
  }
  rec.add(ops::rmsnorm_fwd(ctx_, x_, w.final_norm, out, inv_rms_, norm));
}

}  // namespace vkblr::model
