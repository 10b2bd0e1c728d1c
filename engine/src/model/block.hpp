// block.hpp (internal to vkblr::model) — one Llama block's forward and
// backward on the engine's ops, shared by LlamaForward (forward only, one
// set of buffers for every block) and LlamaTrainer (what the backward reads
// kept per block, or recomputed).
//
// Per block (llama_forward.hpp has the formulas), on the residual stream x
// f32 [tokens][hidden] updated in place:
//   h1 = rmsnorm(x)·w_in → q, k, v (RoPE in place) → attention → attn, lse
//   x += attn·Woᵀ
//   h2 = rmsnorm(x)·w_post → gate, up → act = silu(gate)·up
//   x += act·Wdᵀ
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

#include "vkblr/blr.hpp"
#include "vkblr/blr_dense.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/io/llama_config.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::model::detail {

// A block's seven projections by their Hugging Face names under
// "model.layers.N."; the index in this table is the projection's slot.
inline constexpr std::pair<std::string_view, Projection LlamaWeights::Block::*> kProjections[] = {
    {"self_attn.q_proj.weight", &LlamaWeights::Block::q},  {"self_attn.k_proj.weight", &LlamaWeights::Block::k},
    {"self_attn.v_proj.weight", &LlamaWeights::Block::v},  {"self_attn.o_proj.weight", &LlamaWeights::Block::o},
    {"mlp.gate_proj.weight", &LlamaWeights::Block::gate}, {"mlp.up_proj.weight", &LlamaWeights::Block::up},
    {"mlp.down_proj.weight", &LlamaWeights::Block::down}};
inline constexpr std::size_t kSlots = std::size(kProjections);
enum Slot : std::size_t { q = 0, k, v, o, gate, up, down };

// The buffers one block's forward writes (borrowed; several members may be
// the same buffer where nothing reads them later, as in LlamaForward).
// x_in / x_mid: where the forward copies the stream before the block and
// after its attention residual (null: not copied) — the inputs of the two
// norms, which the backward reads.
struct BlockBuffers {
  const Buffer* x_in = nullptr;   // f32 [tokens][hidden]
  const Buffer* h1 = nullptr;     // f32 [tokens][hidden]
  const Buffer* inv1 = nullptr;   // f32 [tokens]
  const Buffer* q = nullptr;      // f32 [tokens][q_size], after RoPE
  const Buffer* k = nullptr;      // f32 [tokens][kv_size], after RoPE
  const Buffer* v = nullptr;      // f32 [tokens][kv_size]
  const Buffer* attn = nullptr;   // f32 [tokens][q_size]
  const Buffer* lse = nullptr;    // f32 [tokens][heads]
  const Buffer* x_mid = nullptr;  // f32 [tokens][hidden]
  const Buffer* h2 = nullptr;     // f32 [tokens][hidden]
  const Buffer* inv2 = nullptr;   // f32 [tokens]
  const Buffer* gate = nullptr;   // f32 [tokens][inter]
  const Buffer* up = nullptr;     // f32 [tokens][inter]
  const Buffer* act = nullptr;    // f32 [tokens][inter]
};

// The scratch a blr projection of slot `slot` runs with.
using BlrScratchFor = std::function<BlrScratch&(std::size_t slot, const BlrLayer& layer)>;

// The dense-route staging a blr projection of slot `slot` runs with
// (vkblr/blr_dense.hpp); nullptr: the factored route (blr_forward,
// blr_backward).
using BlrDenseFor = std::function<BlrDense*(std::size_t slot, const BlrLayer& layer)>;

// What every block of a batch shares.
struct BlockContext {
  Context& ctx;
  const io::LlamaConfig& config;
  LlamaBatch batch;
  const Buffer& rope;           // rope_table of rope_positions rows
  std::uint32_t rope_positions;
  const Buffer& positions;      // u32 [tokens]: t % seq
  const Buffer& staged;         // f16 [tokens][max(hidden, q_size, inter)]
  const Buffer& blr_out;        // f32 [tokens][hidden]
  const BlrDenseFor* dense = nullptr;  // null: every blr projection factored
};

// Records the block's forward on the stream x.
void record_block_forward(Recorder& rec, const BlockContext& bc, const LlamaWeights::Block& b, const BlockBuffers& a,
                          const Buffer& x, const BlrScratchFor& scratch);

// The backward's buffers, shared by every block: f32 [tokens][width], the
// width after each.
struct BackwardBuffers {
  const Buffer* dh = nullptr;       // hidden: a norm output's gradient
  const Buffer* dh_part = nullptr;  // hidden: one projection's input gradient
  const Buffer* dh_part2 = nullptr; // hidden: another's (projections side by side)
  const Buffer* dattn = nullptr;    // q_size
  const Buffer* dq = nullptr;       // q_size
  const Buffer* dk = nullptr;       // kv_size
  const Buffer* dv = nullptr;       // kv_size
  const Buffer* dact = nullptr;     // inter
  const Buffer* dgate = nullptr;    // inter
  const Buffer* dup = nullptr;      // inter
  const Buffer* dnorm = nullptr;    // f32 [hidden] (one row): the frozen norms' weight gradients, discarded
};

// Where a blr projection's backward puts its sign gradients (one entry per
// path; empty: none formed).
using SignGradsFor = std::function<std::span<const BlrSignGrads>(std::size_t slot)>;

struct BackwardSettings {
  float gscale = 64.0f;  // f16 staging of the blr, attention and dense backward
};

// Records the block's backward: dx (the gradient of the block's output
// stream) becomes the gradient of its input stream, in place; every blr
// projection's scale gradients accumulate and its sign gradients add into
// signs(slot). Reads the forward's buffers `a` (x_in and x_mid included)
// and the blr scratch of the same forward.
void record_block_backward(Recorder& rec, const BlockContext& bc, const LlamaWeights::Block& b,
                           const BlockBuffers& a, const BackwardBuffers& g, const Buffer& dx,
                           const BlrScratchFor& scratch, const SignGradsFor& signs, const BackwardSettings& settings);

}  // namespace vkblr::model::detail
