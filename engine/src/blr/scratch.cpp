// BlrScratch: a layer's a and c, with transients of its own or borrowed.
#include "../ops/op_util.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/ops/blr_lane.hpp"

namespace vkblr {
namespace {

// Checks the layer against `shared`, reserves its lanes, allocates a and c.
void allocate(BlrScratch& s, Context& ctx, const BlrLayer& layer) {
  const ops::BlrShared& sh = *s.shared;
  require(layer.m <= sh.m && layer.n <= sh.n && layer.r <= sh.r,
          "BlrScratch: layer {}x{} rank {} exceeds the shared transients' {}x{} rank {}", layer.m, layer.n, layer.r,
          sh.m, sh.n, sh.r);
  s.shared->reserve_lanes(ctx, layer.paths.size());
  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    s.a.push_back(ctx.buffer(std::uint64_t{s.ntok} * layer.r * 4, "blr.a"));
    s.c.push_back(ctx.buffer(std::uint64_t{s.ntok} * layer.m * 4, "blr.c"));
  }
}

// The transients of a scratch of its own, sized for the layer.
std::unique_ptr<ops::BlrShared> own_shared(Context& ctx, const BlrLayer& layer, std::uint32_t ntok,
                                           std::uint32_t lanes) {
  layer.check("BlrScratch");
  detail::dim("BlrScratch", "ntok", ntok);
  require(lanes >= 1 && lanes <= 64, "BlrScratch: lanes = {} (expected 1..64)", lanes);
  return std::make_unique<ops::BlrShared>(ctx, ntok, layer.m, layer.n, layer.r, lanes);
}

}  // namespace

BlrScratch::BlrScratch(Context& ctx, const BlrLayer& layer, std::uint32_t ntok_, std::uint32_t lanes)
    : ntok(ntok_), shared(nullptr), owned_(own_shared(ctx, layer, ntok_, lanes)) {
  shared = owned_.get();
  allocate(*this, ctx, layer);
}

BlrScratch::BlrScratch(Context& ctx, const BlrLayer& layer, ops::BlrShared& shared_)
    : ntok(shared_.ntok), shared(&shared_) {
  layer.check("BlrScratch");
  allocate(*this, ctx, layer);
}

BlrScratch::~BlrScratch() = default;
BlrScratch::BlrScratch(BlrScratch&&) noexcept = default;
BlrScratch& BlrScratch::operator=(BlrScratch&&) noexcept = default;

}  // namespace vkblr
