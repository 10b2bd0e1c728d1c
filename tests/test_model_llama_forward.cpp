// The dense Llama forward on the engine (vkblr/model/llama_forward.hpp),
// from a Hugging Face checkpoint written to disk, against the f64 host
// model (support/llama_model_ref.hpp: Hugging Face's LlamaForCausalLM op
// by op, the GEMM inputs rounded to f16 where the engine stages them); the
// same bits run after run and in a replayed graph; bad batches and models
// the engine cannot run refused. The held-out measure's windows
// (vkblr/model/held_out.hpp): every target scored once.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "support/fit_files.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/llama_model_ref.hpp"
#include "vkblr/half.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/model/held_out.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using Json = nlohmann::json;

namespace {

// 2 blocks, hidden 64, 2 query heads of 32 over 1 KV head, MLP 96, vocab 40.
Json toy_config() {
  return Json{{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 40},
              {"hidden_size", 64}, {"intermediate_size", 96}, {"num_hidden_layers", 2},
              {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"head_dim", 32},
              {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5}, {"rope_theta", 500.0},
              {"tie_word_embeddings", false}};
}

// Random weights: the linear layers at 1/sqrt(fan-in), rounded to f16 (as
// the engine stores them, so that upload loses nothing); norms around 1;
// the embedding in ±1.
std::map<std::string, std::vector<float>> toy_weights(const io::LlamaConfig& c) {
  std::map<std::string, std::vector<float>> w;
  std::uint64_t seed = 100;
  for (const auto& p : io::llama_parameters(c)) {
    const std::size_t n = p.shape.size() == 2 ? p.shape[0] * p.shape[1] : p.shape[0];
    if (p.linear_in_block) {
      std::vector<float> v = vkt::random_floats(n, ++seed, static_cast<float>(1.7 / std::sqrt(double(p.shape[1]))));
      for (float& x : v) x = f16_to_f32(f32_to_f16(x));
      w[p.name] = v;
    } else if (p.shape.size() == 1) {
      std::vector<float> v = vkt::random_floats(n, ++seed, 0.3f);
      for (float& x : v) x += 1.0f;
      w[p.name] = v;
    } else {
      w[p.name] = vkt::random_floats(n, ++seed, 1.0f);
    }
  }
  return w;
}

void write_checkpoint(const vkt::TempDir& dir, const Json& config,
                      const std::map<std::string, std::vector<float>>& weights) {
  vkt::write_raw_file(dir.file("config.json"), config.dump());
  io::SafetensorsWriter writer;
  const io::LlamaConfig c = io::parse_llama_config(config.dump(), "toy");
  for (const auto& p : io::llama_parameters(c)) writer.add_f32(p.name, p.shape, weights.at(p.name));
  writer.write(dir.file("model.safetensors"));
}

std::vector<std::uint32_t> random_ids(std::size_t n, std::uint32_t vocab, std::uint64_t seed) {
  std::vector<std::uint32_t> ids = vkt::random_words(n, seed);
  for (auto& id : ids) id %= vocab;
  return ids;
}

std::vector<float> run_forward(Context& ctx, model::LlamaForward& forward, const model::LlamaWeights& w,
                               const std::vector<std::uint32_t>& ids, const model::LlamaBatch& batch) {
  const Buffer ids_buffer = ctx.upload(ids);
  Buffer out = ctx.buffer(std::uint64_t{batch.tokens()} * forward.config().hidden_size * 4);
  out.fill(vkt::kPoison32);
  Recorder rec(ctx);
  forward.record(rec, w, ids_buffer, out, batch);
  rec.run();
  return out.download<float>();
}

}  // namespace

GPU_TEST("llama forward: a checkpoint's final hidden states match the f64 model", "[model][llama]") {
  vkt::TempDir dir;
  const Json config = toy_config();
  const io::LlamaConfig c = io::parse_llama_config(config.dump(), "toy");
  const auto weights = toy_weights(c);
  write_checkpoint(dir, config, weights);
  const io::LlamaCheckpoint checkpoint(dir.path());
  const model::LlamaWeights w = model::upload_dense_llama(ctx, checkpoint);
  model::LlamaForward forward(ctx, c, {3, 32});
  const vkt::HostLlama host = vkt::host_llama_from_tensors(c, weights);

  // 2 sequences of 24 (the scratch holds 3 of 32), then 3 of 9: positions
  // restart at each sequence's first row.
  for (const model::LlamaBatch batch : {model::LlamaBatch{2, 24}, model::LlamaBatch{3, 9}}) {
    CAPTURE(batch.sequences, batch.seq);
    const auto ids = random_ids(batch.tokens(), c.vocab_size, 7 + batch.seq);
    const std::vector<float> got = run_forward(ctx, forward, w, ids, batch);
    const std::vector<double> want =
        vkt::host_llama_forward(host, ids, batch.sequences, batch.seq, vkt::Staging::f16).out;
    // The output rows are normalized (|values| around the norm's weight,
    // ~1). The engine stages the same f16 inputs as the reference except
    // where its f32 value and the reference's f64 one round to neighbouring
    // f16 values (2^-11 apart): such flips, spread by the later layers,
    // bound the difference; wrong semantics (a rotary pairing, a head
    // mapping, a missing residual) change rows by O(1).
    double worst = 0, sum = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      REQUIRE(std::isfinite(got[i]));
      const double e = std::abs(double(got[i]) - want[i]);
      worst = std::max(worst, e);
      sum += e;
    }
    INFO("worst " << worst << ", mean " << sum / double(want.size()));
    CHECK(worst < 2e-2);
    CHECK(sum / double(want.size()) < 1e-3);
  }
}

GPU_TEST("llama forward: the same bits run after run and from a replayed graph", "[model][llama]") {
  vkt::TempDir dir;
  const Json config = toy_config();
  const io::LlamaConfig c = io::parse_llama_config(config.dump(), "toy");
  write_checkpoint(dir, config, toy_weights(c));
  const model::LlamaWeights w = model::upload_dense_llama(ctx, io::LlamaCheckpoint(dir.path()));
  model::LlamaForward forward(ctx, c, {2, 32});
  const model::LlamaBatch batch{2, 32};
  const auto ids = random_ids(batch.tokens(), c.vocab_size, 3);
  const std::vector<float> first = run_forward(ctx, forward, w, ids, batch);
  CHECK(run_forward(ctx, forward, w, ids, batch) == first);

  const Buffer ids_buffer = ctx.upload(ids);
  Buffer out = ctx.buffer(first.size() * 4);
  Recorder rec(ctx);
  forward.record(rec, w, ids_buffer, out, batch);
  Graph graph = rec.finish();
  for (int replay = 0; replay < 2; ++replay) {
    out.fill(vkt::kPoison32);
    graph.run();
    CHECK(out.download<float>() == first);
  }
}

GPU_TEST("llama forward: batches past the scratch and models the engine cannot run are refused", "[model][llama]") {
  const io::LlamaConfig c = io::parse_llama_config(toy_config().dump(), "toy");
  model::LlamaForward forward(ctx, c, {2, 16});
  const model::LlamaWeights none;
  const Buffer ids = ctx.buffer(4096), out = ctx.buffer(1 << 20);
  Recorder rec(ctx);
  CHECK_THAT(vkt::error_of([&] { forward.record(rec, none, ids, out, {1, 17}); }),
             ContainsSubstring("batch of 1 sequences of 17 tokens"));
  CHECK_THAT(vkt::error_of([&] { forward.record(rec, none, ids, out, {3, 16}); }),
             ContainsSubstring("at most 32 tokens"));
  CHECK_THAT(vkt::error_of([&] { forward.record(rec, none, ids, out, {2, 16}); }),
             ContainsSubstring("weights of 0 blocks, the config has 2"));
  CHECK_THAT(vkt::error_of([&] { model::LlamaForward(ctx, c, {1, 65}); }),
             ContainsSubstring("of 1 to 64 tokens (max_position_embeddings)"));

  Json odd = toy_config();
  odd["intermediate_size"] = 100;
  CHECK_THAT(vkt::error_of([&] { model::LlamaForward(ctx, io::parse_llama_config(odd.dump(), "odd"), {1, 8}); }),
             ContainsSubstring("'intermediate_size' is 100"));
  Json wide = toy_config();
  wide["head_dim"] = 48;
  CHECK_THAT(vkt::error_of([&] { model::LlamaForward(ctx, io::parse_llama_config(wide.dump(), "wide"), {1, 8}); }),
             ContainsSubstring("'head_dim' is 48"));
}

TEST_CASE("held-out windows: every target scored once, the last window at the stream's end", "[model][llama]") {
  for (const auto& [total, context, stride] : {std::tuple{150u, 32u, 12u}, std::tuple{33u, 32u, 16u},
                                               std::tuple{2u, 8u, 4u}, std::tuple{1000u, 64u, 64u}}) {
    CAPTURE(total, context, stride);
    const auto plan = model::window_plan(total, context, stride);
    const std::uint64_t length = std::min<std::uint64_t>(context, total - 1);
    std::vector<int> scored(total, 0);
    for (const model::Window& w : plan) {
      REQUIRE(w.begin + length <= total - 1);
      for (std::uint64_t j = w.first; j <= w.begin + length; ++j) ++scored[j];
    }
    CHECK(plan.back().begin + length == total - 1);
    CHECK(scored[0] == 0);
    for (std::uint64_t j = 1; j < total; ++j) CHECK(scored[j] == 1);
  }
  CHECK(model::window_plan(150, 32, 12).size() == 11);  // evaluate.py's window_plan(150, 32, 12)
  CHECK_THAT(vkt::error_of([] { model::window_plan(1, 8, 4); }), ContainsSubstring("a stream of 1 tokens"));
  CHECK_THAT(vkt::error_of([] { model::window_plan(100, 8, 9); }), ContainsSubstring("stride 9: want 1 to context 8"));
}

GPU_TEST("llama weights: blr layers that are not the model's projections are refused by name", "[model][llama]") {
  vkt::TempDir dir;
  const Json config = toy_config();
  const io::LlamaConfig c = io::parse_llama_config(config.dump(), "toy");
  write_checkpoint(dir, config, toy_weights(c));
  model::LlamaWeights w = model::upload_dense_llama(ctx, io::LlamaCheckpoint(dir.path()));
  CHECK(w.projection("model.layers.1.mlp.down_proj.weight") == &w.blocks[1].down);
  CHECK(w.projection("model.layers.0.self_attn.k_proj.weight") == &w.blocks[0].k);
  CHECK(w.projection("model.layers.2.mlp.down_proj.weight") == nullptr);  // 2 blocks
  CHECK(w.projection("lm_head.weight") == nullptr);
  CHECK(w.projection("model.layers.1.mlp.down_proj") == nullptr);

  const auto refusal = [&](const std::string& name, std::uint32_t m, std::uint32_t n) {
    io::BlrModel blr;
    blr.layers.push_back({name, {}});
    blr.layers.back().result.shape.m = m;
    blr.layers.back().result.shape.n = n;
    return vkt::error_of([&] { model::use_blr_layers(ctx, w, blr); });
  };
  CHECK_THAT(refusal("lm_head.weight", 40, 64), ContainsSubstring("'lm_head.weight' is not a projection"));
  CHECK_THAT(refusal("model.layers.7.mlp.up_proj.weight", 96, 64), ContainsSubstring("is not a projection"));
  CHECK_THAT(refusal("model.layers.0.mlp.up_proj.weight", 64, 96),
             ContainsSubstring("'model.layers.0.mlp.up_proj.weight' is 64x96, the projection 96x64 (out x in)"));
  CHECK_FALSE(w.blocks[0].up.is_blr());
}
