// The cooperative-matrix smoke kernel (glsl/coopmat_probe.comp).
#include "op_util.hpp"
#include "vkblr/ops/probe.hpp"

namespace vkblr::ops {

Dispatch coopmat_probe(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& c) {
  const auto frag = ctx.caps().f16_fragment();
  require(ctx.caps().coopmat && frag.has_value(), "coopmat_probe: device {} has no f16 cooperative matrices",
          ctx.caps().device_name);
  detail::need_bytes("coopmat_probe", "a", a, std::uint64_t{frag->m} * frag->k * 2);
  detail::need_bytes("coopmat_probe", "b", b, std::uint64_t{frag->k} * frag->n * 2);
  detail::need_bytes("coopmat_probe", "c", c, std::uint64_t{frag->m} * frag->n * 4);
  const std::uint32_t sg = ctx.caps().subgroup_size;
  const std::uint32_t spec[] = {sg, frag->m, frag->n, frag->k};
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::coopmat_probe, "coopmat_probe", spec,
                                     {.subgroup_size = ctx.caps().subgroup_size_control ? sg : 0, .full_subgroups = true});
  d.bind(0, a, Access::read).bind(1, b, Access::read).bind(2, c, Access::write);
  d.groups = {1, 1, 1};
  return d;
}

}  // namespace vkblr::ops
