// vkblr/model/llama_forward.hpp — the forward of a Llama-family model, its
// projections dense or blr (a vkblr-fit model file's layers), on the
// engine's ops, from token ids to the final hidden states (the
// input of the output head; the losses of vkblr/ops/logit_loss.hpp apply
// the head in vocabulary slices). The teacher's forward of whole-model
// distillation, and the measure of a model's held-out loss.
//
// Per block, as Hugging Face's LlamaDecoderLayer (tools/model/llama.py):
//   h = rmsnorm(x)·w_in;  q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ;  rope(q), rope(k)
//   x += attention(q, k, v)·Woᵀ
//   h = rmsnorm(x)·w_post;  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
// then out = rmsnorm(x)·w_final. Dense projections run on the f16 GEMM
// (vkblr/gemm.hpp: weights stored f16, activations staged to f16, f32
// accumulation, the residual adds done by the GEMM's accumulate), blr ones
// on blr_forward (their output added to the stream by add_into); the
// norms, rotary positions, attention and SwiGLU in f32. Activations are f32
// rows [tokens][features], tokens = sequences · seq, sequence s at rows
// s·seq .. s·seq + seq − 1, each starting at position 0.
//
// Deterministic: the same ids give the same bits run after run on one
// device (every op it records is). Weights must have every linear side a
// multiple of 16 (the GEMM's rule) and a head_dim the attention op takes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/io/llama_config.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::model {

// One projection of a block: dense (an f16 plane [out][in], nn.Linear's
// layout, the GEMM's B) or a blr layer (vkblr/blr.hpp; plane empty).
struct Projection {
  std::uint32_t out = 0, in = 0;  // the weight's shape [out][in]
  Buffer plane;
  Buffer plane_t;  // f16 [in][out], the plane transposed: its input gradient's B (LlamaTrainer makes it)
  std::shared_ptr<BlrLayer> blr;
  bool is_blr() const { return blr != nullptr; }
};

// A model's weights on the device: the embedding and norms f32, each
// projection dense or blr.
struct LlamaWeights {
  struct Block {
    Buffer input_norm, post_norm;                  // f32 [hidden]
    Projection q, k, v, o, gate, up, down;
  };
  Buffer embed;                                     // f32 [vocab][hidden]
  std::vector<Block> blocks;
  Buffer final_norm;                                // f32 [hidden]
  Buffer head;                                      // f32 [vocab][hidden]; empty when tied (use embed)
  const Buffer& head_weight() const { return head ? head : embed; }
  // The projection of a Hugging Face parameter name
  // ("model.layers.3.mlp.down_proj.weight"); null for any other name.
  Projection* projection(std::string_view name);
};

// Checks that the engine can run `config` (linear sides multiples of 16,
// the attention's head dims, hidden ≤ 16384 for RMSNorm); throws
// vkblr::Error naming the field otherwise.
void check_llama_supported(const Context& ctx, const io::LlamaConfig& config);

// Reads every parameter of the checkpoint and uploads it (f16 for the
// linear layers, rounded to nearest even). Throws for a model the engine
// cannot run (check_llama_supported) and the checkpoint's errors.
LlamaWeights upload_dense_llama(Context& ctx, const io::LlamaCheckpoint& checkpoint);

// Puts every layer of a vkblr-fit model file in place of its projection
// (the dense plane is released): the compressed model. Throws vkblr::Error
// naming the layer for a name that is not a projection of the model, a
// shape other than the projection's, or a layer named twice.
void use_blr_layers(Context& ctx, LlamaWeights& weights, const io::BlrModel& model);

// The shape of a batch: `sequences` windows of `seq` tokens.
struct LlamaBatch {
  std::uint32_t sequences = 0;
  std::uint32_t seq = 0;
  std::uint32_t tokens() const { return sequences * seq; }
};

// The forward's scratch for batches up to `max` (tokens and seq at most
// max's), and the rotary table for positions below max.seq. Records the
// forward into a Recorder (replay it as a Graph for every batch of the
// same shape).
class LlamaForward {
 public:
  LlamaForward(Context& ctx, const io::LlamaConfig& config, const LlamaBatch& max);

  // Records out f32 [tokens][hidden] = the final hidden states of the
  // token ids `ids` (u32 [tokens]; an id ≥ vocab gives NaN rows, which
  // spread through its sequence). Throws for a batch larger than max or
  // buffers too small.
  //
  // Blr projections run blr_forward (vkblr/blr.hpp) with a scratch per
  // layer shape, made on first use and shared by the layers of that shape
  // (a forward keeps nothing for a backward).
  void record(Recorder& rec, const LlamaWeights& weights, const Buffer& ids, const Buffer& out,
              const LlamaBatch& batch);

  const io::LlamaConfig& config() const { return config_; }

 private:
  const Buffer& positions(const LlamaBatch& batch);
  BlrScratch& blr_scratch(const BlrLayer& layer);

  Context& ctx_;
  io::LlamaConfig config_;
  LlamaBatch max_;
  std::map<std::uint32_t, Buffer> positions_;  // by seq: u32 [max tokens], t % seq
  Buffer rope_;                                // the rotary table, max.seq positions
  Buffer x_, h_, inv_rms_, q_, k_, v_, attn_, lse_, gate_, up_, act_, staged_;
  Buffer blr_out_;  // f32 [tokens][hidden]: a blr o/down projection's output before the residual add
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::size_t>, BlrScratch> blr_scratch_;
};

}  // namespace vkblr::model
