// SignMatrix::record_step and record_sign_steps: the optimizer step of a
// sign matrix and its flip budget (glsl/sign_begin.comp, sign_fact.comp, sign_update.comp,
// sign_select.comp, sign_apply.comp; the order and the algorithm are in
// docs/sign-optimizer.md).
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <vector>

#include "../ops/op_util.hpp"
#include "sign_kernels.hpp"
#include "vkblr/sign.hpp"

namespace vkblr {
namespace {
using detail::KernelId;
using detail::need_bytes;
using namespace detail::sign;

constexpr const char* kStep = "sign_step";

// The update kernel of an optimizer and state type.
KernelId update_kernel(SignOpt opt, StateType state) {
  const bool bf16 = state == StateType::bf16;
  switch (opt) {
    case SignOpt::adam:
      return bf16 ? KernelId::sign_update_adam_bf16 : KernelId::sign_update_adam;
    case SignOpt::fact:
      return bf16 ? KernelId::sign_update_fact_bf16 : KernelId::sign_update_fact;
    case SignOpt::bop:
      break;
  }
  return bf16 ? KernelId::sign_update_bop_bf16 : KernelId::sign_update_bop;
}

void check_step(const SignStep& s) {
  require(s.beta1 >= 0.0f && s.beta1 < 1.0f, "{}: beta1 = {} outside [0, 1)", kStep, s.beta1);
  require(s.beta2 >= 0.0f && s.beta2 < 1.0f, "{}: beta2 = {} outside [0, 1)", kStep, s.beta2);
  require(std::isfinite(s.eps) && s.eps >= 0.0f, "{}: eps = {} (must be finite and >= 0)", kStep, s.eps);
  require(std::isfinite(s.clamp) && s.clamp > 0.0f, "{}: clamp = {} (must be finite and > 0)", kStep, s.clamp);
  require(s.hyst >= 0.0f && s.hyst < s.clamp, "{}: hyst = {} outside [0, clamp = {})", kStep, s.hyst, s.clamp);
  require(s.flip_budget >= 0.0f && s.flip_budget <= 1.0f, "{}: flip_budget = {} outside [0, 1]", kStep,
          s.flip_budget);
  require(std::isfinite(s.grad_scale), "{}: grad_scale = {} is not finite", kStep, s.grad_scale);
  if (s.live.buffer) {
    need_bytes(kStep, "live scalars", *s.live.buffer, (std::uint64_t{s.live.word} + ops::kLiveScalarWords) * 4);
  } else {
    require(s.step >= 1, "{}: step = 0 (steps count from 1)", kStep);
    require(std::isfinite(s.lr), "{}: lr = {} is not finite", kStep, s.lr);
  }
}

Dispatch make(Context& ctx, KernelId id, const char* name, const shader::SignPush& p,
              std::array<std::uint32_t, 3> groups) {
  Dispatch d = detail::make_dispatch(ctx, id, name);
  d.set_push(p);
  d.groups = groups;
  return d;
}
}  // namespace

std::vector<Ops> SignMatrix::step_phases(Context& ctx, const Buffer& g, const SignStep& step) {
  std::vector<Ops> phases;
  const std::uint64_t n = std::uint64_t{rows_} * r_;
  need_bytes(kStep, "g", g, n * 4);
  const Buffer* const owned[] = {&w_,       &m_,        &v_,      &row_v_, &col_v_, &sums_,
                                 &bits0_,   &flipped_,  &counters_, &scores_, bits_};
  for (const Buffer* b : owned) {
    require(!*b || b->id() != g.id(), "{}: g is one of the matrix's state buffers or its bitmap", kStep);
  }
  check_step(step);

  // K = ceil(budget·n); 0, or K >= n, is no limit
  std::uint64_t budget = 0;
  if (step.flip_budget > 0.0f) {
    budget = static_cast<std::uint64_t>(std::ceil(static_cast<double>(step.flip_budget) * static_cast<double>(n)));
    if (budget >= n) budget = 0;
  }
  const std::uint32_t blocks = detail::ceil_div(n, detail::kEltWorkgroup);
  if (budget && !scores_) {
    scores_ = ctx.buffer(n * 4, "sign.scores");
    select_ = ctx.buffer(VKBLR_SIGN_SELECT_WORDS * 4, "sign.select");
    ties_ = ctx.buffer(std::uint64_t{blocks} * 4, "sign.ties");
  }

  shader::SignPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rows = rows_;
  p.r = r_;
  p.step = step.step;
  p.lr = step.lr;
  p.beta1 = step.beta1;
  p.beta2 = step.beta2;
  p.eps = step.eps;
  p.clamp = step.clamp;
  p.hyst = step.hyst;
  p.tau = init_.tau;
  p.grad_scale = step.grad_scale;
  p.key = key_;
  p.budget = static_cast<std::uint32_t>(budget);
  if (step.live.buffer) {
    p.live = 1;
    p.live_word = step.live.word;
  }
  const auto elements = detail::elt_grid(n, kStep);

  // The state-changing dispatches read the live block's skip word (the
  // trainer's non-finite guard) and change nothing when it is set.
  auto bind_live = [&](Dispatch& d) {
    if (step.live.buffer) d.bind(kScalars, *step.live.buffer, Access::read);
  };
  Dispatch begin = make(ctx, KernelId::sign_begin, "sign_begin", p, {1, 1, 1});
  begin.bind(kCounters, counters_, Access::read_write);
  if (budget) begin.bind(kSelect, select_, Access::write);
  bind_live(begin);
  phases.push_back({begin});

  if (init_.opt == SignOpt::fact) {
    const std::uint32_t fact_blocks = detail::ceil_div(rows_, VKBLR_SIGN_FACT_ROWS);
    require(fact_blocks <= detail::kFoldWidth, "{}: rows = {} are too many", kStep, rows_);
    const std::uint32_t col_groups = detail::ceil_div(r_, detail::kEltWorkgroup);
    shader::SignPush fp = p;
    fp.blocks = fact_blocks;
    Dispatch rows = make(ctx, KernelId::sign_fact_rows, "sign_fact_rows", fp, detail::elt_grid(rows_, kStep));
    rows.bind(kGrad, g, Access::read).bind(kRowV, row_v_, Access::read_write);
    Dispatch cols = make(ctx, KernelId::sign_fact_cols, "sign_fact_cols", fp, {col_groups, fact_blocks, 1});
    cols.bind(kGrad, g, Access::read).bind(kSums, sums_, Access::write);
    Dispatch sum = make(ctx, KernelId::sign_fact_sum, "sign_fact_sum", fp, {col_groups + 1, 1, 1});
    sum.bind(kRowV, row_v_, Access::read).bind(kColV, col_v_, Access::read_write).bind(kSums, sums_,
                                                                                        Access::read_write);
    bind_live(rows);
    bind_live(sum);
    phases.push_back({rows, cols});  // independent: both only read g
    phases.push_back({sum});
    p.blocks = fact_blocks;  // the update reads ΣR at sums[blocks·r]
  }

  Dispatch update = make(ctx, update_kernel(init_.opt, init_.state), "sign_update", p, elements);
  update.bind(kGrad, g, Access::read).bind(kMoment1, m_, Access::read_write);
  if (w_) update.bind(kLatent, w_, Access::read_write);
  if (v_) update.bind(kMoment2, v_, Access::read_write);
  if (init_.opt == SignOpt::fact) {
    update.bind(kRowV, row_v_, Access::read).bind(kColV, col_v_, Access::read).bind(kSums, sums_, Access::read);
  }
  update.bind(kBits, *bits_, Access::read_write).bind(kCounters, counters_, Access::read_write);
  if (budget) {
    update.bind(kScores, scores_, Access::write);
  } else {
    update.bind(kFlipped, flipped_, Access::read_write);
  }
  bind_live(update);
  phases.push_back({update});

  if (budget) {
    shader::SignPush sp = p;
    sp.blocks = blocks;
    for (std::uint32_t pass = 0; pass < VKBLR_SIGN_RADIX_PASSES; ++pass) {
      sp.pass = pass;
      Dispatch hist = make(ctx, KernelId::sign_hist, "sign_hist", sp, elements);
      hist.bind(kScores, scores_, Access::read).bind(kSelect, select_, Access::read_write);
      Dispatch pick = make(ctx, KernelId::sign_pick, "sign_pick", sp, {1, 1, 1});
      pick.bind(kSelect, select_, Access::read_write);
      phases.push_back({hist});
      phases.push_back({pick});
    }
    Dispatch ties = make(ctx, KernelId::sign_ties, "sign_ties", sp, elements);
    ties.bind(kScores, scores_, Access::read).bind(kSelect, select_, Access::read).bind(kTies, ties_, Access::write);
    Dispatch scan = make(ctx, KernelId::sign_scan, "sign_scan", sp, {1, 1, 1});
    scan.bind(kTies, ties_, Access::read_write);
    Dispatch apply = make(ctx, KernelId::sign_apply, "sign_apply", sp, elements);
    apply.bind(kBits, *bits_, Access::read_write)
        .bind(kFlipped, flipped_, Access::read_write)
        .bind(kCounters, counters_, Access::read_write)
        .bind(kScores, scores_, Access::read)
        .bind(kSelect, select_, Access::read)
        .bind(kTies, ties_, Access::read);
    bind_live(apply);
    phases.push_back({ties});
    phases.push_back({scan});
    phases.push_back({apply});
  }
  return phases;
}

void SignMatrix::record_step(Recorder& rec, Context& ctx, const Buffer& g, const SignStep& step) {
  for (const Ops& phase : step_phases(ctx, g, step)) rec.add(phase);
  if (kept_ && g.id() == kept_.id()) rec.fill(kept_, 0);
}

void record_sign_steps(Recorder& rec, Context& ctx, std::span<SignMatrix* const> matrices,
                       std::span<const Buffer* const> gradients, const SignStep& step) {
  require(matrices.size() == gradients.size(), "{}: {} matrices but {} gradients", kStep, matrices.size(),
          gradients.size());
  std::vector<Branch> branches;  // one per matrix, a phase per step
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    require(matrices[i] != nullptr && gradients[i] != nullptr, "{}: matrix {} or its gradient is null", kStep, i);
    for (std::size_t j = 0; j < i; ++j) {
      require(matrices[j] != matrices[i], "{}: matrix {} is matrix {} again", kStep, i, j);
    }
    Branch& branch = branches.emplace_back();
    for (Ops& phase : matrices[i]->step_phases(ctx, *gradients[i], step)) branch.push_back({{"", std::move(phase)}});
  }
  rec.parallel(branches);
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    const Buffer& kept = matrices[i]->kept_gradient();
    if (kept && gradients[i]->id() == kept.id()) rec.fill(kept, 0);
  }
}

void record_kept_sign_steps(Recorder& rec, Context& ctx, std::span<SignMatrix> matrices, const SignStep& step) {
  if (matrices.empty()) return;
  std::vector<SignMatrix*> borrowed;
  std::vector<const Buffer*> gradients;
  for (SignMatrix& m : matrices) {
    borrowed.push_back(&m);
    gradients.push_back(&m.kept_gradient());
  }
  rec.tag("sign");
  record_sign_steps(rec, ctx, borrowed, gradients, step);
  rec.tag("");
}

}  // namespace vkblr
