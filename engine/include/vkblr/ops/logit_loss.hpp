// vkblr/ops/logit_loss.hpp — losses over a large vocabulary, computed in
// slices of the output head so that the tokens × vocab logits never exist
// at once (glsl/logit_loss_*.comp, the f16 GEMM of vkblr/gemm.hpp):
//
//   cross_entropy  ℓ_t = logsumexp(z_t) − z_t[target_t]
//   kl_distill     ℓ_t = τ² · KL(softmax(z^T_t/τ) ‖ softmax(z_t/τ))
//
// with z = h·Wᵀ the student's logits (h f32 [tokens][hidden], the final
// hidden states; W f32 [vocab][hidden], nn.Linear's layout, possibly the
// tied embedding table) and, for the KL, z^T = h_T·W_Tᵀ the teacher's
// (h_T f32 [tokens][teacher_hidden], W_T f32 [vocab][teacher_hidden]). Both
// return the Ops of the whole computation (record them with one
// Recorder::add): the mean over counted tokens as a device value the host
// reads after the step, per-token losses, and optionally
//   dh (+)= grad_scale · ∂(Σ_counted ℓ_t)/∂h    f32 [tokens][hidden]
//   dW (+)= grad_scale · ∂(Σ_counted ℓ_t)/∂W    f32 [vocab][hidden]
// (grad_scale = 1/counted tokens for the gradient of the mean; the teacher
// gets none).
//
// Method (docs/kernels.md, "Losses over a vocabulary in slices"): the
// vocabulary in slices of `slice` rows of W. Pass 1, per slice in order:
// the slice's logits [tokens][slice] by GEMM, each token's running max and
// sum of exponentials updated (an online logsumexp, f32). Pass 2, per
// slice in reverse order (the last slice's logits are still there): the
// logits again, their gradient (softmax − onehot, or p_s − p_t) staged in
// f16, dh += dz·W_slice and dW_slice (+)= dzᵀ·h by GEMMs. h and W enter the
// GEMMs as f16 (staged with scale 1: |values| < 65504). Fixed orders, no
// atomics: the same bits run after run for a given slice size; another
// slice size changes the logsumexp's and dh's summation order (results
// agree to f32 rounding, not bit for bit).
#pragma once

#include <cstdint>
#include <span>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// The id of tokens that carry no loss (the default of ignore_id).
inline constexpr std::uint32_t kIgnoreToken = 0xFFFFFFFFu;
// The slice used when LogitLossShape::slice is 0.
inline constexpr std::uint32_t kDefaultLogitSlice = 8192;

struct LogitLossShape {
  std::uint32_t tokens = 0;          // N = batch · sequence: rows of h
  std::uint32_t hidden = 0;          // H: a multiple of 16
  std::uint32_t vocab = 0;           // V: rows of W
  std::uint32_t slice = 0;           // S: rows of W per slice, a multiple of 32 (0: kDefaultLogitSlice);
                                     // a slice past the vocabulary's end is min(S, V rounded up to 32)
  std::uint32_t teacher_hidden = 0;  // kl_distill: H_T, a multiple of 16; cross_entropy: 0
};

// The scratch of the ops, caller-owned so that it lives across steps
// (make_logit_loss_scratch). A scratch made for a shape serves any shape
// whose sizes (tokens, hidden, slice, teacher_hidden) are no larger; the ops
// check every buffer's size. Forward-only scratch (backward = false) lacks
// the gradient buffers (ht16, wt16, dz16, dzt16 are empty).
struct LogitLossScratch {
  Buffer h16;          // f16 [tokens][hidden]: h staged
  Buffer ht16;         // f16 [hidden32][tokens32]: hᵀ staged (dW's GEMM)
  Buffer w16;          // f16 [slice][hidden]: the slice of W staged
  Buffer wt16;         // f16 [hidden32][slice]: its transpose (dh's GEMM)
  Buffer z;            // f32 [tokens][slice]: the slice's logits
  Buffer dz16;         // f16 [tokens][slice]: their gradient, staged
  Buffer dzt16;        // f16 [slice][tokens32]: its transpose
  Buffer state;        // f32 [tokens][8]: per-token running state
  Buffer token_loss;   // f32 [tokens]: per-token losses (where the options name no buffer)
  Buffer teacher_h16;  // kl_distill: f16 [tokens][teacher_hidden]
  Buffer teacher_w16;  // kl_distill: f16 [slice][teacher_hidden]
  Buffer teacher_z;    // kl_distill: f32 [tokens][slice]
};

// The scratch for `shape` (kl_distill's when teacher_hidden > 0), with the
// gradient buffers when `backward`. Throws Error (naming the value) for a
// shape the ops would refuse.
LogitLossScratch make_logit_loss_scratch(Context& ctx, const LogitLossShape& shape, bool backward = true);
// Its bytes, summed, without allocating.
std::uint64_t logit_loss_scratch_bytes(const LogitLossShape& shape, bool backward = true);

// The gradients to compute: none (both null: pass 1 only), either or both.
struct LogitLossGrads {
  const Buffer* dh = nullptr;  // f32 [tokens][hidden]
  const Buffer* dw = nullptr;  // f32 [vocab][hidden] (an embedding's gradient, for a tied head)
  float grad_scale = 0.0f;     // finite; 1/counted tokens for the gradient of the mean loss
  bool accumulate_dh = true;   // dh += (false: dh =)
  bool accumulate_dw = true;   // dW += (false: dW =)
};

// The loss output, u32 [4]: word 0 the mean over counted tokens (f32 bits;
// 0 when none counts), 1 their sum (f32 bits), 2 the counted tokens, 3 the
// tokens whose id is >= vocab (cross_entropy; such a token's loss is NaN,
// so are the sum and the mean, and it adds no gradient).
struct LogitLossValue {
  float mean = 0, sum = 0;
  std::uint32_t counted = 0, bad_ids = 0;
};
// Reads the loss output (a device read: after the step ran).
LogitLossValue read_logit_loss(const Buffer& loss);

struct CrossEntropyOptions {
  std::uint32_t ignore_id = kIgnoreToken;  // targets equal to it carry no loss
  const Buffer* token_loss = nullptr;      // f32 [tokens] per-token losses (null: scratch.token_loss)
};

// targets u32 [tokens]; loss u32 [4]. Ids other than ignore_id must be
// < vocab (count_loss_tokens checks them on the host); one that is not is
// flagged on the device as above, never read through.
Ops cross_entropy(Context& ctx, const LogitLossShape& shape, const Buffer& h, const Buffer& w, const Buffer& targets,
                  const Buffer& loss, const LogitLossGrads& grads, const LogitLossScratch& scratch,
                  const CrossEntropyOptions& options = {});

struct KlDistillOptions {
  float temperature = 1.0f;                // τ > 0, finite
  const Buffer* mask = nullptr;            // u32 [tokens]: tokens whose word is ignore_id carry no loss
  std::uint32_t ignore_id = kIgnoreToken;  // (null mask: every token counts)
  const Buffer* token_loss = nullptr;      // f32 [tokens] per-token losses (null: scratch.token_loss)
};

// KL(p_T ‖ p_s) · τ² per token, p = softmax(logits / τ), teacher_h f32
// [tokens][teacher_hidden], teacher_w f32 [vocab][teacher_hidden]. The
// gradient with respect to the student's logits is grad_scale · τ ·
// (p_s − p_T).
Ops kl_distill(Context& ctx, const LogitLossShape& shape, const Buffer& h, const Buffer& w, const Buffer& teacher_h,
               const Buffer& teacher_w, const Buffer& loss, const LogitLossGrads& grads,
               const LogitLossScratch& scratch, const KlDistillOptions& options = {});

// The tokens that carry a cross-entropy loss: targets other than ignore_id.
// Throws Error ("cross_entropy: target[i] = id >= vocab V") for an id that is
// neither ignore_id nor < vocab: check targets so before uploading them.
std::uint32_t count_loss_tokens(std::span<const std::uint32_t> targets, std::uint32_t vocab,
                                std::uint32_t ignore_id = kIgnoreToken);

}  // namespace vkblr::ops
