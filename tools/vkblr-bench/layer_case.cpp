#include "layer_case.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <format>
#include <stdexcept>

#include "bench_args.hpp"

namespace bench {

LayerCase parse_layer_case(const std::string& text) {
  const auto v = parse_numbers(text, ',', 5, 5, "m,n,r,ntok,P");
  const LayerCase c{v[0], v[1], v[2], v[3], v[4]};
  auto rule = [&](bool ok, std::string_view what) {
    if (!ok) throw std::invalid_argument(std::format("case {}: {} (the blr layer's rule, vkblr/blr.hpp)", text, what));
  };
  rule(c.m > 0 && c.m % 16 == 0, std::format("m = {} is not a positive multiple of 16", c.m));
  rule(c.n > 0 && c.n % 16 == 0, std::format("n = {} is not a positive multiple of 16", c.n));
  rule(c.r > 0 && c.r % 32 == 0, std::format("rank r = {} is not a positive multiple of 32", c.r));
  rule(c.ntok > 0, "ntok = 0");
  rule(c.paths > 0, "P = 0 paths");
  return c;
}

std::string to_string(const LayerCase& c) {
  return std::format("m={} n={} r={} ntok={} P={}", c.m, c.n, c.r, c.ntok, c.paths);
}

double layer_scale_floats(const vkblr::Context& ctx, const LayerCase& c) {
  const double align = std::max<double>(64, static_cast<double>(ctx.caps().min_storage_buffer_offset_alignment) / 4);
  const auto aligned = [&](double v) { return std::ceil(v / align) * align; };
  return static_cast<double>(c.paths) * (aligned(c.m) + aligned(c.r) + aligned(c.n));
}

MemoryNeed layer_memory(const vkblr::Context& ctx, const LayerCase& c, bool sign_grads, std::uint32_t lanes) {
  const double m = c.m, n = c.n, r = c.r, t = c.ntok, paths = c.paths;
  const double lanes_used = std::min<double>(paths, lanes);
  auto round32 = [](double v) { return std::ceil(v / 32) * 32; };
  const double t32 = round32(t);
  const double scales = layer_scale_floats(ctx, c);
  MemoryNeed need;
  auto add = [&](double count, double bytes) {
    need.device_bytes += count * bytes;
    if (count > 0) need.largest_buffer = std::max(need.largest_buffer, bytes);
  };
  // BlrLayer: bitmaps, scales, sign gradients
  add(paths, m * r / 8);
  add(paths, n * r / 8);
  add(2, scales * 4);  // the concatenated scales and their gradients
  if (sign_grads) {
    add(paths, m * r * 4);
    add(paths, n * r * 4);
  }
  // BlrScratch: a and c per path; ops::BlrShared: each lane's transients
  add(paths, t * r * 4);
  add(paths, t * m * 4);
  add(lanes_used, t * std::max({m, n, r}) * 2);
  add(lanes_used, t * n * 4);
  add(lanes_used, t * r * 4);
  add(lanes_used, round32(m) * t32 * 2);
  add(lanes_used, round32(n) * t32 * 2);
  add(lanes_used, 2 * round32(r) * t32 * 2);
  // the Recorder's transients, one per lane: the column reductions'
  // partials [blocks][k] (blocks of at least 64 rows, at most 256 blocks) and
  // the split-K workspaces [s][M][N] of the layer's GEMMs, s chosen for all
  // the layer's paths
  const double blocks = std::ceil(t / std::max(64.0, std::ceil(t / 256)));
  add(lanes_used, blocks * std::max({m, n, r}) * 4);
  std::vector<std::array<std::uint32_t, 3>> gemms = {
      {c.ntok, c.r, c.n}, {c.ntok, c.m, c.r}, {c.ntok, c.r, c.m}, {c.ntok, c.n, c.r}};
  if (sign_grads) {
    const auto tokens = static_cast<std::uint32_t>(std::min<double>(t32, 0xffffffffu));
    gemms.push_back({c.m, c.r, tokens});
    gemms.push_back({c.n, c.r, tokens});
  }
  for (const auto& [gm, gn, gk] : gemms) {
    const vkblr::GemmTile tile = vkblr::gemm_tile_for(ctx, gm, gn, gk);
    const double splits = vkblr::gemm_splits_for(ctx, tile, gm, gn, gk, c.paths);
    if (splits > 1) add(lanes_used, splits * gm * gn * 4);
  }
  // host: every path's init at once, then the scale values and zeros
  need.host_bytes = paths * ((m + n) * r / 8 + (m + r + n) * 4) + 2 * scales * 4;
  return need;
}

vkblr::BlrLayer random_layer(vkblr::Context& ctx, const LayerCase& c, bool sign_grads) {
  std::vector<vkblr::BlrPathInit> init;
  for (std::uint32_t p = 0; p < c.paths; ++p) {
    init.push_back({random_words(std::size_t{c.m} * c.r / 32, 10 + p), random_words(std::size_t{c.n} * c.r / 32, 20 + p),
                    random_floats(c.m, 30 + p, 0.02f, 0.07f), random_floats(c.r, 40 + p, 0.5f, 1.5f),
                    random_floats(c.n, 50 + p, 0.1f, 0.3f)});
  }
  return vkblr::make_blr_layer(ctx, c.m, c.n, c.r, init, sign_grads);
}

}  // namespace bench
