// Token embedding lookup and its deterministic gradient (glsl/embedding.comp),
// and the host's index of positions by id.
#include "embedding.h"

#include <algorithm>

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/embedding.hpp"

namespace vkblr::ops {
namespace {
using detail::need_bytes;
using detail::require_apart;
using shader::EmbeddingPush;
static_assert(sizeof(EmbeddingPush) == 32);
static_assert(kEmbeddingChunk == VKBLR_EMBEDDING_CHUNK);

// Entries of an index's chunks, and rows of the backward's pieces:
// 2·ceil(tokens / kEmbeddingChunk), enough for any batch (a segment of
// length l > C has ceil(l/C) <= 2·floor(l/C) pieces, and the segments'
// floor(l/C) add up to at most floor(tokens/C)).
std::uint32_t chunk_slots(std::uint32_t tokens) {
  return static_cast<std::uint32_t>(2 * ((std::uint64_t{tokens} + kEmbeddingChunk - 1) / kEmbeddingChunk));
}

// The push constants of `n` elements written, counted in units of `width`
// floats (1, or 4 for the vec4 kernels; hidden a multiple of it).
EmbeddingPush embedding_push(const char* op, const Embedding& s, std::uint64_t n, std::uint32_t width = 1) {
  detail::dim(op, "tokens", s.tokens);
  detail::dim(op, "vocab", s.vocab);
  detail::dim(op, "hidden", s.hidden);
  detail::elements_fit(op, std::uint64_t{s.tokens} * s.hidden);
  detail::elements_fit(op, std::uint64_t{s.vocab} * s.hidden);
  EmbeddingPush p{};
  p.tokens = s.tokens;
  p.vocab = s.vocab;
  p.hidden = s.hidden / width;
  p.n = static_cast<std::uint32_t>(n / width);
  p.quarter = (p.n + 3) / 4;
  p.slots = chunk_slots(s.tokens);
  return p;
}
}  // namespace

EmbeddingIndex embedding_index(std::span<const std::uint32_t> ids, std::uint32_t vocab) {
  const char* op = "embedding_index";
  require(!ids.empty(), "{}: no ids (tokens = 0)", op);
  require(ids.size() <= 0xffffffffu, "{}: {} ids exceed 32-bit positions", op, ids.size());
  require(vocab > 0, "{}: vocab = 0", op);
  EmbeddingIndex index;
  index.offsets.assign(std::size_t{vocab} + 1, 0);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    require(ids[t] < vocab, "{}: ids[{}] = {} is out of range (vocab = {})", op, t, ids[t], vocab);
    ++index.offsets[ids[t] + 1];
  }
  for (std::uint32_t v = 0; v < vocab; ++v) index.offsets[v + 1] += index.offsets[v];
  std::vector<std::uint32_t> next(index.offsets.begin(), index.offsets.end() - 1);
  index.positions.resize(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) index.positions[next[ids[t]]++] = static_cast<std::uint32_t>(t);
  index.chunks.assign(std::size_t{chunk_slots(static_cast<std::uint32_t>(ids.size()))} * 3, 0);
  std::size_t entry = 0;
  for (std::uint32_t v = 0; v < vocab; ++v) {
    const std::uint32_t begin = index.offsets[v], end = index.offsets[v + 1];
    if (end - begin <= kEmbeddingChunk) continue;
    std::uint32_t slot = 2 * (begin / kEmbeddingChunk);
    for (std::uint32_t k = begin; k < end; k += std::min(end - k, kEmbeddingChunk)) {
      index.chunks[entry++] = k;
      index.chunks[entry++] = k + std::min(end - k, kEmbeddingChunk);
      index.chunks[entry++] = slot++;
    }
  }
  return index;
}

Dispatch embedding_fwd(Context& ctx, const Buffer& ids, const Buffer& table, const Buffer& out,
                       const Embedding& shape) {
  const char* op = "embedding_fwd";
  const EmbeddingPush p = embedding_push(op, shape, std::uint64_t{shape.tokens} * shape.hidden);
  const std::uint64_t ids_bytes = std::uint64_t{shape.tokens} * 4,
                      table_bytes = std::uint64_t{shape.vocab} * shape.hidden * 4,
                      out_bytes = std::uint64_t{shape.tokens} * shape.hidden * 4;
  need_bytes(op, "ids", ids, ids_bytes);
  need_bytes(op, "table", table, table_bytes);
  need_bytes(op, "out", out, out_bytes);
  require_apart(op, "out", out, out_bytes, "ids", ids, ids_bytes);
  require_apart(op, "out", out, out_bytes, "table", table, table_bytes);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::embedding_fwd, op);
  d.set_push(p).bind(0, ids, Access::read).bind(1, table, Access::read).bind(2, out, Access::write);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}

Ops embedding_bwd(Context& ctx, const Buffer& dy, const Buffer& offsets, const Buffer& positions,
                  const Buffer& chunks, const Buffer& dtable, const Embedding& shape, bool accumulate) {
  const char* op = "embedding_bwd";
  // rows of whole vec4 at 16-byte aligned starts: the kernels of four
  // elements per element, counts in vec4
  const bool vec4 = shape.hidden % 4 == 0 && dy.offset() % 16 == 0 && dtable.offset() % 16 == 0;
  EmbeddingPush p = embedding_push(op, shape, std::uint64_t{shape.vocab} * shape.hidden, vec4 ? 4 : 1);
  p.accumulate = accumulate ? 1 : 0;
  const std::uint64_t dy_bytes = std::uint64_t{shape.tokens} * shape.hidden * 4,
                      offsets_bytes = (std::uint64_t{shape.vocab} + 1) * 4,
                      positions_bytes = std::uint64_t{shape.tokens} * 4,
                      chunks_bytes = std::uint64_t{p.slots} * 3 * 4,
                      table_bytes = std::uint64_t{shape.vocab} * shape.hidden * 4;
  need_bytes(op, "dy", dy, dy_bytes);
  need_bytes(op, "offsets", offsets, offsets_bytes);
  need_bytes(op, "positions", positions, positions_bytes);
  need_bytes(op, "chunks", chunks, chunks_bytes);
  need_bytes(op, "dtable", dtable, table_bytes);
  require_apart(op, "dtable", dtable, table_bytes, "dy", dy, dy_bytes);
  require_apart(op, "dtable", dtable, table_bytes, "offsets", offsets, offsets_bytes);
  require_apart(op, "dtable", dtable, table_bytes, "positions", positions, positions_bytes);
  require_apart(op, "dtable", dtable, table_bytes, "chunks", chunks, chunks_bytes);
  detail::elements_fit(op, std::uint64_t{p.slots} * shape.hidden);
  const Transient pieces = make_transient(std::uint64_t{p.slots} * shape.hidden * 4);

  EmbeddingPush chunk_push = p;
  chunk_push.n = p.slots * p.hidden;
  Dispatch sum_pieces = detail::make_dispatch(
      ctx, vec4 ? detail::KernelId::embedding_bwd_chunks4 : detail::KernelId::embedding_bwd_chunks, op);
  sum_pieces.set_push(chunk_push)
      .bind(3, dy, Access::read)
      .bind(5, positions, Access::read)
      .bind(7, chunks, Access::read)
      .bind(8, pieces, Access::write);
  sum_pieces.groups = detail::elt_grid(chunk_push.n, op);

  Dispatch rows = detail::make_dispatch(ctx, vec4 ? detail::KernelId::embedding_bwd4 : detail::KernelId::embedding_bwd, op);
  rows.set_push(p)
      .bind(3, dy, Access::read)
      .bind(4, offsets, Access::read)
      .bind(5, positions, Access::read)
      .bind(6, dtable, accumulate ? Access::read_write : Access::write)
      .bind(8, pieces, Access::read);
  rows.groups = detail::elt_grid(p.quarter, op);
  return {sum_pieces, rows};
}

}  // namespace vkblr::ops
