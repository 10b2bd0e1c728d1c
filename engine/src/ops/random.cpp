// Gaussian random numbers (glsl/gaussian.comp) and their f64 host reference.
#include "vkblr/ops/random.hpp"

#include <cmath>
#include <numbers>

#include "gaussian.h"
#include "lowbias32.h"
#include "op_util.hpp"

namespace vkblr::ops {
namespace {
using shader::GaussianPush;
static_assert(sizeof(GaussianPush) == 20);

constexpr std::uint64_t kMaxDraws = std::uint64_t{1} << 31;  // counters 2i + 1 stay below 2^32
}  // namespace

Dispatch gaussian(Context& ctx, const Buffer& out, std::uint64_t count, std::uint64_t seed, std::uint32_t stream,
                  float scale, std::uint64_t offset, std::uint64_t first) {
  const char* op = "gaussian";
  require(count > 0, "{}: count = 0", op);
  require(count <= kMaxDraws, "{}: count = {} exceeds 2^31 draws", op, count);
  require(first <= kMaxDraws - count, "{}: first = {} + count = {} exceeds 2^31 draws", op, first, count);
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::gaussian, op);
  GaussianPush p{};
  p.count = static_cast<std::uint32_t>(count);
  p.offset = detail::bind_elements(ctx, d, op, "out", 0, out, Access::write, offset, count);
  p.key = shader::stream_key(seed, stream);
  p.scale = scale;
  p.first = static_cast<std::uint32_t>(first);
  d.set_push(p);
  d.groups = detail::elt_grid(count, op);
  return d;
}

double gaussian_reference(std::uint64_t seed, std::uint32_t stream, std::uint32_t i) {
  require(i < kMaxDraws, "gaussian_reference: i = {} is past the 2^31 draws of a stream", i);
  const std::uint32_t key = shader::stream_key(seed, stream);
  const auto uniform = [key](std::uint32_t counter) {
    const std::uint32_t w = shader::lowbias32(shader::lowbias32(counter) ^ key);
    return (static_cast<double>(w >> 9) + 0.5) * 0x1p-23;
  };
  const double u0 = uniform(2 * i), u1 = uniform(2 * i + 1);
  return std::sqrt(-2.0 * std::log(u0)) * std::cos(2.0 * std::numbers::pi * u1);
}

}  // namespace vkblr::ops
