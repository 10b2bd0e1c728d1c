// vkblr/ops/rope.hpp — the rotary position embedding of a Llama attention
// block on q and k (Hugging Face's rotate_half convention), and its
// gradient, the inverse rotation (glsl/rope.comp).
//
// A row of q (or k) is f32 [heads][head_dim], one row per token, rotated in
// place; each head's pairs (i, i + head_dim/2), i < head_dim/2, turn by
// θ = position · base^(−2i/head_dim):
//   x[i] ← x[i]·cos θ − x[i + h]·sin θ,  x[i + h] ← x[i + h]·cos θ + x[i]·sin θ
// Positions are u32 [tokens], one per token, so a batch holds several
// sequences each counting from 0 (or any positions: packed, shifted).
//
// cos θ and sin θ come from a table made on the host in f64 and rounded
// once to f32 (rope_table): the GPU's own sin/cos are only 2^−11 accurate
// (Vulkan's bound), and an f32 angle position·inv_freq loses ~4096·2^−24
// rad by position 4096. So the rotation matches an f64 reference to f32
// accuracy at every position the table holds (docs/kernels.md, "Rotary
// position embedding": each output within 4 ulps of its terms' magnitudes,
// e.g. |x[i]·cos| + |x[i + h]·sin|). Hugging Face computes the angle in
// f32; its own error at position 4096 is up to ~2e−4 rad.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// The cos/sin table: f32 [max_positions][head_dim / 2][2], entry (p, i) =
// (cos θ, sin θ) with θ = p · base^(−2i/head_dim) evaluated in f64
// (std::pow, the product, std::cos and std::sin of the exact-to-f64 angle),
// then rounded to f32. head_dim even, 2..1024; base finite > 1;
// max_positions >= 1 (Error otherwise). Upload it once per model.
std::vector<float> rope_table(std::uint32_t head_dim, double base, std::uint32_t max_positions);

struct Rope {
  std::uint32_t tokens = 0;         // rows of x
  std::uint32_t heads = 0;          // heads of a row (q: attention heads; k: KV heads)
  std::uint32_t head_dim = 0;       // even, 2..1024 (64 and 128 in the models here)
  std::uint32_t max_positions = 0;  // rows of the table
};

// x f32 [tokens][heads][head_dim] rotated in place by each token's
// position (positions u32 [tokens]) with table (rope_table). A position >=
// max_positions writes NaN to its row's heads (reported, nothing read out
// of bounds). x must not overlap positions or table.
Dispatch rope_fwd(Context& ctx, const Buffer& x, const Buffer& positions, const Buffer& table, const Rope& shape);

// The gradient: dx rotated in place by −θ (the transpose of rope_fwd's
// rotation), the same layout and rules.
Dispatch rope_bwd(Context& ctx, const Buffer& dx, const Buffer& positions, const Buffer& table, const Rope& shape);

// q and k of one attention layer, rotated in one dispatch.
struct RopeQk {
  std::uint32_t tokens = 0;         // rows of q and k
  std::uint32_t heads = 0;          // attention heads: q f32 [tokens][heads][head_dim]
  std::uint32_t kv_heads = 0;       // KV heads: k f32 [tokens][kv_heads][head_dim]
  std::uint32_t head_dim = 0;       // even, 2..1024
  std::uint32_t max_positions = 0;  // rows of the table
};

// rope_fwd on q and on k, the same bits, in one dispatch (two small ones
// leave the GPU idle at their ends). q and k must not overlap each other,
// positions or table.
Dispatch rope_fwd(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& positions, const Buffer& table,
                  const RopeQk& shape);

// rope_bwd on dq and on dk, the same bits, in one dispatch.
Dispatch rope_bwd(Context& ctx, const Buffer& dq, const Buffer& dk, const Buffer& positions, const Buffer& table,
                  const RopeQk& shape);

}  // namespace vkblr::ops
