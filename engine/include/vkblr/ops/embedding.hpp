// vkblr/ops/embedding.hpp — the token embedding of a Llama model: the
// lookup of each token's row of the table, and its gradient, a
// deterministic scatter-add into the table's gradient (glsl/embedding.comp).
//
// The table is f32 [vocab][hidden], row-major: row v is token v's vector.
// That is also the layout of Hugging Face's lm_head.weight (nn.Linear,
// [out = vocab][in = hidden]), so a tied output head uses the same buffer:
// logits [tokens][vocab] = h · tableᵀ is gemm_f32 with trans_b (B stored
// [n = vocab][k = hidden]), and the head's weight gradient dlogitsᵀ · h
// [vocab][hidden] is gemm_f32 with trans_a, added to embedding_bwd's with
// `accumulate` (either order: each is one more f32 addition per element).
// docs/kernels.md ("Token embedding").
//
// The gradient has no float atomics: the host sorts the token positions by
// id once per batch (embedding_index, a stable counting sort that also
// refuses ids out of range), and each table element sums its tokens'
// gradients in position order; an id of more than kEmbeddingChunk tokens
// (a frequent token) in pieces of that many side by side, then the pieces
// in order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// The shape of an embedding: tokens·hidden and vocab·hidden below 2^32.
struct Embedding {
  std::uint32_t tokens = 0;  // ids in the batch (rows of the activations)
  std::uint32_t vocab = 0;   // rows of the table
  std::uint32_t hidden = 0;  // row length
};

// Segments longer than this are summed in pieces of this many positions.
inline constexpr std::uint32_t kEmbeddingChunk = 32;

// The token positions grouped by id, for embedding_bwd (upload all three):
//   offsets   u32 [vocab + 1]: positions[offsets[v] .. offsets[v+1]) are the
//             positions t with ids[t] == v, ascending (offsets[0] = 0,
//             offsets[vocab] = tokens);
//   positions u32 [tokens];
//   chunks    u32 [2·ceil(tokens / kEmbeddingChunk)][3]: the pieces of the
//             segments longer than kEmbeddingChunk, (begin, end, slot):
//             piece j of a segment starting at b covers positions[b + j·32
//             .. min(b + (j+1)·32, segment end)) and is summed into slot
//             2·⌊b/32⌋ + j; the entries left over are zero.
struct EmbeddingIndex {
  std::vector<std::uint32_t> offsets, positions, chunks;
};

// A stable counting sort of the positions by id, O(tokens + vocab). Throws
// vkblr::Error "embedding_index: ids[t] = id is out of range (vocab = V)"
// for the first id >= vocab, or for an empty batch or vocab.
EmbeddingIndex embedding_index(std::span<const std::uint32_t> ids, std::uint32_t vocab);

// out f32 [tokens][hidden] = table[ids[t]] for ids u32 [tokens]. The ids
// are on the device, not checked here: an id >= vocab writes a row of
// quiet NaNs (0x7fc00000) and reads nothing (check ids on the host with
// embedding_index). out must not overlap ids or table.
Dispatch embedding_fwd(Context& ctx, const Buffer& ids, const Buffer& table, const Buffer& out,
                       const Embedding& shape);

// dtable f32 [vocab][hidden] (+)= Σ over the tokens t of id v, ascending,
// of dy[t] (f32 [tokens][hidden]), with offsets, positions and chunks from
// embedding_index of the forward's ids. A sum of at most kEmbeddingChunk
// terms starts at +0 and adds in position order; a longer one is the sum
// from +0, in order, of its pieces of kEmbeddingChunk terms (the last
// shorter), each summed so; with `accumulate` the sum is then added to
// dtable. The bits of a row depend only on its own tokens' dy. Every
// element of dtable is written. dtable must not overlap the inputs.
// Two dispatches: the pieces (into a transient of 2·ceil(tokens / 32) ×
// hidden floats), then every row.
Ops embedding_bwd(Context& ctx, const Buffer& dy, const Buffer& offsets, const Buffer& positions,
                  const Buffer& chunks, const Buffer& dtable, const Embedding& shape, bool accumulate = false);

}  // namespace vkblr::ops
