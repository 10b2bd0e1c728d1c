#include "vkblr/io/widen.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "vkblr/error.hpp"
#include "vkblr/half.hpp"

static_assert(std::endian::native == std::endian::little, "stored elements are little-endian: a port needs byte swaps");
static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "F64 -> f32 relies on IEEE 754's rounding (overflow to infinity)");

namespace vkblr::io {
namespace {

// out[i] = convert(element i), the elements `Stored` values read unaligned.
template <class Stored, class Convert>
void widen_each(std::span<const std::byte> in, std::span<float> out, Convert convert) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    Stored v;
    std::memcpy(&v, in.data() + i * sizeof(Stored), sizeof(Stored));
    out[i] = convert(v);
  }
}

}  // namespace

bool widens_to_f32(Dtype dtype) {
  return dtype == Dtype::F32 || dtype == Dtype::F16 || dtype == Dtype::BF16 || dtype == Dtype::F64;
}

void widen_to_f32(Dtype dtype, std::span<const std::byte> in, std::span<float> out) {
  require(widens_to_f32(dtype), "widen_to_f32: dtype {} is not F32, F16, BF16 or F64", dtype_name(dtype));
  const std::size_t size = dtype_bits(dtype) / 8;
  require(in.size() / size == out.size() && in.size() % size == 0,
          "widen_to_f32: {} bytes of {} for {} values", in.size(), dtype_name(dtype), out.size());
  switch (dtype) {
    case Dtype::F32:
      if (!out.empty()) std::memcpy(out.data(), in.data(), in.size());
      return;
    case Dtype::F16:
      widen_each<std::uint16_t>(in, out, f16_to_f32);
      return;
    case Dtype::BF16:
      widen_each<std::uint16_t>(in, out, bf16_to_f32);
      return;
    default:  // F64
      widen_each<double>(in, out, [](double v) { return static_cast<float>(v); });
      return;
  }
}

std::vector<float> widen_to_f32(Dtype dtype, std::span<const std::byte> in) {
  require(widens_to_f32(dtype), "widen_to_f32: dtype {} is not F32, F16, BF16 or F64", dtype_name(dtype));
  std::vector<float> out(in.size() / (dtype_bits(dtype) / 8));
  widen_to_f32(dtype, in, out);
  return out;
}

}  // namespace vkblr::io
