// embedding.h — push constants of the token embedding lookup and its
// gradient (embedding.comp).
#ifndef VKBLR_EMBEDDING_H
#define VKBLR_EMBEDDING_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(EmbeddingPush) {
  uint tokens;      // rows of the activations, ids in the batch
  uint vocab;       // rows of the table
  uint hidden;      // row length (embedding_bwd4: in vec4)
  uint n;           // embedding_fwd: tokens · hidden; embedding_bwd: vocab · hidden (elements written; embedding_bwd4: vec4)
  uint quarter;     // ceil(n / 4): invocation i handles elements i, i + quarter, i + 2·quarter, i + 3·quarter
  uint accumulate;  // embedding_bwd: DTABLE += the gradient (1) or DTABLE = it (0)
  uint reserved0;
  uint reserved1;
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
