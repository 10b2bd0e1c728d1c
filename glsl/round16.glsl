// round16.glsl — f32 -> 16-bit bit patterns rounded to nearest, ties to
// even, by integer arithmetic: the same bits as vkblr/half.hpp's
// f32_to_f16 / f32_to_bf16 on every input (NaN stays NaN with the host's
// payload, overflow goes to infinity, f16 subnormals rounded exactly),
// whatever rounding mode the driver's own f32 -> f16 conversion uses.
#ifndef VKBLR_ROUND16_GLSL
#define VKBLR_ROUND16_GLSL

uint f16_bits_rne(float value) {
  const uint x = floatBitsToUint(value);
  const uint sign = (x >> 16) & 0x8000u;
  const uint a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;                        // rounds to or is infinity
  if (a < 0x38800000u) {                                               // subnormal or zero
    if (a < 0x33000000u) return sign;
    const uint e = a >> 23;
    const uint mant = (a & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - e;  // 14..24
    uint q = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u);
    const uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) ++q;
    return sign | q;
  }
  uint r = a - 0x38000000u;  // exponent 127 -> 15
  const uint rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) ++r;
  return sign | r;
}

uint bf16_bits_rne(float value) {
  const uint x = floatBitsToUint(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;  // quiet NaN
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

#endif
