// vkblr/io/widen.hpp — an input file's stored elements to f32: the one conversion
// behind every reader of W and X (safetensors.hpp's read_f32, npy.hpp's
// read_npy_matrix, matrix_source.hpp's read_rows).
//
// Input: little-endian elements packed without padding, at any alignment.
// Per dtype:
//   F32   bit for bit (every NaN payload kept, signalling ones too);
//   F16   exactly: every f16 is an f32 (subnormals become normal f32s,
//         ±0 and ±Inf stay, a NaN stays a NaN with its payload in the top
//         bits of the f32 mantissa);
//   BF16  exactly: the 16 bits are the f32's top half;
//   F64   rounded to nearest, ties to even (IEEE 754's conversion): finite
//         values at or past f32's largest plus half an ulp become ±Inf, those
//         at or below half f32's smallest subnormal ±0, NaN a quiet NaN.
// Non-finite values are carried, not refused: the callers' checks
// (input_range.hpp) report them with their place in the matrix.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "vkblr/io/safetensors.hpp"

namespace vkblr::io {

// F32, F16, BF16 and F64: the dtypes widen_to_f32 reads.
bool widens_to_f32(Dtype dtype);

// out[i] = element i of `in` as f32, for i < out.size(). Throws vkblr::Error
// naming "widen_to_f32" when the dtype is another, or `in` is not
// out.size() elements of it.
void widen_to_f32(Dtype dtype, std::span<const std::byte> in, std::span<float> out);
// All the elements of `in` as f32 (widen_to_f32); throws as it does, also
// for bytes that are not whole elements.
std::vector<float> widen_to_f32(Dtype dtype, std::span<const std::byte> in);

}  // namespace vkblr::io
