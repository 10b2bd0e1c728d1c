// vkblr-llama-forward CHECKPOINT IDS.npy SEQUENCES SEQ OUT.safetensors — the final
// hidden states of the engine's dense forward (vkblr/model/llama_forward.hpp)
// of a Hugging Face checkpoint on the token ids of IDS.npy (SEQUENCES ×
// SEQ of them, sequence by sequence), written as the f32 tensor "hidden"
// [tokens][hidden] of a safetensors file.
// vkblr-llama-forward --held-out CHECKPOINT TOKENS.npy CONTEXT STRIDE BATCH
// [--blr MODEL_FILE] — the held-out measure of the stream TOKENS.npy
// (vkblr/model/held_out.hpp) as one line of JSON on stdout; with --blr, of
// the model with a vkblr-fit model file's layers in place of their
// projections.
// Runs under the Khronos validation layers. Exit 0 on success, 1 with the
// message on any error or validation message, 2 for a bad command line.
// tests/fit/pytools_model_forward.py compares both with PyTorch.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <format>
#include <string>
#include <vector>

#include "vkblr/context.hpp"
#include "vkblr/error.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/model/held_out.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/recorder.hpp"

namespace {

std::uint32_t count(const char* text, const char* what) {
  const long long v = std::stoll(text);
  if (v < 1 || v > (1 << 24)) throw vkblr::Error(std::format("{} is {}: want 1 to 2^24", what, text));
  return static_cast<std::uint32_t>(v);
}

}  // namespace

// The held-out measure, printed as JSON.
int held_out(char** argv, const char* blr_file) {
  vkblr::Context ctx(vkblr::ContextOptions{.validation = true});
  const vkblr::io::LlamaCheckpoint checkpoint(argv[0]);
  const auto& config = checkpoint.config();
  const std::vector<std::uint32_t> tokens = vkblr::io::read_npy_token_ids(argv[1], config.vocab_size);
  vkblr::model::LlamaWeights weights = vkblr::model::upload_dense_llama(ctx, checkpoint);
  if (blr_file != nullptr) vkblr::model::use_blr_layers(ctx, weights, vkblr::io::read_blr_model(blr_file));
  const vkblr::model::HeldOutResult r = vkblr::model::evaluate_held_out(
      ctx, config, weights, tokens, {count(argv[2], "CONTEXT"), count(argv[3], "STRIDE"), count(argv[4], "BATCH")});
  if (!ctx.validation_messages().empty()) {
    for (const auto& m : ctx.validation_messages()) std::fprintf(stderr, "validation: %s\n", m.c_str());
    return 1;
  }
  std::printf("{\"tokens_scored\": %llu, \"windows\": %llu, \"loss_nats\": %.17g, \"perplexity\": %.17g}\n",
              static_cast<unsigned long long>(r.tokens_scored), static_cast<unsigned long long>(r.windows),
              r.loss_nats, r.perplexity);
  return 0;
}

int main(int argc, char** argv) {
  const bool measure = argc >= 7 && std::string(argv[1]) == "--held-out";
  const bool with_blr = measure && argc == 9 && std::string(argv[7]) == "--blr";
  if (!(argc == 6 || (measure && argc == 7) || with_blr)) {
    std::fprintf(stderr,
                 "usage: vkblr-llama-forward CHECKPOINT IDS.npy SEQUENCES SEQ OUT.safetensors\n"
                 "       vkblr-llama-forward --held-out CHECKPOINT TOKENS.npy CONTEXT STRIDE BATCH [--blr FILE]\n");
    return 2;
  }
  try {
    if (measure) return held_out(argv + 2, with_blr ? argv[8] : nullptr);
    const vkblr::model::LlamaBatch batch{count(argv[3], "SEQUENCES"), count(argv[4], "SEQ")};
    vkblr::Context ctx(vkblr::ContextOptions{.validation = true});
    const vkblr::io::LlamaCheckpoint checkpoint(argv[1]);
    const auto& config = checkpoint.config();
    const std::vector<std::uint32_t> ids = vkblr::io::read_npy_token_ids(argv[2], config.vocab_size);
    if (ids.size() != batch.tokens()) {
      throw vkblr::Error(std::format("{}: {} token ids, want SEQUENCES × SEQ = {}", argv[2], ids.size(),
                                     batch.tokens()));
    }
    const vkblr::model::LlamaWeights weights = vkblr::model::upload_dense_llama(ctx, checkpoint);
    vkblr::model::LlamaForward forward(ctx, config, batch);
    const vkblr::Buffer ids_buffer = ctx.upload(ids, "ids");
    vkblr::Buffer out = ctx.buffer(std::uint64_t{batch.tokens()} * config.hidden_size * 4, "hidden");
    vkblr::Recorder rec(ctx);
    forward.record(rec, weights, ids_buffer, out, batch);
    rec.run();
    const std::vector<float> hidden = out.download<float>();
    if (!ctx.validation_messages().empty()) {
      for (const auto& m : ctx.validation_messages()) std::fprintf(stderr, "validation: %s\n", m.c_str());
      return 1;
    }
    vkblr::io::SafetensorsWriter file;
    file.add_f32("hidden", {batch.tokens(), config.hidden_size}, hidden);
    file.write(argv[5]);  // atomic
    std::printf("vkblr-llama-forward: %u tokens through %u blocks on %s; wrote %s\n", batch.tokens(),
                config.num_hidden_layers, ctx.caps().device_name.c_str(), argv[5]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-llama-forward: %s\n", e.what());
    return 1;
  }
}
