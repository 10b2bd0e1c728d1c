#include "block.hpp"

#include <array>
#include <tuple>
#include <vector>

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

// The dense-route staging of a blr projection, or nullptr (a dense
// projection, or a blr one on the factored route).
BlrDense* dense_route(const BlockContext& bc, const Projection& p, std::size_t slot) {
  return bc.dense && p.is_blr() ? (*bc.dense)(slot, *p.blr) : nullptr;
}

// Whether the projection reads its input as f16 from bc.staged (a dense
// one, or a blr one on the dense route); a factored blr one reads x itself.
bool reads_staged(const BlockContext& bc, const Projection& p, std::size_t slot) {
  return !p.is_blr() || dense_route(bc, p, slot) != nullptr;
}

// y[t][n] (+)= x[t][k]·Wᵀ of one projection; bc.staged holds f16(x) where
// reads_staged; `accumulate` adds to y (the residual stream) instead of
// overwriting it.
void linear(Recorder& rec, const BlockContext& bc, const Projection& p, std::size_t slot, const Buffer& x,
            const Buffer& y, std::uint32_t n, std::uint32_t k, bool accumulate, const BlrScratchFor& scratch) {
  const std::uint32_t tokens = bc.batch.tokens();
  if (BlrDense* d = dense_route(bc, p, slot)) {
    blr_dense_forward(rec, bc.ctx, *p.blr, *d, bc.staged, y, tokens, accumulate);
    return;
  }
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
// transposed plane, dividing gscale back out. xt_staged: x's transposed f16
// staging made by an earlier dense-route projection of the same x.
void linear_backward(Recorder& rec, const BlockContext& bc, const Projection& p, std::size_t slot, const Buffer& x,
                     const Buffer& dy, const Buffer& dx, const Buffer& dx_part, std::uint32_t out, std::uint32_t in,
                     bool accumulate, const BlrScratchFor& scratch, const SignGradsFor& signs,
                     const BackwardSettings& settings, const Buffer* xt_staged = nullptr) {
  const std::uint32_t tokens = bc.batch.tokens();
  if (p.is_blr()) {
    BlrBackward options;
    options.gscale = settings.gscale;
    const std::span<const BlrSignGrads> sign_grads = signs(slot);
    options.sign_grads = !sign_grads.empty();
    options.accumulate_sign_grads = true;
    if (BlrDense* d = dense_route(bc, p, slot)) {
      blr_dense_backward(rec, bc.ctx, *p.blr, *d, x, dy, dx, tokens, sign_grads, options, accumulate, xt_staged);
      return;
    }
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

// y_i = x·W_iᵀ of projections that share their input x (q, k, v; gate,
// up): blr ones with scratch of their own side by side
// (blr_forward_side_by_side, the bits of one after another), else one
// after another.
void linears(Recorder& rec, const BlockContext& bc, std::span<const std::tuple<const Projection*, std::size_t, const Buffer*>> outs,
             const Buffer& x, std::uint32_t k, const BlrScratchFor& scratch) {
  std::vector<BlrForwardJob> jobs;
  bool side_by_side = true;
  for (const auto& [p, slot, y] : outs) {
    if (!p->is_blr() || p->blr->n != k || dense_route(bc, *p, slot)) {
      side_by_side = false;
      break;
    }
    BlrScratch& s = scratch(slot, *p->blr);
    for (const BlrForwardJob& j : jobs) side_by_side = side_by_side && j.scratch->shared != s.shared;
    jobs.push_back({p->blr.get(), &s, &x, y});
  }
  if (side_by_side) {
    blr_forward_side_by_side(rec, bc.ctx, jobs, bc.batch.tokens());
    return;
  }
  for (const auto& [p, slot, y] : outs) linear(rec, bc, *p, slot, x, *y, p->out, k, false, scratch);
}

// dx = Σ_i dy_i·W_i of projections that share their input x, in the
// order given: blr ones with scratch of their own side by side
// (blr_backward_side_by_side into dx and g.dh_part, g.dh_part2, then
// added in order: the bits of one after another), else one after another.
void linears_backward(Recorder& rec, const BlockContext& bc,
                      std::span<const std::tuple<const Projection*, std::size_t, const Buffer*>> outs, const Buffer& x,
                      const Buffer& dx, const BackwardBuffers& g, const BlrScratchFor& scratch,
                      const SignGradsFor& signs, const BackwardSettings& settings) {
  const std::uint32_t tokens = bc.batch.tokens(), in = outs.empty() ? 0 : std::get<0>(outs[0])->in;
  const Buffer* targets[] = {&dx, g.dh_part, g.dh_part2};
  std::vector<BlrBackwardJob> jobs;
  bool side_by_side = outs.size() <= std::size(targets);
  for (std::size_t i = 0; side_by_side && i < outs.size(); ++i) {
    const auto& [p, slot, dy] = outs[i];
    if (!p->is_blr() || p->in != in || dense_route(bc, *p, slot)) {
      side_by_side = false;
      break;
    }
    BlrScratch& s = scratch(slot, *p->blr);
    const std::span<const BlrSignGrads> sign_grads = signs(slot);
    for (const BlrBackwardJob& j : jobs) {
      side_by_side = side_by_side && j.scratch->shared != s.shared && j.sign_grads.empty() == sign_grads.empty();
    }
    jobs.push_back({p->blr.get(), &s, &x, dy, targets[i], sign_grads});
  }
  if (!side_by_side) {
    const Buffer* xt = nullptr;  // x staged transposed, once a dense-route projection has done it
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const auto& [p, slot, dy] = outs[i];
      linear_backward(rec, bc, *p, slot, x, *dy, dx, *g.dh_part, p->out, p->in, i > 0, scratch, signs, settings, xt);
      if (BlrDense* d = dense_route(bc, *p, slot); d && !xt) xt = &d->xt;
    }
    return;
  }
  BlrBackward options;
  options.gscale = settings.gscale;
  options.sign_grads = !jobs.empty() && !jobs[0].sign_grads.empty();
  options.accumulate_sign_grads = true;
  blr_backward_side_by_side(rec, bc.ctx, jobs, tokens, options);
  for (std::size_t i = 1; i < jobs.size(); ++i) rec.add(ops::add_into(bc.ctx, *targets[i], dx, tokens * in));
}

ops::AttentionShape attention_shape(const BlockContext& bc) {
  const io::LlamaConfig& c = bc.config;
  return {bc.batch.sequences, bc.batch.seq, c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0.0f};
}

ops::RopeQk rope_shape(const BlockContext& bc) {
  const io::LlamaConfig& c = bc.config;
  return {bc.batch.tokens(), c.num_attention_heads, c.num_key_value_heads, c.head_dim, bc.rope_positions};
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
  if (reads_staged(bc, b.q, Slot::q) || reads_staged(bc, b.k, Slot::k) || reads_staged(bc, b.v, Slot::v)) {
    rec.add(ops::cvt(ctx, *a.h1, bc.staged, t, hidden, 1.0f));
  }
  linears(rec, bc, std::array{std::tuple{&b.q, std::size_t{Slot::q}, a.q}, std::tuple{&b.k, std::size_t{Slot::k}, a.k},
                             std::tuple{&b.v, std::size_t{Slot::v}, a.v}},
          *a.h1, hidden, scratch);
  rec.add(ops::rope_fwd(ctx, *a.q, *a.k, bc.positions, bc.rope, rope_shape(bc)));
  rec.add(ops::attention_forward(ctx, *a.q, *a.k, *a.v, *a.attn, *a.lse, attention_shape(bc)));
  if (reads_staged(bc, b.o, Slot::o)) rec.add(ops::cvt(ctx, *a.attn, bc.staged, t, c.q_size(), 1.0f));
  linear(rec, bc, b.o, Slot::o, *a.attn, x, hidden, c.q_size(), true, scratch);

  if (a.x_mid) rec.copy(x, *a.x_mid, stream_bytes);
  rec.add(ops::rmsnorm_fwd(ctx, x, b.post_norm, *a.h2, *a.inv2, norm));
  if (reads_staged(bc, b.gate, Slot::gate) || reads_staged(bc, b.up, Slot::up)) {
    rec.add(ops::cvt(ctx, *a.h2, bc.staged, t, hidden, 1.0f));
  }
  linears(rec, bc, std::array{std::tuple{&b.gate, std::size_t{Slot::gate}, a.gate},
                             std::tuple{&b.up, std::size_t{Slot::up}, a.up}},
          *a.h2, hidden, scratch);
  rec.add(ops::swiglu_fwd(ctx, *a.gate, *a.up, *a.act, t, inter));
  if (reads_staged(bc, b.down, Slot::down)) rec.add(ops::cvt(ctx, *a.act, bc.staged, t, inter, 1.0f));
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
  linears_backward(rec, bc,
                   std::array{std::tuple{&b.gate, std::size_t{Slot::gate}, g.dgate},
                              std::tuple{&b.up, std::size_t{Slot::up}, g.dup}},
                   *a.h2, *g.dh, g, scratch, signs, settings);
  rec.add(ops::rmsnorm_bwd(ctx, *a.x_mid, b.post_norm, *a.inv2, *g.dh, dx, *g.dnorm, norm, into_stream));

  // attention: x_mid = x_in + o(attention(rope(q(h1)), rope(k(h1)), v(h1)))
  lin(b.o, Slot::o, *a.attn, dx, *g.dattn, hidden, c.q_size(), false);
  ops::AttentionOptions attention;
  attention.gscale = settings.gscale;
  rec.add(ops::attention_backward(ctx, *a.q, *a.k, *a.v, *a.attn, *a.lse, *g.dattn, *g.dq, *g.dk, *g.dv,
                                  attention_shape(bc), attention));
  rec.add(ops::rope_bwd(ctx, *g.dq, *g.dk, bc.positions, bc.rope, rope_shape(bc)));
  linears_backward(rec, bc,
                   std::array{std::tuple{&b.q, std::size_t{Slot::q}, g.dq}, std::tuple{&b.k, std::size_t{Slot::k}, g.dk},
                              std::tuple{&b.v, std::size_t{Slot::v}, g.dv}},
                   *a.h1, *g.dh, g, scratch, signs, settings);
  rec.add(ops::rmsnorm_bwd(ctx, *a.x_in, b.input_norm, *a.inv1, *g.dh, dx, *g.dnorm, norm, into_stream));
}

}  // namespace vkblr::model::detail
