// attention.h — push constants and specialization constants of causal
// self-attention with grouped-query heads (attention_plain.comp,
// attention_coopmat.comp, attention_delta.comp).
//
// Layouts (row-major, one row per token, tokens = batch · seq, sequence s at
// rows s·seq .. s·seq + seq − 1):
//   q, o, do, dq   [tokens][heads · head_dim]      head h at columns h·head_dim
//   k, v, dk, dv   [tokens][kv_heads · head_dim]
//   lse, delta     [tokens][heads]
// Query head h reads kv head h / group (group = heads / kv_heads). The
// plain kernels read f32 q, k, v, do; the cooperative-matrix kernels read
// their f16 copies (the same layouts, staged by cvt).
#ifndef VKBLR_ATTENTION_H
#define VKBLR_ATTENTION_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(AttentionPush) {
  uint seq;          // T: tokens per sequence
  uint heads;        // query heads
  uint group;        // query heads per kv head
  uint q_stride;     // heads · head_dim: elements per row of q, o, do, dq
  uint kv_stride;    // kv_heads · head_dim: elements per row of k, v, dk, dv
  float scale_log2;  // softmax scale · log2(e): the kernels' scores are base 2
  float dk_scale;    // dq, dk: softmax scale / gscale
  float dv_scale;    // dv: 1 / gscale
  uint tokens;       // attention_delta: batch · seq
  uint head_dim;     // attention_delta: head_dim
  float gscale;      // attention_delta: the scale of do's f16 staging (1: plain)
  uint reserved1;
} VKBLR_PUSH_END(pc)

// Specialization constants (ids shared with the C++ tile choice).
#define ATTN_SPEC_WG_SIZE 0  // invocations per workgroup
#define ATTN_SPEC_D 1        // head_dim
#define ATTN_SPEC_BQ 2       // query rows per block
#define ATTN_SPEC_BK 3       // key rows per block
#define ATTN_SPEC_SG 4       // coopmat: subgroup size
#define ATTN_SPEC_F 5        // coopmat: fragment side (F×F×F, f16 × f16 -> f32)
#define ATTN_SPEC_EPI 6      // coopmat: output columns staged per epilogue chunk
#define ATTN_SPEC_PF 7       // coopmat: prefetch the next block's tiles into registers (bool)

// Invocations per row in the plain kernels (workgroup = 8 · rows per block).
#define ATTN_PLAIN_TPR 8
// Warps (subgroups) per workgroup in the cooperative-matrix kernels.
#define ATTN_COOPMAT_WARPS 4

VKBLR_SHADER_END
#endif
