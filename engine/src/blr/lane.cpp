// ops::BlrShared: the lanes of transients of the blr ops.
#include <algorithm>

#include "../ops/op_util.hpp"
#include "vkblr/ops/blr_lane.hpp"

namespace vkblr::ops {
using detail::round32;

BlrShared::BlrShared(Context& ctx, std::uint32_t ntok_, std::uint32_t m_, std::uint32_t n_, std::uint32_t r_,
                     std::uint32_t max_lanes_)
    : ntok(detail::dim("BlrShared", "ntok", ntok_)),
      m(detail::dim("BlrShared", "m", m_)),
      n(detail::dim("BlrShared", "n", n_)),
      r(detail::dim("BlrShared", "r", r_)),
      max_lanes(max_lanes_) {
  require(max_lanes >= 1 && max_lanes <= 64, "BlrShared: lanes = {} (expected 1..64)", max_lanes);
  reserve_lanes(ctx, 1);
}

void BlrShared::reserve_lanes(Context& ctx, std::size_t paths) {
  const std::uint64_t t32 = round32(ntok);
  while (lanes.size() < std::min<std::size_t>(paths, max_lanes)) {
    BlrLane l;
    l.xh = ctx.buffer(std::uint64_t{ntok} * std::max({m, n, r}) * 2, "blr.xh");
    l.t1 = ctx.buffer(std::uint64_t{ntok} * n * 4, "blr.t1");
    l.t2 = ctx.buffer(std::uint64_t{ntok} * r * 4, "blr.t2");
    l.dyh_t = ctx.buffer(round32(m) * t32 * 2, "blr.dyh_t");
    l.xg_t = ctx.buffer(round32(n) * t32 * 2, "blr.xg_t");
    l.al_t = ctx.buffer(round32(r) * t32 * 2, "blr.al_t");
    l.bl_t = ctx.buffer(round32(r) * t32 * 2, "blr.bl_t");
    lanes.push_back(std::move(l));
  }
}

std::uint64_t BlrShared::lane_bytes() const noexcept {
  const BlrLane& l = lanes.front();
  std::uint64_t bytes = 0;
  for (const Buffer* b : {&l.xh, &l.t1, &l.t2, &l.dyh_t, &l.xg_t, &l.al_t, &l.bl_t}) bytes += b->size();
  return bytes;
}

}  // namespace vkblr::ops
