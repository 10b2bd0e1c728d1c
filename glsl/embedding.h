// embedding.h — push constants of the token embedding lookup and its
// gradient (embedding.comp), and the gradient's chunk length.
#ifndef VKBLR_EMBEDDING_H
#define VKBLR_EMBEDDING_H
#include "interface.h"
VKBLR_SHADER_BEGIN

// embedding_bwd: an id's segment of more than this many positions is summed
// in pieces of this many (the last shorter), each by its own invocation
// (embedding_bwd_chunks), then the pieces' sums in order.
#define VKBLR_EMBEDDING_CHUNK 32

VKBLR_PUSH(EmbeddingPush) {
  uint tokens;      // rows of the activations, ids in the batch
  uint vocab;       // rows of the table
  uint hidden;      // row length (the *4 variants: in vec4)
  uint n;           // elements written: embedding_fwd tokens · hidden; embedding_bwd vocab · hidden;
                    // embedding_bwd_chunks slots · hidden (the *4 variants: vec4)
  uint quarter;     // ceil(n / 4): invocation i handles elements i, i + quarter, i + 2·quarter, i + 3·quarter
  uint accumulate;  // embedding_bwd: DTABLE += the gradient (1) or DTABLE = it (0)
  uint slots;       // the backward: rows of PIECES, and entries of CHUNKS: 2·ceil(tokens / VKBLR_EMBEDDING_CHUNK)
  uint reserved;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
