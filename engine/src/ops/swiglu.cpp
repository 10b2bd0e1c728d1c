// SwiGLU forward and backward (glsl/swiglu.comp).
#include "swiglu.h"

#include "op_util.hpp"
#include "ranges.hpp"
#include "vkblr/ops/swiglu.hpp"

namespace vkblr::ops {
namespace {
using detail::need_bytes;
using detail::require_apart;
using shader::SwigluPush;
static_assert(sizeof(SwigluPush) == 16);

// Checks tokens and inter (the fused layout's 2·tokens·inter elements must
// be indexable too); the push constants.
SwigluPush swiglu_push(const char* op, std::uint32_t tokens, std::uint32_t inter) {
  detail::dim(op, "tokens", tokens);
  detail::dim(op, "inter", inter);
  const std::uint64_t n = std::uint64_t{tokens} * inter;
  detail::elements_fit(op, 2 * n);
  SwigluPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.inter = inter;
  p.quarter = static_cast<std::uint32_t>((n + 3) / 4);
  return p;
}

Dispatch finish(Context& ctx, detail::KernelId id, const char* op, const SwigluPush& p) {
  Dispatch d = detail::make_dispatch(ctx, id, op);
  d.set_push(p);
  d.groups = detail::elt_grid(p.quarter, op);
  return d;
}
}  // namespace

Dispatch swiglu_fwd(Context& ctx, const Buffer& g, const Buffer& u, const Buffer& h, std::uint32_t tokens,
                    std::uint32_t inter) {
  const char* op = "swiglu_fwd";
  const SwigluPush p = swiglu_push(op, tokens, inter);
  const std::uint64_t bytes = std::uint64_t{p.n} * 4;
  need_bytes(op, "g", g, bytes);
  need_bytes(op, "u", u, bytes);
  need_bytes(op, "h", h, bytes);
  require_apart(op, "h", h, bytes, "g", g, bytes);
  require_apart(op, "h", h, bytes, "u", u, bytes);
  Dispatch d = finish(ctx, detail::KernelId::swiglu_fwd, op, p);
  d.bind(0, g, Access::read).bind(1, u, Access::read).bind(2, h, Access::write);
  return d;
}

Dispatch swiglu_bwd(Context& ctx, const Buffer& g, const Buffer& u, const Buffer& dh, const Buffer& dg,
                    const Buffer& du, std::uint32_t tokens, std::uint32_t inter) {
  const char* op = "swiglu_bwd";
  const SwigluPush p = swiglu_push(op, tokens, inter);
  const std::uint64_t bytes = std::uint64_t{p.n} * 4;
  need_bytes(op, "g", g, bytes);
  need_bytes(op, "u", u, bytes);
  need_bytes(op, "dh", dh, bytes);
  need_bytes(op, "dg", dg, bytes);
  need_bytes(op, "du", du, bytes);
  for (const auto& [name, out] : {std::pair<const char*, const Buffer*>{"dg", &dg}, {"du", &du}}) {
    require_apart(op, name, *out, bytes, "g", g, bytes);
    require_apart(op, name, *out, bytes, "u", u, bytes);
    require_apart(op, name, *out, bytes, "dh", dh, bytes);
  }
  require_apart(op, "dg", dg, bytes, "du", du, bytes);
  Dispatch d = finish(ctx, detail::KernelId::swiglu_bwd, op, p);
  d.bind(0, g, Access::read).bind(1, u, Access::read).bind(3, dh, Access::read);
  d.bind(4, dg, Access::write).bind(5, du, Access::write);
  return d;
}

Dispatch swiglu_fwd_fused(Context& ctx, const Buffer& gu, const Buffer& h, std::uint32_t tokens,
                          std::uint32_t inter) {
  const char* op = "swiglu_fwd_fused";
  const SwigluPush p = swiglu_push(op, tokens, inter);
  const std::uint64_t bytes = std::uint64_t{p.n} * 4;
  need_bytes(op, "gu", gu, 2 * bytes);
  need_bytes(op, "h", h, bytes);
  require_apart(op, "h", h, bytes, "gu", gu, 2 * bytes);
  Dispatch d = finish(ctx, detail::KernelId::swiglu_fwd_fused, op, p);
  d.bind(0, gu, Access::read).bind(2, h, Access::write);
  return d;
}

Dispatch swiglu_bwd_fused(Context& ctx, const Buffer& gu, const Buffer& dh, const Buffer& dgu,
                          std::uint32_t tokens, std::uint32_t inter) {
  const char* op = "swiglu_bwd_fused";
  const SwigluPush p = swiglu_push(op, tokens, inter);
  const std::uint64_t bytes = std::uint64_t{p.n} * 4;
  need_bytes(op, "gu", gu, 2 * bytes);
  need_bytes(op, "dh", dh, bytes);
  need_bytes(op, "dgu", dgu, 2 * bytes);
  require_apart(op, "dgu", dgu, 2 * bytes, "gu", gu, 2 * bytes);
  require_apart(op, "dgu", dgu, 2 * bytes, "dh", dh, bytes);
  Dispatch d = finish(ctx, detail::KernelId::swiglu_bwd_fused, op, p);
  d.bind(0, gu, Access::read).bind(3, dh, Access::read).bind(4, dgu, Access::write);
  return d;
}

}  // namespace vkblr::ops
