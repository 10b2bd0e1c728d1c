// Optimizer ops: Adam (AdamW, storage copies) and the partial sums of
// squares (glsl/adam.comp, sumsq.comp).
#include <bit>
#include <cmath>

#include "adam.h"
#include "op_util.hpp"
#include "sumsq.h"
#include "vkblr/ops/optim.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::AdamPush;
using shader::SumsqPush;
static_assert(sizeof(AdamPush) == 48);
static_assert(sizeof(SumsqPush) == 8);
static_assert(kSumsqPartials == VKBLR_SUMSQ_PARTIALS);


// The kernel of adam (concat = false) or adam_cat with the copy `o` asks for.
detail::KernelId adam_kernel(bool concat, const AdamOptions& o) {
  using K = detail::KernelId;
  if (!o.copy.buffer) return concat ? K::adam_cat : K::adam;
  if (o.copy.type == CopyType::f16) return concat ? K::adam_cat_f16 : K::adam_f16;
  return concat ? K::adam_cat_bf16 : K::adam_bf16;
}

// Checks what adam and adam_cat share (n, the four state buffers, the
// options, the copy) and binds them: slots 0 w, 1 g, 2 m1, 3 m2, 6 the live
// scalars, 7 the copy.
AdamPush adam_push(const char* op, Dispatch& d, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2,
                   std::uint32_t n, const AdamOptions& o) {
  dim(op, "n", n);
  const std::uint64_t bytes = std::uint64_t{n} * 4;
  need_bytes(op, "w", w, bytes);
  need_bytes(op, "g", g, bytes);
  need_bytes(op, "m1", m1, bytes);
  need_bytes(op, "m2", m2, bytes);
  const std::uint64_t ids[] = {w.id(), g.id(), m1.id(), m2.id()};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < i; ++j) require(ids[i] != ids[j], "{}: w, g, m1 and m2 must be four different buffers", op);
  }
  if (o.copy.buffer) {
    need_bytes(op, "copy", *o.copy.buffer, std::uint64_t{n} * 2);
    for (const std::uint64_t id : ids) {
      require(o.copy.buffer->id() != id, "{}: the copy must be a buffer of its own (not w, g, m1 or m2)", op);
    }
    require(o.copy.type == CopyType::f16 || o.copy.type == CopyType::bf16, "{}: copy type {} is neither f16 nor bf16",
            op, static_cast<int>(o.copy.type));
  }
  require(o.weight_decay >= 0.0f && std::isfinite(o.weight_decay),
          "{}: weight_decay = {} (must be finite and >= 0)", op, o.weight_decay);
  require(o.beta1 >= 0.0f && o.beta1 < 1.0f, "{}: beta1 = {} outside [0, 1)", op, o.beta1);
  require(o.beta2 >= 0.0f && o.beta2 < 1.0f, "{}: beta2 = {} outside [0, 1)", op, o.beta2);
  require(o.eps >= 0.0f && std::isfinite(o.eps), "{}: eps = {} (must be finite and >= 0)", op, o.eps);
  require(std::isfinite(o.grad_scale), "{}: grad_scale = {} is not finite", op, o.grad_scale);
  AdamPush p{};
  p.n = n;
  p.beta1 = o.beta1;
  p.beta2 = o.beta2;
  p.eps = o.eps;
  p.grad_scale = o.grad_scale;
  p.weight_decay = o.weight_decay;
  if (o.live.buffer) {
    need_bytes(op, "live scalars", *o.live.buffer, (std::uint64_t{o.live.word} + kLiveScalarWords) * 4);
    p.live = 1;
    p.live_word = o.live.word;
    d.bind(6, *o.live.buffer, Access::read);
  } else {
    require(o.step >= 1, "{}: step = 0 (steps count from 1)", op);
    require(std::isfinite(o.lr), "{}: lr = {} is not finite", op, o.lr);
    p.lr = o.lr;
    p.step = o.step;
  }
  d.bind(0, w, Access::read_write).bind(1, g, Access::read).bind(2, m1, Access::read_write);
  d.bind(3, m2, Access::read_write);
  if (o.copy.buffer) d.bind(7, *o.copy.buffer, Access::write);
  return p;
}

void check_partials(const char* op, const Buffer& a, std::uint32_t n, const Buffer& partials, std::uint32_t vectors) {
  dim(op, "n", n);
  need_bytes(op, "a", a, std::uint64_t{n} * 4);
  need_bytes(op, "partials", partials, std::uint64_t{vectors} * kSumsqPartials * 4);
  require(partials.id() != a.id(), "{}: partials is the same buffer as a", op);
}
}  // namespace

void write_live_scalars(Buffer& scalars, std::uint32_t word, float lr, std::uint32_t step) {
  require(step >= 1, "write_live_scalars: step = 0 (steps count from 1)");
  const std::uint32_t words[kLiveScalarWords] = {std::bit_cast<std::uint32_t>(lr), step, 0u};
  scalars.write(words, sizeof(words), std::uint64_t{word} * 4);
}

Dispatch adam(Context& ctx, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2, const Buffer* mask,
              std::uint32_t n, const AdamOptions& options, float rel_floor) {
  const char* op = "adam";
  Dispatch d = detail::make_dispatch(ctx, adam_kernel(false, options), op);
  AdamPush p = adam_push(op, d, w, g, m1, m2, n, options);
  require(rel_floor >= 0.0f && std::isfinite(rel_floor), "adam: rel_floor = {} (must be finite and >= 0)", rel_floor);
  p.rel_floor = rel_floor;
  if (mask) {
    need_bytes(op, "mask", *mask, std::uint64_t{n} * 4);
    p.masked = 1;
    d.bind(4, *mask, Access::read);
  }
  d.set_push(p);
  d.groups = detail::elt_grid(n, op);
  return d;
}

Dispatch adam_cat(Context& ctx, const Buffer& w, const Buffer& g, const Buffer& m1, const Buffer& m2,
                  const Buffer& mask, const Buffer& rel_floor, std::uint32_t n, const AdamOptions& options) {
  const char* op = "adam_cat";
  Dispatch d = detail::make_dispatch(ctx, adam_kernel(true, options), op);
  AdamPush p = adam_push(op, d, w, g, m1, m2, n, options);
  need_bytes(op, "mask", mask, std::uint64_t{n} * 4);
  need_bytes(op, "rel_floor", rel_floor, std::uint64_t{n} * 4);
  p.masked = 1;
  d.bind(4, mask, Access::read).bind(5, rel_floor, Access::read);
  d.set_push(p);
  d.groups = detail::elt_grid(n, op);
  return d;
}

Dispatch sumsq(Context& ctx, const Buffer& a, std::uint32_t n, const Buffer& partials) {
  check_partials("sumsq", a, n, partials, 1);
  SumsqPush p{};
  p.n = n;
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::sumsq, "sumsq");
  d.set_push(p).bind(0, a, Access::read).bind(2, partials, Access::write);
  d.groups = {kSumsqPartials, 1, 1};
  return d;
}

Dispatch sumsq_cat(Context& ctx, const Buffer& a, std::uint32_t n, const Buffer& table, std::uint32_t params,
                   const Buffer& partials) {
  const char* op = "sumsq_cat";
  dim(op, "params", params);
  require(params <= detail::kFoldWidth, "sumsq_cat: params = {} exceeds {}", params, detail::kFoldWidth);
  check_partials(op, a, n, partials, params);
  need_bytes(op, "table", table, std::uint64_t{params} * 2 * 4);
  require(partials.id() != table.id(), "sumsq_cat: partials is the same buffer as table");
  SumsqPush p{};
  p.n = n;
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::sumsq_cat, op);
  d.set_push(p).bind(0, a, Access::read).bind(1, table, Access::read).bind(2, partials, Access::write);
  d.groups = {kSumsqPartials, params, 1};
  return d;
}

}  // namespace vkblr::ops
