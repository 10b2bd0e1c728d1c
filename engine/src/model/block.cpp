#include "block.hpp"

#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/add.hpp"
#include "vkblr/ops/attention.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/rmsnorm.hpp"
#include "vkblr/ops/rope.hpp"
#include "vkblr/ops/swiglu.hpp"

namespace vkblr::model::detail {
namespace {

// y[t][n] (+)= x[t][k]·Wᵀ of one projection; bc.staged holds f16(x) for a
// dense one (x itself is read by a blr one); `accumulate` adds to y (the
// residual stream) instead of overwriting it.
void linear(Recorder& rec, const BlockContext& bc, const Projection& p, std::size_t slot, const Buffer& x,
            const Buffer& y, std::uint32_t n, std::uint32_t k, bool accumulate, const BlrScratchFor& scratch) {
  const std::uint32_t tokens = bc.batch.tokens();
  if (p.is_blr()) {
    if (p.blr->m != n || p.blr->n != k) {
      fail("llama forward: a blr projection is {}x{}, the model wants {}x{}", p.blr->m, p.blr->n, n, k);
    }
    const Buffer& out = accumulate ? bc.blr_out : y;
    blr_forward(rec, bc.ctx, *p.blr, scratch(slot, *p.blr), x, out, tokens);
    if (accumulate) rec.add(ops::add_into(bc.ctx, bc.blr_out, y, tokens * n));
    return;
  }
  GemmShape shape;
  shape.m = tokens;
  shape.n = n;
  shape.k = k;
  shape.accumulate = accumulate;
  rec.add(gemm(bc.ctx, bc.staged, p.plane, GemmB::plane, y, shape));
}

// dx (+)= dy·W of one projection (y = x·Wᵀ: dy f32 [tokens][out], dx f32
// [tokens][in]). A blr one runs blr_backward (its scale and sign gradients
// accumulate; dx through g.dh_part when accumulating, as blr_backward
// overwrites); a dense one stages dy·gscale to f16 and multiplies by the
// transposed plane, dividing gscale back out.
void linear_backward(Recorder& rec, const BlockContext& bc, const Projection& p, std::size_t slot, const Buffer& x,
                     const Buffer& dy, const Buffer& dx, const Buffer& dx_part, std::uint32_t out, std::uint32_t in,
                     bool accumulate, const BlrScratchFor& scratch, const SignGradsFor& signs,
                     const BackwardSettings& settings) {
  const std::uint32_t tokens = bc.batch.tokens();
  if (p.is_blr()) {
    BlrBackward options;
    options.gscale = settings.gscale;
    const std::span<const BlrSignGrads> sign_grads = signs(slot);
    options.sign_grads = !sign_grads.empty();
    options.accumulate_sign_grads = true;
    const Buffer& target = accumulate ? dx_part : dx;
    blr_backward(rec, bc.ctx, *p.blr, scratch(slot, *p.blr), x, dy, target, tokens, sign_grads, options);
    if (accumulate) rec.add(ops::add_into(bc.ctx, dx_part, dx, tokens * in));
    return;
  }
  if (!p.plane_t) fail("llama backward: a dense projection of {}x{} has no transposed plane", out, in);
  rec.add(ops::cvt(bc.ctx, dy, bc.staged, tokens, out, settings.gscale));
  GemmShape shape;
  shape.m = tokens;
  shape.n = in;
  shape.k = out;
  shape.oscale = 1.0f / settings.gscale;
  shape.accumulate = accumulate;
  rec.add(gemm(bc.ctx, bc.staged, p.plane_t, GemmB::plane, dx, shape));
}

ops::AttentionShape attention_shape(const BlockContext& bc) {
  const io::LlamaConfig& c = bc.config;
  return {bc.batch.sequences, bc.batch.seq, c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0.0f};
}

ops::Rope rope_shape(const BlockContext& bc, std::uint32_t heads) {
  return {bc.batch.tokens(), heads, bc.config.head_dim, bc.rope_positions};
}

}  // namespace

void record_block_forward(Recorder& rec, const BlockContext& bc, const LlamaWeights::Block& b, const BlockBuffers& a,
                          const Buffer& x, const BlrScratchFor& scratch) {
  const io::LlamaConfig& c = bc.config;
  Context& ctx = bc.ctx;
  const std::uint32_t t = bc.batch.tokens(), hidden = c.hidden_size, inter = c.intermediate_size;
  const ops::RmsNorm norm{t, hidden, static_cast<float>(c.rms_norm_eps)};
  const std::uint64_t stream_bytes = std::uint64_t{t} * hidden * 4;

  if (a.x_in) rec.copy(x, *a.x_in, stream_bytes);
  rec.add(ops::rmsnorm_fwd(ctx, x, b.input_norm, *a.h1, *a.inv1, norm));
  if (!(b.q.is_blr() && b.k.is_blr() && b.v.is_blr())) rec.add(ops::cvt(ctx, *a.h1, bc.staged, t, hidden, 1.0f));
  linear(rec, bc, b.q, Slot::q, *a.h1, *a.q, c.q_size(), hidden, false, scratch);
  linear(rec, bc, b.k, Slot::k, *a.h1, *a.k, c.kv_size(), hidden, false, scratch);
  linear(rec, bc, b.v, Slot::v, *a.h1, *a.v, c.kv_size(), hidden, false, scratch);
  rec.add(ops::rope_fwd(ctx, *a.q, bc.positions, bc.rope, rope_shape(bc, c.num_attention_heads)));
  rec.add(ops::rope_fwd(ctx, *a.k, bc.positions, bc.rope, rope_shape(bc, c.num_key_value_heads)));
  rec.add(ops::attention_forward(ctx, *a.q, *a.k, *a.v, *a.attn, *a.lse, attention_shape(bc)));
  if (!b.o.is_blr()) rec.add(ops::cvt(ctx, *a.attn, bc.staged, t, c.q_size(), 1.0f));
  linear(rec, bc, b.o, Slot::o, *a.attn, x, hidden, c.q_size(), true, scratch);

  if (a.x_mid) rec.copy(x, *a.x_mid, stream_bytes);
  rec.add(ops::rmsnorm_fwd(ctx, x, b.post_norm, *a.h2, *a.inv2, norm));
  if (!(b.gate.is_blr() && b.up.is_blr())) rec.add(ops::cvt(ctx, *a.h2, bc.staged, t, hidden, 1.0f));
  linear(rec, bc, b.gate, Slot::gate, *a.h2, *a.gate, inter, hidden, false, scratch);
  linear(rec, bc, b.up, Slot::up, *a.h2, *a.up, inter, hidden, false, scratch);
  rec.add(ops::swiglu_fwd(ctx, *a.gate, *a.up, *a.act, t, inter));
  if (!b.down.is_blr()) rec.add(ops::cvt(ctx, *a.act, bc.staged, t, inter, 1.0f));
  linear(rec, bc, b.down, Slot::down, *a.act, x, hidden, inter, true, scratch);
}

void record_block_backward(Recorder& rec, const BlockContext& bc, const LlamaWeights::Block& b,
                           const BlockBuffers& a, const BackwardBuffers& g, const Buffer& dx,
                           const BlrScratchFor& scratch, const SignGradsFor& signs, const BackwardSettings& settings) {
  const io::LlamaConfig& c = bc.config;
  Context& ctx = bc.ctx;
  const std::uint32_t t = bc.batch.tokens(), hidden = c.hidden_size, inter = c.intermediate_size;
  const ops::RmsNorm norm{t, hidden, static_cast<float>(c.rms_norm_eps)};
  if (!a.x_in || !a.x_mid) fail("llama backward: the block's norm inputs were not kept");
  const auto lin = [&](const Projection& p, std::size_t slot, const Buffer& x, const Buffer& dy, const Buffer& dxp,
                       std::uint32_t out, std::uint32_t in, bool accumulate) {
    linear_backward(rec, bc, p, slot, x, dy, dxp, *g.dh_part, out, in, accumulate, scratch, signs, settings);
  };
  ops::RmsNormBackward into_stream;
  into_stream.accumulate_dx = true;  // the stream's gradient flows past the norm too

  // MLP: x_out = x_mid + down(swiglu(gate(h2), up(h2)))
  lin(b.down, Slot::down, *a.act, dx, *g.dact, hidden, inter, false);
  rec.add(ops::swiglu_bwd(ctx, *a.gate, *a.up, *g.dact, *g.dgate, *g.dup, t, inter));
  lin(b.gate, Slot::gate, *a.h2, *g.dgate, *g.dh, inter, hidden, false);
  lin(b.up, Slot::up, *a.h2, *g.dup, *g.dh, inter, hidden, true);
  rec.add(ops::rmsnorm_bwd(ctx, *a.x_mid, b.post_norm, *a.inv2, *g.dh, dx, *g.dnorm, norm, into_stream));

  // attention: x_mid = x_in + o(attention(rope(q(h1)), rope(k(h1)), v(h1)))
  lin(b.o, Slot::o, *a.attn, dx, *g.dattn, hidden, c.q_size(), false);
  ops::AttentionOptions attention;
  attention.gscale = settings.gscale;
  rec.add(ops::attention_backward(ctx, *a.q, *a.k, *a.v, *a.attn, *a.lse, *g.dattn, *g.dq, *g.dk, *g.dv,
                                  attention_shape(bc), attention));
  rec.add(ops::rope_bwd(ctx, *g.dq, bc.positions, bc.rope, rope_shape(bc, c.num_attention_heads)));
  rec.add(ops::rope_bwd(ctx, *g.dk, bc.positions, bc.rope, rope_shape(bc, c.num_key_value_heads)));
  lin(b.q, Slot::q, *a.h1, *g.dq, *g.dh, c.q_size(), hidden, false);
  lin(b.k, Slot::k, *a.h1, *g.dk, *g.dh, c.kv_size(), hidden, true);
  lin(b.v, Slot::v, *a.h1, *g.dv, *g.dh, c.kv_size(), hidden, true);
  rec.add(ops::rmsnorm_bwd(ctx, *a.x_in, b.input_norm, *a.inv1, *g.dh, dx, *g.dnorm, norm, into_stream));
}

}  // namespace vkblr::model::detail
