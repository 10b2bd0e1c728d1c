// BlrLayer checks, segments and allocation (make_blr_layer).
#include <algorithm>

#include "../ops/op_util.hpp"
#include "vkblr/blr.hpp"

namespace vkblr {

ScaleSegment BlrLayer::segment(std::size_t path, Scale which) const {
  const std::size_t s = 3 * path + static_cast<std::size_t>(which);
  require(s < segments.size(), "BlrLayer: path {}'s scale segment {} of {} segments", path, s, segments.size());
  return segments[s];
}

void BlrLayer::check(const char* op) const {
  require(m > 0 && m % 16 == 0, "{}: m = {} is not a positive multiple of 16", op, m);
  require(n > 0 && n % 16 == 0, "{}: n = {} is not a positive multiple of 16", op, n);
  require(r > 0 && r % 32 == 0, "{}: rank r = {} is not a positive multiple of 32", op, r);
  require(!paths.empty(), "{}: the layer has no paths", op);
  for (std::size_t p = 0; p < paths.size(); ++p) {
    const BlrPath& b = paths[p];
    const std::uint64_t words = r / 32;
    auto need = [&](const Buffer& buf, std::uint64_t bytes, const char* what) {
      require(static_cast<bool>(buf) && buf.size() >= bytes, "{}: path {} {} holds {} bytes, needs {}", op, p, what,
              buf ? buf.size() : 0, bytes);
    };
    need(b.bits_u, std::uint64_t{m} * words * 4, "bits_u");
    need(b.bits_v, std::uint64_t{n} * words * 4, "bits_v");
    need(b.h, std::uint64_t{m} * 4, "h");
    need(b.l, std::uint64_t{r} * 4, "l");
    need(b.g, std::uint64_t{n} * 4, "g");
    need(b.dh, std::uint64_t{m} * 4, "dh");
    need(b.dl, std::uint64_t{r} * 4, "dl");
    need(b.dg, std::uint64_t{n} * 4, "dg");
    if (b.g_u || b.g_v) {
      need(b.g_u, std::uint64_t{m} * r * 4, "g_u");
      need(b.g_v, std::uint64_t{n} * r * 4, "g_v");
    }
  }
}

BlrLayer make_blr_layer(Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t r,
                        const std::vector<BlrPathInit>& init, bool sign_grads) {
  BlrLayer layer;
  layer.m = m;
  layer.n = n;
  layer.r = r;
  // segments aligned for binding as views: at least 64 floats apart
  const std::uint64_t align_floats =
      std::max<std::uint64_t>(64, ctx.caps().min_storage_buffer_offset_alignment / 4);
  auto aligned = [&](std::uint64_t v) { return (v + align_floats - 1) / align_floats * align_floats; };
  std::uint64_t count = 0;
  for (std::size_t p = 0; p < init.size(); ++p) {
    for (const std::uint32_t len : {m, r, n}) {
      layer.segments.push_back({static_cast<std::uint32_t>(count), len});
      count = aligned(count + len);
    }
  }
  require(count > 0 && count <= 0xffffffffu, "make_blr_layer: {} paths of m = {}, n = {}, r = {}", init.size(), m, n,
          r);
  layer.scale_count = static_cast<std::uint32_t>(count);
  std::vector<float> values(count, 0.0f);
  for (std::size_t p = 0; p < init.size(); ++p) {
    const BlrPathInit& in = init[p];
    const std::size_t words = r / 32;
    require(in.bits_u.size() == std::size_t{m} * words && in.bits_v.size() == std::size_t{n} * words &&
                in.h.size() == m && in.l.size() == r && in.g.size() == n,
            "make_blr_layer: path {} values do not match m = {}, n = {}, r = {}", p, m, n, r);
    std::copy(in.h.begin(), in.h.end(), values.begin() + layer.segment(p, Scale::h).offset);
    std::copy(in.l.begin(), in.l.end(), values.begin() + layer.segment(p, Scale::l).offset);
    std::copy(in.g.begin(), in.g.end(), values.begin() + layer.segment(p, Scale::g).offset);
  }
  layer.scales = ctx.upload(values, "blr.scales");
  layer.scale_grads = ctx.upload(std::vector<float>(count, 0.0f), "blr.scale_grads");
  auto view = [](const Buffer& b, const ScaleSegment& s) {
    return b.view(std::uint64_t{s.offset} * 4, std::uint64_t{s.length} * 4);
  };
  for (std::size_t p = 0; p < init.size(); ++p) {
    const BlrPathInit& in = init[p];
    BlrPath b;
    b.bits_u = ctx.upload(in.bits_u, "blr.bits_u");
    b.bits_v = ctx.upload(in.bits_v, "blr.bits_v");
    b.h = view(layer.scales, layer.segment(p, Scale::h));
    b.l = view(layer.scales, layer.segment(p, Scale::l));
    b.g = view(layer.scales, layer.segment(p, Scale::g));
    b.dh = view(layer.scale_grads, layer.segment(p, Scale::h));
    b.dl = view(layer.scale_grads, layer.segment(p, Scale::l));
    b.dg = view(layer.scale_grads, layer.segment(p, Scale::g));
    if (sign_grads) {
      b.g_u = ctx.buffer(std::uint64_t{m} * r * 4, "blr.g_u");
      b.g_v = ctx.buffer(std::uint64_t{n} * r * 4, "blr.g_v");
      b.g_u.fill(0);
      b.g_v.fill(0);
    }
    layer.paths.push_back(std::move(b));
  }
  layer.check("make_blr_layer");
  return layer;
}

}  // namespace vkblr
