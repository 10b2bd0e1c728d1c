// vkblr/model/llama_forward.hpp — the forward of a dense Llama-family model
// on the engine's ops, from token ids to the final hidden states (the
// input of the output head; the losses of vkblr/ops/logit_loss.hpp apply
// the head in vocabulary slices). The teacher's forward of whole-model
// distillation, and the measure of a model's held-out loss.
//
// Per block, as Hugging Face's LlamaDecoderLayer (tools/model/llama.py):
//   h = rmsnorm(x)·w_in;  q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ;  rope(q), rope(k)
//   x += attention(q, k, v)·Woᵀ
//   h = rmsnorm(x)·w_post;  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
// then out = rmsnorm(x)·w_final. The linear layers run on the f16 GEMM
// (vkblr/gemm.hpp: weights stored f16, activations staged to f16, f32
// accumulation, the residual adds done by the GEMM's accumulate); the
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
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/io/llama_config.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::model {

// A dense model's weights on the device: the embedding and norms f32, the
// linear layers f16 [out][in] (nn.Linear's layout, the GEMM's plane).
struct DenseLlamaWeights {
  struct Block {
    Buffer input_norm, post_norm;            // f32 [hidden]
    Buffer q, k, v, o, gate, up, down;       // f16 [out][in]
  };
  Buffer embed;                               // f32 [vocab][hidden]
  std::vector<Block> blocks;
  Buffer final_norm;                          // f32 [hidden]
  Buffer head;                                // f32 [vocab][hidden]; empty when tied (use embed)
  const Buffer& head_weight() const { return head ? head : embed; }
};

// Checks that the engine can run `config` (linear sides multiples of 16,
// the attention's head dims, hidden ≤ 16384 for RMSNorm); throws
// vkblr::Error naming the field otherwise.
void check_llama_supported(const Context& ctx, const io::LlamaConfig& config);

// Reads every parameter of the checkpoint and uploads it (f16 for the
// linear layers, rounded to nearest even). Throws for a model the engine
// cannot run (check_llama_supported) and the checkpoint's errors.
DenseLlamaWeights upload_dense_llama(Context& ctx, const io::LlamaCheckpoint& checkpoint);

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
  void record(Recorder& rec, const DenseLlamaWeights& weights, const Buffer& ids, const Buffer& out,
              const LlamaBatch& batch);

  const io::LlamaConfig& config() const { return config_; }

 private:
  const Buffer& positions(const LlamaBatch& batch);

  Context& ctx_;
  io::LlamaConfig config_;
  LlamaBatch max_;
  std::map<std::uint32_t, Buffer> positions_;  // by seq: u32 [max tokens], t % seq
  Buffer rope_;                                // the rotary table, max.seq positions
  Buffer x_, h_, inv_rms_, q_, k_, v_, attn_, lse_, gate_, up_, act_, staged_;
};

}  // namespace vkblr::model
