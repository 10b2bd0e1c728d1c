#include "vkblr-fit/io/calibration.hpp"

#include <algorithm>
#include <vector>

#include "vkblr/gemm.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {
constexpr std::uint32_t kChunkTokens = 4096;
std::uint32_t round32(std::uint32_t v) { return (v + 31) / 32 * 32; }
}  // namespace

DeviceMatrix calibration_gram(Context& ctx, const DeviceData& data) {
  const std::uint32_t n = data.n, tokens = data.train_tokens;
  const std::uint32_t chunk = std::min(kChunkTokens, tokens);
  Buffer wide = ctx.buffer(std::uint64_t{chunk} * n * 4, "fit.gram.x");
  Buffer xt = ctx.buffer(std::uint64_t{round32(n)} * round32(chunk) * 2, "fit.gram.xt");
  DeviceMatrix sums = device_matrix(ctx, n, n, "fit.gram.sums");
  Recorder rec(ctx);
  rec.fill(sums.buffer, 0);
  for (std::uint32_t first = 0; first < tokens; first += chunk) {
    const std::uint32_t count = std::min(chunk, tokens - first);
    rec.add(ops::f16_to_f32(ctx, data.tokens(first, count), wide, count * n));
    rec.add(gram_acc(ctx, wide, xt, sums.buffer, count, n));
  }
  rec.run();
  DeviceMatrix c = device_matrix(ctx, n, n, "fit.gram.c");
  const Buffer inverse_t = ctx.upload(std::vector<float>(n, 1.0f / static_cast<float>(tokens)), "fit.gram.scale");
  rec.add(ops::scale_acc(ctx, sums.buffer, inverse_t, c.buffer, n, n, false));
  rec.run();
  return c;
}

}  // namespace vkblr::fit
