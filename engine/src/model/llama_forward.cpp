#include "vkblr/model/llama_forward.hpp"

#include <algorithm>
#include <charconv>
#include <format>
#include <set>
#include <string>
#include <utility>

#include "block.hpp"
#include "vkblr/error.hpp"
#include "vkblr/half.hpp"
#include "vkblr/ops/attention.hpp"
#include "vkblr/ops/embedding.hpp"
#include "vkblr/ops/rmsnorm.hpp"
#include "vkblr/ops/rope.hpp"

namespace vkblr::model {
namespace {

constexpr std::uint32_t kMaxNormHidden = 16384;  // rmsnorm's row limit

void require_multiple_of_16(std::string_view field, std::uint32_t value) {
  if (value % 16 != 0) {
    fail("llama model: '{}' is {}: vkblr's GEMM wants every linear layer's sides multiples of 16", field, value);
  }
}

std::uint64_t f32_bytes(std::uint64_t a, std::uint64_t b = 1) { return a * b * 4; }

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

LlamaWeights upload_dense_llama(Context& ctx, const io::LlamaCheckpoint& checkpoint) {
  const io::LlamaConfig& c = checkpoint.config();
  check_llama_supported(ctx, c);
  const auto f32 = [&](const std::string& name) { return ctx.upload(checkpoint.read_f32(name), name); };
  const auto f16 = [&](const std::string& name) {
    const io::TensorInfo& t = checkpoint.tensor(name);
    Projection p;
    p.out = static_cast<std::uint32_t>(t.shape[0]);
    p.in = static_cast<std::uint32_t>(t.shape[1]);
    p.plane = ctx.upload(to_f16(checkpoint.read_f32(name)), name);
    return p;
  };
  LlamaWeights w;
  w.embed = f32("model.embed_tokens.weight");
  for (std::uint32_t n = 0; n < c.num_hidden_layers; ++n) {
    const std::string p = std::format("model.layers.{}.", n);
    LlamaWeights::Block b;
    b.input_norm = f32(p + "input_layernorm.weight");
    b.post_norm = f32(p + "post_attention_layernorm.weight");
    for (const auto& [suffix, member] : detail::kProjections) b.*member = f16(p + std::string(suffix));
    w.blocks.push_back(std::move(b));
  }
  w.final_norm = f32("model.norm.weight");
  if (!c.tie_word_embeddings) w.head = f32("lm_head.weight");
  return w;
}

Projection* LlamaWeights::projection(std::string_view name) {
  constexpr std::string_view prefix = "model.layers.";
  if (!name.starts_with(prefix)) return nullptr;
  name.remove_prefix(prefix.size());
  std::size_t block = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), block);
  if (error != std::errc() || end == name.data() + name.size() || *end != '.' || block >= blocks.size()) {
    return nullptr;
  }
  name.remove_prefix(static_cast<std::size_t>(end - name.data()) + 1);
  for (const auto& [suffix, member] : detail::kProjections) {
    if (name == suffix) return &(blocks[block].*member);
  }
  return nullptr;
}

void use_blr_layers(Context& ctx, LlamaWeights& weights, const io::BlrModel& model) {
  std::set<std::string_view> seen;
  for (const io::BlrModelLayer& layer : model.layers) {
    Projection* p = weights.projection(layer.name);
    if (p == nullptr) fail("llama model: blr layer '{}' is not a projection of the model's blocks", layer.name);
    if (!seen.insert(layer.name).second) fail("llama model: blr layer '{}' is named twice", layer.name);
    const io::LayerShape& s = layer.result.shape;
    if (s.m != p->out || s.n != p->in) {
      fail("llama model: blr layer '{}' is {}x{}, the projection {}x{} (out x in)", layer.name, s.m, s.n, p->out,
           p->in);
    }
    p->blr = std::make_shared<BlrLayer>(make_blr_layer(ctx, s.m, s.n, s.rank, layer.result.paths, false));
    p->plane = Buffer();
  }
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
  blr_out_ = ctx.buffer(f32_bytes(t, c.hidden_size), "llama.blr_out");
}

BlrScratch& LlamaForward::blr_scratch(const BlrLayer& layer) {
  const auto key = std::tuple{layer.m, layer.n, layer.r, layer.paths.size()};
  auto it = blr_scratch_.find(key);
  if (it == blr_scratch_.end()) it = blr_scratch_.emplace(key, BlrScratch(ctx_, layer, max_.tokens())).first;
  return it->second;
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

void LlamaForward::record(Recorder& rec, const LlamaWeights& w, const Buffer& ids, const Buffer& out,
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
  const std::uint32_t t = batch.tokens(), hidden = c.hidden_size;
  const Buffer& pos = positions(batch);
  const ops::RmsNorm norm{t, hidden, static_cast<float>(c.rms_norm_eps)};

  rec.add(ops::embedding_fwd(ctx_, ids, w.embed, x_, {t, c.vocab_size, hidden}));
  const detail::BlockContext bc{ctx_, c, batch, rope_, max_.seq, pos, staged_, blr_out_};
  detail::BlockBuffers a;
  a.h1 = a.h2 = &h_;
  a.inv1 = a.inv2 = &inv_rms_;
  a.q = &q_;
  a.k = &k_;
  a.v = &v_;
  a.attn = &attn_;
  a.lse = &lse_;
  a.gate = &gate_;
  a.up = &up_;
  a.act = &act_;
  const detail::BlrScratchFor scratch = [this](std::size_t, const BlrLayer& layer) -> BlrScratch& {
    return blr_scratch(layer);
  };
  for (const LlamaWeights::Block& b : w.blocks) detail::record_block_forward(rec, bc, b, a, x_, scratch);
  rec.add(ops::rmsnorm_fwd(ctx_, x_, w.final_norm, out, inv_rms_, norm));
}

}  // namespace vkblr::model
