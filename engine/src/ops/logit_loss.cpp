// Losses over a vocabulary in slices: cross_entropy and kl_distill
// (glsl/logit_loss_stats.comp, logit_loss_grad.comp, logit_loss_reduce.comp,
// the f16 GEMM and the staging ops).
#include "vkblr/ops/logit_loss.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "logit_loss.h"
#include "op_util.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using detail::round32;
using shader::LogitLossPush;
static_assert(sizeof(LogitLossPush) == 48);

// The staged gradient's multiplier: |softmax − onehot| and |p_s − p_T| are
// at most 1, so f16(g · 2^14) never overflows, and probabilities down to
// about 4e-9 stay normal halves. The GEMMs divide it back out.
constexpr float kGradStage = 16384.0f;

// The checked sizes of one call.
struct Plan {
  std::uint32_t tokens = 0, hidden = 0, vocab = 0, teacher_hidden = 0;
  std::uint32_t slice = 0;   // rows per slice: min(S, V rounded up to 32)
  std::uint32_t slices = 0;  // ceil(V / slice)
  std::uint32_t tokens32 = 0, hidden32 = 0;
};

// One slice: vocabulary rows v0..v0+cols-1, logits rows ldz wide.
struct Slice {
  std::uint32_t v0 = 0, cols = 0, ldz = 0;
};

Slice slice_at(const Plan& p, std::uint32_t j) {
  Slice s;
  s.v0 = j * p.slice;
  s.cols = std::min(p.slice, p.vocab - s.v0);
  s.ldz = round32(s.cols);
  return s;
}

Plan plan_of(const char* op, const LogitLossShape& shape, bool kl) {
  Plan p;
  p.tokens = dim(op, "tokens", shape.tokens);
  p.hidden = dim(op, "hidden", shape.hidden);
  p.vocab = dim(op, "vocab", shape.vocab);
  require(p.hidden % 16 == 0, "{}: hidden = {} is not a multiple of 16", op, p.hidden);
  const std::uint32_t slice = shape.slice ? shape.slice : kDefaultLogitSlice;
  require(slice % 32 == 0, "{}: slice = {} is not a multiple of 32", op, slice);
  if (kl) {
    p.teacher_hidden = dim(op, "teacher_hidden", shape.teacher_hidden);
    require(p.teacher_hidden % 16 == 0, "{}: teacher_hidden = {} is not a multiple of 16", op, p.teacher_hidden);
  } else {
    require(shape.teacher_hidden == 0, "{}: teacher_hidden = {} (a teacher is kl_distill's)", op,
            shape.teacher_hidden);
  }
  require(round32(p.vocab) >= p.vocab, "{}: vocab = {} exceeds 32 bits rounded up to 32", op, p.vocab);
  p.slice = std::min(slice, round32(p.vocab));
  p.slices = detail::ceil_div(p.vocab, p.slice);
  p.tokens32 = round32(p.tokens);
  p.hidden32 = round32(p.hidden);
  require(p.tokens32 >= p.tokens, "{}: tokens = {} exceeds 32 bits rounded up to 32", op, p.tokens);
  // every index a kernel computes stays below 2^32
  detail::elements_fit(op, std::uint64_t{p.tokens} * std::max(p.hidden, p.teacher_hidden));
  detail::elements_fit(op, std::uint64_t{p.tokens32} * std::max(p.slice, p.hidden32));
  detail::elements_fit(op, std::uint64_t{p.slice} * std::max(p.hidden32, p.teacher_hidden));
  detail::elements_fit(op, std::uint64_t{p.tokens} * VKBLR_LL_STATE);
  return p;
}

// Whether two buffers share bytes (views of one allocation included).
bool overlaps(const Buffer& a, const Buffer& b) {
  return a.id() == b.id() && a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size();
}

struct Named {
  const char* name;
  const Buffer* buffer;  // null: absent
};

// No buffer the op writes may share bytes with another buffer it names.
void require_apart(const char* op, std::initializer_list<Named> written, std::initializer_list<Named> read) {
  for (auto w = written.begin(); w != written.end(); ++w) {
    if (!w->buffer) continue;
    for (auto o = w + 1; o != written.end(); ++o) {
      require(!o->buffer || !overlaps(*w->buffer, *o->buffer), "{}: {} overlaps {}", op, w->name, o->name);
    }
    for (const Named& r : read) {
      require(!r.buffer || !overlaps(*w->buffer, *r.buffer), "{}: {} overlaps {}", op, w->name, r.name);
    }
  }
}

// The scratch buffers this call uses, each large enough.
void need_scratch(const char* op, const Plan& p, const LogitLossScratch& s, bool kl, bool dh, bool dw) {
  const std::uint64_t n = p.tokens, sl = p.slice;
  need_bytes(op, "scratch.h16", s.h16, n * p.hidden * 2);
  need_bytes(op, "scratch.w16", s.w16, sl * p.hidden * 2);
  need_bytes(op, "scratch.z", s.z, n * sl * 4);
  need_bytes(op, "scratch.state", s.state, n * VKBLR_LL_STATE * 4);
  if (kl) {
    need_bytes(op, "scratch.teacher_h16", s.teacher_h16, n * p.teacher_hidden * 2);
    need_bytes(op, "scratch.teacher_w16", s.teacher_w16, sl * p.teacher_hidden * 2);
    need_bytes(op, "scratch.teacher_z", s.teacher_z, n * sl * 4);
  }
  if (dh || dw) {
    need_bytes(op, "scratch.dz16", s.dz16, n * sl * 2);
    need_bytes(op, "scratch.dzt16", s.dzt16, sl * p.tokens32 * 2);
  }
  if (dh) need_bytes(op, "scratch.wt16", s.wt16, std::uint64_t{p.hidden32} * sl * 2);
  if (dw) need_bytes(op, "scratch.ht16", s.ht16, std::uint64_t{p.hidden32} * p.tokens32 * 2);
}

// Everything one call is made of.
struct Call {
  const char* op = "";
  Plan plan;
  const Buffer* h = nullptr;
  const Buffer* w = nullptr;
  const Buffer* ids = nullptr;        // targets (cross-entropy), the mask (KL) or null
  const Buffer* teacher_h = nullptr;  // non-null: the KL
  const Buffer* teacher_w = nullptr;
  const Buffer* loss = nullptr;
  const Buffer* token_loss = nullptr;
  const LogitLossGrads* grads = nullptr;
  const LogitLossScratch* scratch = nullptr;
  std::uint32_t ignore_id = kIgnoreToken;
  float temperature = 1.0f;
};

LogitLossPush push_of(const Call& c, const Slice& s, std::uint32_t flags) {
  LogitLossPush p{};
  p.tokens = c.plan.tokens;
  p.cols = s.cols;
  p.ldz = s.ldz;
  p.v0 = s.v0;
  p.vocab = c.plan.vocab;
  p.ignore_id = c.ignore_id;
  p.flags = flags;
  p.ldt = c.plan.tokens32;
  p.inv_tau = c.teacher_h ? 1.0f / c.temperature : 1.0f;
  p.tau2 = c.teacher_h ? c.temperature * c.temperature : 1.0f;
  p.gscale = kGradStage;
  return p;
}

void append(Ops& ops, Ops more) {
  for (Dispatch& d : more) ops.push_back(d);
}

// rows of W (or W_T) of slice s staged into w16 [ldz][hidden], then
// z [tokens][ldz] = h16 · w16ᵀ.
void slice_logits(Context& ctx, Ops& ops, const Call& c, const Slice& s, const Buffer& w, const Buffer& h16,
                  const Buffer& w16, const Buffer& z, std::uint32_t hidden) {
  const Buffer rows = w.view(std::uint64_t{s.v0} * hidden * 4, std::uint64_t{s.cols} * hidden * 4);
  ops.push_back(cvt(ctx, rows, w16, s.cols, hidden, 1.0f, s.ldz));
  GemmShape g;
  g.m = c.plan.tokens;
  g.n = s.ldz;
  g.k = hidden;
  g.ldo = s.ldz;
  g.k_splits = 1;  // one chain over hidden per logit: the bits of the logits whatever the device's split heuristic
  append(ops, gemm(ctx, h16, w16, GemmB::plane, z, g));
}

void student_and_teacher_logits(Context& ctx, Ops& ops, const Call& c, const Slice& s) {
  const LogitLossScratch& sc = *c.scratch;
  slice_logits(ctx, ops, c, s, *c.w, sc.h16, sc.w16, sc.z, c.plan.hidden);
  if (c.teacher_h) slice_logits(ctx, ops, c, s, *c.teacher_w, sc.teacher_h16, sc.teacher_w16, sc.teacher_z,
                                c.plan.teacher_hidden);
}

std::array<std::uint32_t, 3> row_grid(std::uint32_t rows) {
  const std::uint32_t x = std::min(rows, detail::kFoldWidth);
  return {x, detail::ceil_div(rows, x), 1};
}

Dispatch stats(Context& ctx, const Call& c, const Slice& s, std::uint32_t flags) {
  const bool kl = c.teacher_h != nullptr;
  const detail::KernelId id = !kl ? detail::KernelId::ce_stats
                              : c.ids ? detail::KernelId::kl_stats_mask
                                      : detail::KernelId::kl_stats;
  Dispatch d = detail::make_dispatch(ctx, id, kl ? "kl_stats" : "ce_stats");
  d.set_push(push_of(c, s, flags)).bind(0, c.scratch->z, Access::read);
  if (kl) d.bind(1, c.scratch->teacher_z, Access::read);
  if (c.ids) d.bind(2, *c.ids, Access::read);
  d.bind(3, c.scratch->state, Access::read_write).bind(4, *c.token_loss, Access::write);
  d.groups = row_grid(c.plan.tokens);
  return d;
}

Dispatch grad(Context& ctx, const Call& c, const Slice& s) {
  const bool kl = c.teacher_h != nullptr;
  Dispatch d = detail::make_dispatch(ctx, kl ? detail::KernelId::kl_grad : detail::KernelId::ce_grad,
                                     kl ? "kl_grad" : "ce_grad");
  d.set_push(push_of(c, s, 0)).bind(0, c.scratch->z, Access::read);
  if (kl) {
    d.bind(1, c.scratch->teacher_z, Access::read);
  } else {
    d.bind(2, *c.ids, Access::read);
  }
  d.bind(3, c.scratch->state, Access::read)
      .bind(5, c.scratch->dz16, Access::write)
      .bind(6, c.scratch->dzt16, Access::write);
  d.groups = {s.ldz / 32, c.plan.tokens32 / 32, 1};
  return d;
}

Dispatch reduce(Context& ctx, const Call& c) {
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::logit_loss_reduce, "logit_loss_reduce");
  d.set_push(push_of(c, slice_at(c.plan, 0), 0))
      .bind(3, c.scratch->state, Access::read)
      .bind(4, *c.token_loss, Access::read)
      .bind(7, *c.loss, Access::write, 0, 16);
  d.groups = {1, 1, 1};
  return d;
}

// Checks the buffers of a call and builds its Ops.
Ops build(Context& ctx, const Call& c) {
  const char* op = c.op;
  const Plan& p = c.plan;
  const LogitLossGrads& g = *c.grads;
  const bool kl = c.teacher_h != nullptr;
  const std::uint64_t n = p.tokens, v = p.vocab;
  need_bytes(op, "h", *c.h, n * p.hidden * 4);
  need_bytes(op, "w", *c.w, v * p.hidden * 4);
  if (c.ids) need_bytes(op, kl ? "mask" : "targets", *c.ids, n * 4);
  if (kl) {
    need_bytes(op, "teacher_h", *c.teacher_h, n * p.teacher_hidden * 4);
    need_bytes(op, "teacher_w", *c.teacher_w, v * p.teacher_hidden * 4);
    require(std::isfinite(c.temperature) && c.temperature > 0, "{}: temperature = {} (finite and > 0)", op,
            c.temperature);
  }
  need_bytes(op, "loss", *c.loss, 16);
  const bool dh = g.dh != nullptr, dw = g.dw != nullptr;
  if (dh) need_bytes(op, "dh", *g.dh, n * p.hidden * 4);
  if (dw) need_bytes(op, "dw", *g.dw, v * p.hidden * 4);
  if (dh || dw) require(std::isfinite(g.grad_scale), "{}: grad_scale = {} is not finite", op, g.grad_scale);
  need_scratch(op, p, *c.scratch, kl, dh, dw);
  const Buffer* own_token_loss = c.token_loss == &c.scratch->token_loss ? nullptr : c.token_loss;
  need_bytes(op, own_token_loss ? "token_loss" : "scratch.token_loss", *c.token_loss, n * 4);
  require_apart(op, {{"dh", g.dh}, {"dw", g.dw}, {"loss", c.loss}, {"token_loss", own_token_loss}},
                {{"h", c.h}, {"w", c.w}, {kl ? "mask" : "targets", c.ids}, {"teacher_h", c.teacher_h},
                 {"teacher_w", c.teacher_w}});
  require(p.tokens32 / 32 <= ctx.caps().max_workgroup_count[1],
          "{}: tokens = {} need {} tiles of 32 rows, the device allows {}", op, p.tokens, p.tokens32 / 32,
          ctx.caps().max_workgroup_count[1]);

  const LogitLossScratch& sc = *c.scratch;
  Ops ops;
  ops.push_back(cvt(ctx, *c.h, sc.h16, p.tokens, p.hidden, 1.0f));
  if (kl) ops.push_back(cvt(ctx, *c.teacher_h, sc.teacher_h16, p.tokens, p.teacher_hidden, 1.0f));
  if (dw) ops.push_back(cvt_t(ctx, *c.h, nullptr, sc.ht16, p.tokens, p.hidden, 1.0f, p.hidden32, p.tokens32));

  // pass 1: slices in order, each token's running logsumexp
  for (std::uint32_t j = 0; j < p.slices; ++j) {
    const Slice s = slice_at(p, j);
    student_and_teacher_logits(ctx, ops, c, s);
    const std::uint32_t flags = (j == 0 ? VKBLR_LL_FIRST : 0u) | (j + 1 == p.slices ? VKBLR_LL_LAST : 0u);
    ops.push_back(stats(ctx, c, s, flags));
  }
  ops.push_back(reduce(ctx, c));
  if (!dh && !dw) return ops;

  // pass 2: slices in reverse order, so that the last slice's logits (and
  // staged W) of pass 1 serve again; dh's sum runs in that order
  const float oscale = g.grad_scale * (kl ? c.temperature : 1.0f) / kGradStage;
  for (std::uint32_t j = p.slices; j-- > 0;) {
    const Slice s = slice_at(p, j);
    const bool kept = j + 1 == p.slices;
    if (!kept) student_and_teacher_logits(ctx, ops, c, s);
    const Buffer rows = c.w->view(std::uint64_t{s.v0} * p.hidden * 4, std::uint64_t{s.cols} * p.hidden * 4);
    if (dh) ops.push_back(cvt_t(ctx, rows, nullptr, sc.wt16, s.cols, p.hidden, 1.0f, p.hidden32, s.ldz));
    ops.push_back(grad(ctx, c, s));
    if (dh) {  // dh (+)= dz · W_slice: act dz16 [tokens][ldz], B = W_sliceᵀ [hidden][ldz]
      GemmShape gs;
      gs.m = p.tokens;
      gs.n = p.hidden;
      gs.k = s.ldz;
      gs.lda = s.ldz;
      gs.oscale = oscale;
      gs.accumulate = g.accumulate_dh || !kept;
      gs.k_splits = 1;
      append(ops, gemm(ctx, sc.dz16, sc.wt16, GemmB::plane, *g.dh, gs));
    }
    if (dw) {  // dW_slice (+)= dzᵀ · h: act dzt16 [ldz][tokens32], B = hᵀ [hidden][tokens32]
      const Buffer out = g.dw->view(std::uint64_t{s.v0} * p.hidden * 4, std::uint64_t{s.cols} * p.hidden * 4);
      GemmShape gs;
      gs.m = s.cols;
      gs.n = p.hidden;
      gs.k = p.tokens32;
      gs.lda = p.tokens32;
      gs.oscale = oscale;
      gs.accumulate = g.accumulate_dw;
      gs.k_splits = 1;
      append(ops, gemm(ctx, sc.dzt16, sc.ht16, GemmB::plane, out, gs));
    }
  }
  return ops;
}

}  // namespace

std::uint64_t logit_loss_scratch_bytes(const LogitLossShape& shape, bool backward) {
  const bool kl = shape.teacher_hidden != 0;
  const Plan p = plan_of("make_logit_loss_scratch", shape, kl);
  const std::uint64_t n = p.tokens, sl = p.slice;
  std::uint64_t bytes = n * p.hidden * 2 + sl * p.hidden * 2 + n * sl * 4 + n * VKBLR_LL_STATE * 4 + n * 4;
  if (kl) bytes += n * p.teacher_hidden * 2 + sl * p.teacher_hidden * 2 + n * sl * 4;
  if (backward) {
    bytes += std::uint64_t{p.hidden32} * p.tokens32 * 2 + std::uint64_t{p.hidden32} * sl * 2 + n * sl * 2 +
             sl * p.tokens32 * 2;
  }
  return bytes;
}

LogitLossScratch make_logit_loss_scratch(Context& ctx, const LogitLossShape& shape, bool backward) {
  const char* op = "make_logit_loss_scratch";
  const bool kl = shape.teacher_hidden != 0;
  const Plan p = plan_of(op, shape, kl);
  const std::uint64_t n = p.tokens, sl = p.slice;
  auto make = [&](std::uint64_t bytes, const char* label) {
    require(bytes <= ctx.caps().max_storage_buffer_range,
            "{}: {} needs {} bytes, more than the device binds ({}): choose a smaller slice", op, label, bytes,
            ctx.caps().max_storage_buffer_range);
    return ctx.buffer(bytes, label);
  };
  LogitLossScratch s;
  s.h16 = make(n * p.hidden * 2, "logit_loss.h16");
  s.w16 = make(sl * p.hidden * 2, "logit_loss.w16");
  s.z = make(n * sl * 4, "logit_loss.z");
  s.state = make(n * VKBLR_LL_STATE * 4, "logit_loss.state");
  s.token_loss = make(n * 4, "logit_loss.token_loss");
  if (kl) {
    s.teacher_h16 = make(n * p.teacher_hidden * 2, "logit_loss.teacher_h16");
    s.teacher_w16 = make(sl * p.teacher_hidden * 2, "logit_loss.teacher_w16");
    s.teacher_z = make(n * sl * 4, "logit_loss.teacher_z");
  }
  if (backward) {
    s.ht16 = make(std::uint64_t{p.hidden32} * p.tokens32 * 2, "logit_loss.ht16");
    s.wt16 = make(std::uint64_t{p.hidden32} * sl * 2, "logit_loss.wt16");
    s.dz16 = make(n * sl * 2, "logit_loss.dz16");
    s.dzt16 = make(sl * p.tokens32 * 2, "logit_loss.dzt16");
  }
  return s;
}

LogitLossValue read_logit_loss(const Buffer& loss) {
  need_bytes("read_logit_loss", "loss", loss, 16);
  const std::vector<std::uint32_t> w = loss.download<std::uint32_t>(4, 0);
  LogitLossValue v;
  v.mean = std::bit_cast<float>(w[VKBLR_LL_OUT_MEAN]);
  v.sum = std::bit_cast<float>(w[VKBLR_LL_OUT_SUM]);
  v.counted = w[VKBLR_LL_OUT_COUNT];
  v.bad_ids = w[VKBLR_LL_OUT_BAD];
  return v;
}

Ops cross_entropy(Context& ctx, const LogitLossShape& shape, const Buffer& h, const Buffer& w, const Buffer& targets,
                  const Buffer& loss, const LogitLossGrads& grads, const LogitLossScratch& scratch,
                  const CrossEntropyOptions& options) {
  const char* op = "cross_entropy";
  Call c;
  c.op = op;
  c.plan = plan_of(op, shape, false);
  c.h = &h;
  c.w = &w;
  c.ids = &targets;
  c.loss = &loss;
  c.token_loss = options.token_loss ? options.token_loss : &scratch.token_loss;
  c.grads = &grads;
  c.scratch = &scratch;
  c.ignore_id = options.ignore_id;
  return build(ctx, c);
}

Ops kl_distill(Context& ctx, const LogitLossShape& shape, const Buffer& h, const Buffer& w, const Buffer& teacher_h,
               const Buffer& teacher_w, const Buffer& loss, const LogitLossGrads& grads,
               const LogitLossScratch& scratch, const KlDistillOptions& options) {
  const char* op = "kl_distill";
  Call c;
  c.op = op;
  c.plan = plan_of(op, shape, true);
  c.h = &h;
  c.w = &w;
  c.ids = options.mask;
  c.teacher_h = &teacher_h;
  c.teacher_w = &teacher_w;
  c.loss = &loss;
  c.token_loss = options.token_loss ? options.token_loss : &scratch.token_loss;
  c.grads = &grads;
  c.scratch = &scratch;
  c.ignore_id = options.ignore_id;
  c.temperature = options.temperature;
  return build(ctx, c);
}

std::uint32_t count_loss_tokens(std::span<const std::uint32_t> targets, std::uint32_t vocab,
                                std::uint32_t ignore_id) {
  std::uint32_t counted = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == ignore_id) continue;
    require(targets[i] < vocab, "cross_entropy: target[{}] = {} is not < vocab = {} (nor the ignore id {})", i,
            targets[i], vocab, ignore_id);
    ++counted;
  }
  return counted;
}

}  // namespace vkblr::ops
