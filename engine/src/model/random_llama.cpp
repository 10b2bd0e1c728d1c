#include "vkblr/model/random_llama.hpp"

#include <cmath>
#include <format>
#include <random>
#include <vector>

#include "block.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/random.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::model {
namespace {

// Draws on the device, one stream per tensor.
struct Draws {
  Context& ctx;
  std::uint64_t seed;
  std::uint32_t stream = 0;

  Buffer gaussian(std::uint64_t count, float scale, const char* label) {
    Buffer b = ctx.buffer(count * 4, label);
    Recorder rec(ctx);
    rec.add(ops::gaussian(ctx, b, count, seed, stream++, scale));
    rec.run();
    return b;
  }

  Buffer ones(std::uint32_t count, const char* label) { return ctx.upload(std::vector<float>(count, 1.0f), label); }

  Projection plane(std::uint32_t out, std::uint32_t in) {
    Projection p;
    p.out = out;
    p.in = in;
    const Buffer w = gaussian(std::uint64_t{out} * in, 1.0f / std::sqrt(static_cast<float>(in)), "random.w32");
    p.plane = ctx.buffer(std::uint64_t{out} * in * 2, "random.plane");
    Recorder rec(ctx);
    rec.add(ops::cvt(ctx, w, p.plane, out, in, 1.0f));
    rec.run();
    return p;
  }
};

}  // namespace

LlamaWeights random_dense_llama(Context& ctx, const io::LlamaConfig& c, std::uint64_t seed) {
  check_llama_supported(ctx, c);
  Draws d{ctx, seed};
  LlamaWeights w;
  w.embed = d.gaussian(std::uint64_t{c.vocab_size} * c.hidden_size, 1.0f, "random.embed");
  for (std::uint32_t n = 0; n < c.num_hidden_layers; ++n) {
    LlamaWeights::Block b;
    b.input_norm = d.ones(c.hidden_size, "random.norm");
    b.post_norm = d.ones(c.hidden_size, "random.norm");
    b.q = d.plane(c.q_size(), c.hidden_size);
    b.k = d.plane(c.kv_size(), c.hidden_size);
    b.v = d.plane(c.kv_size(), c.hidden_size);
    b.o = d.plane(c.hidden_size, c.q_size());
    b.gate = d.plane(c.intermediate_size, c.hidden_size);
    b.up = d.plane(c.intermediate_size, c.hidden_size);
    b.down = d.plane(c.hidden_size, c.intermediate_size);
    w.blocks.push_back(std::move(b));
  }
  w.final_norm = d.ones(c.hidden_size, "random.norm");
  if (!c.tie_word_embeddings) w.head = d.gaussian(std::uint64_t{c.vocab_size} * c.hidden_size, 1.0f, "random.head");
  return w;
}

void use_random_blr_layers(Context& ctx, LlamaWeights& weights, std::uint32_t paths, double bpw, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t b = 0; b < weights.blocks.size(); ++b) {
    for (const auto& [suffix, member] : detail::kProjections) {
      Projection& p = weights.blocks[b].*member;
      std::uint32_t rank = 0;
      try {
        rank = io::rank_for_bpw(p.out, p.in, paths, io::ScaleDtype::f16, bpw);
      } catch (const Error& e) {
        fail("random blr layers: model.layers.{}.{}: {}", b, suffix, e.what());
      }
      std::vector<BlrPathInit> init(paths);
      const auto level = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.in) * rank * paths));
      for (BlrPathInit& i : init) {
        i.bits_u.resize(std::size_t{p.out} * rank / 32);
        i.bits_v.resize(std::size_t{p.in} * rank / 32);
        for (std::uint32_t& word : i.bits_u) word = static_cast<std::uint32_t>(rng());
        for (std::uint32_t& word : i.bits_v) word = static_cast<std::uint32_t>(rng());
        i.h.assign(p.out, 1.0f);
        i.l.assign(rank, level);
        i.g.assign(p.in, 1.0f);
      }
      p.blr = std::make_shared<BlrLayer>(make_blr_layer(ctx, p.out, p.in, rank, init, false));
      p.plane = Buffer();
    }
  }
}

}  // namespace vkblr::model
