// Conjugate gradients of the GPU refit's g step (vkblr/ops/refit.hpp;
// glsl/refit_matvec.comp, refit_cg.comp).
#include "refit_checks.hpp"

namespace vkblr::ops {
namespace {

Dispatch cg_dispatch(Context& ctx, detail::KernelId id, const char* op, const Buffer& gram, const Buffer& rhs,
                     const Buffer& x, const Buffer& p, const Buffer& q, const Buffer& state, std::uint32_t n) {
  detail::dim(op, "n", n);
  detail::elements_fit(op, std::uint64_t{n} * n);
  detail::need_bytes(op, "gram", gram, std::uint64_t{n} * n * 4);
  for (const auto& [name, b] : {std::pair{"rhs", &rhs}, {"x", &x}, {"p", &p}, {"q", &q}}) {
    detail::need_bytes(op, name, *b, std::uint64_t{n} * 4);
  }
  detail::need_bytes(op, "state", state, refit_cg_state_floats(n) * 4);
  refit_detail::outputs_apart(op, {{"x", x}, {"p", p}, {"state", state}}, {{"gram", gram}, {"rhs", rhs}, {"q", q}});
  shader::RefitPush push{};
  push.rows = n;
  Dispatch d = detail::make_dispatch(ctx, id, op);
  d.set_push(push)
      .bind(0, gram, Access::read)
      .bind(1, rhs, Access::read)
      .bind(2, x, Access::read_write)
      .bind(3, p, Access::read_write)
      .bind(4, q, Access::read)
      .bind(5, state, Access::read_write);
  return d;
}

}  // namespace

std::uint64_t refit_cg_state_floats(std::uint32_t n) { return 2 * std::uint64_t{n} + 4; }

Dispatch refit_matvec(Context& ctx, const Buffer& a, const Buffer& x, const Buffer& out, std::uint32_t n) {
  const char* op = "refit_matvec";
  detail::dim(op, "n", n);
  detail::elements_fit(op, std::uint64_t{n} * n);
  detail::need_bytes(op, "a", a, std::uint64_t{n} * n * 4);
  detail::need_bytes(op, "x", x, std::uint64_t{n} * 4);
  detail::need_bytes(op, "out", out, std::uint64_t{n} * 4);
  refit_detail::outputs_apart(op, {{"out", out}}, {{"a", a}, {"x", x}});
  shader::RefitPush push{};
  push.rows = n;
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::refit_matvec, op);
  d.set_push(push).bind(0, a, Access::read).bind(1, x, Access::read).bind(2, out, Access::write);
  d.groups = n <= detail::kFoldWidth
                 ? std::array<std::uint32_t, 3>{n, 1, 1}
                 : std::array<std::uint32_t, 3>{detail::kFoldWidth, detail::ceil_div(n, detail::kFoldWidth), 1};
  return d;
}

Dispatch refit_cg_begin(Context& ctx, const Buffer& gram, const Buffer& rhs, const Buffer& x, const Buffer& p,
                        const Buffer& q, const Buffer& state, std::uint32_t n) {
  return cg_dispatch(ctx, detail::KernelId::refit_cg_begin, "refit_cg_begin", gram, rhs, x, p, q, state, n);
}

Dispatch refit_cg_step(Context& ctx, const Buffer& gram, const Buffer& rhs, const Buffer& x, const Buffer& p,
                       const Buffer& q, const Buffer& state, std::uint32_t n) {
  return cg_dispatch(ctx, detail::KernelId::refit_cg_step, "refit_cg_step", gram, rhs, x, p, q, state, n);
}

}  // namespace vkblr::ops
