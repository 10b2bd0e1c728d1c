// vkblr/ops/attention.hpp — causal self-attention with grouped-query heads,
// forward and backward, tiled in the manner of FlashAttention-2: no T×T
// score matrix is ever held (glsl/attention_plain.comp,
// glsl/attention_coopmat.comp, glsl/attention_delta.comp; docs/kernels.md,
// "Causal self-attention").
//
// Layouts (f32, row-major, one row per token; tokens = batch · seq, sequence
// s at rows s·seq .. s·seq + seq − 1):
//   q, o, dout, dq   [tokens][heads · head_dim]     query head h at columns h·head_dim ..
//   k, v, dk, dv     [tokens][kv_heads · head_dim]
//   lse              [tokens][heads]
// Query head h attends with kv head h / (heads / kv_heads), to the keys of
// its own sequence at positions ≤ its own (causal). RoPE, if any, is
// applied to q and k before.
//
//   forward   S = scale·q·kᵀ (masked), o = softmax(S)·v, lse = logsumexp(S)
//             (natural log, f32), kept for the backward
//   backward  from dout = ∂L/∂o, recomputing P = exp(S − lse):
//             delta = rowsum(dout ⊙ o), dS = P ⊙ (dout·vᵀ − delta),
//             dq = scale·dS·k, dk = scale·dSᵀ·q, dv = Pᵀ·dout, the dk and
//             dv of a kv head summed over its query heads
//
// Every output element is written by exactly one workgroup and summed in a
// fixed order (no float atomics): the same bits run after run on one device
// and kernel. o, lse, dq, dk and dv are overwritten (every element).
//
// Two kernels: `plain` (f32 arithmetic in shared memory, any Vulkan 1.3
// device) and `coopmat` (VK_KHR_cooperative_matrix: the products on f16
// operands with f32 accumulation; the softmax and dS in f32). `automatic`
// takes coopmat where the device has a square f16 × f16 -> f32 fragment the
// tiles fit, and f16 accumulators of its shape, and the
// context's GEMM policy allows cooperative matrices (GemmPolicy::coopmat,
// VKBLR_MM_COOPMAT=0 turns them off), else plain. The two agree within the
// f16 tolerance, not bit for bit.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// coopmat2: the coopmat kernels on VK_NV_cooperative_matrix2's conversions,
// row reductions and per-element functions (Caps::coopmat2_subgroup_ops):
// P and dS stay in registers. The same tiles, options and accuracy as
// coopmat, other bits (the softmax's row sums in another order; the
// gradients agree with coopmat's within the f16 tolerance).
enum class AttentionKernel : std::uint32_t { automatic = 0, plain = 1, coopmat = 2, coopmat2 = 3 };
const char* to_string(AttentionKernel kernel) noexcept;

// Coopmat kernel: whether each pass loads its next block's tiles into
// registers while it computes on the staged ones (`on`), or stages each
// block when it starts (`off`). `automatic`: on where those tiles take at
// most 16 16-byte vectors per invocation, except dK/dV at head_dim > 64
// (its registers are full already). The bits do not depend on it.
enum class AttentionPrefetch : std::uint32_t { automatic = 0, on = 1, off = 2 };
const char* to_string(AttentionPrefetch prefetch) noexcept;

struct AttentionShape {
  std::uint32_t batch = 0;     // sequences
  std::uint32_t seq = 0;       // tokens per sequence
  std::uint32_t heads = 0;     // query heads, a multiple of kv_heads
  std::uint32_t kv_heads = 0;  // key/value heads
  std::uint32_t head_dim = 0;  // 32, 64, 96 or 128
  float scale = 0;             // softmax scale; 0: 1/sqrt(head_dim)
};

struct AttentionOptions {
  AttentionKernel kernel = AttentionKernel::automatic;
  // Backward on the coopmat kernel: dout is staged to f16 times gscale (a
  // power of two) and the gradients divide it back out exactly. Pick it so
  // that |dout|·gscale stays in f16's normal range (above 6.1e-5) and
  // |dout|·gscale·|v|·head_dim well below 65504 (dS is staged to f16 too).
  // The plain kernel computes in f32 and ignores it (its bits do not
  // depend on it). Error when not a power of two.
  float gscale = 1024.0f;
  // Coopmat kernel: the block of every pass's tile (keys per block of the
  // forward and dq, queries per block of dK/dV): 64, 32 or 16, a multiple of
  // the device's fragment side. 0: per pass, the fastest measured on an H100
  // where its tile fits the device's shared memory: 32 for the forward and
  // dK/dV (else the longest that fits; coopmat2's dK/dV at head_dim <= 64:
  // 64, 32, 16), 16 for dq (else 32, 64).
  // Error when it is none of these, or (coopmat) its tile does not fit. o
  // and lse depend on it (the online softmax rescales per key block); from
  // the same o and lse the gradients do not. The plain kernel runs its own
  // tiles whatever it is.
  std::uint32_t block = 0;
  AttentionPrefetch prefetch = AttentionPrefetch::automatic;  // coopmat only; the plain kernel ignores it
};

// The kernel `automatic` runs on this context for head_dim (plain or
// coopmat).
AttentionKernel attention_kernel_for(const Context& ctx, std::uint32_t head_dim);
// Whether the device can run `kernel` (plain, coopmat or coopmat2, whatever
// the GEMM policy says) for head_dim; automatic: true.
bool attention_kernel_available(const Context& ctx, AttentionKernel kernel, std::uint32_t head_dim);
// The same on a device's caps (list_devices()). The plain kernel's
// smallest tiles (8 rows) need about 17.5 KB of shared memory for the
// head_dim-128 backward: a device at Vulkan's minimum of 16 KiB runs head_dim
// up to 96 only.
bool attention_kernel_available(const Caps& caps, AttentionKernel kernel, std::uint32_t head_dim);

// o, lse <- q, k, v (buffers as above; views allowed). o and lse must not
// overlap each other or the inputs. Ops: the coopmat kernel first stages q,
// k and v to f16 copies (transients of these Ops, 2·tokens·(heads +
// 2·kv_heads)·head_dim bytes).
// Errors (vkblr::Error naming "attention_forward" and the value): a size of
// 0, heads not a multiple of kv_heads, an unsupported head_dim, batch · seq
// or an operand's element count beyond 32 bits, a scale that is not finite
// and positive, a buffer too small or an output overlapping another
// operand, a forced coopmat kernel the device cannot run, a forced block
// (AttentionOptions::block) that is not 64, 32 or 16 or whose tile does not
// fit the device.
Ops attention_forward(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                      const Buffer& lse, const AttentionShape& shape, const AttentionOptions& options = {});

// dq, dk, dv <- q, k, v, o, lse (of the forward on the same inputs, either
// kernel), dout = ∂L/∂o. Outputs must not overlap each other or the
// inputs. Ops: delta (a transient, 4·tokens·heads bytes), then the dk/dv
// and dq kernels; the coopmat kernel first stages q, k, v and dout·gscale
// to f16 transients. Errors as the forward's ("attention_backward"), and a
// gscale that is not a power of two.
Ops attention_backward(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                       const Buffer& lse, const Buffer& dout, const Buffer& dq, const Buffer& dk, const Buffer& dv,
                       const AttentionShape& shape, const AttentionOptions& options = {});

}  // namespace vkblr::ops
