// vkblr/io/npy.hpp — reading a 2-D float array, or 1-D token ids, from a
// NumPy .npy file.
//
// Format (numpy.lib.format): "\x93NUMPY", major, minor version bytes, the
// header length (u16 LE for version 1.0, u32 LE for 2.0 and 3.0), then a
// Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}
// (latin-1, UTF-8 for 3.0), then the data. Accepted: descr '<f4', '<f2' or
// '<f8' (also '=' on this little-endian host), C order, 2-D shape; the data
// must be exactly shape[0]·shape[1] elements.
//
// Throws vkblr::Error naming the file: missing file, bad magic, an unknown
// version, a header past the end, a malformed dict, another dtype (or a
// big-endian one), Fortran order, another rank, truncated or trailing data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkblr/io/matrix.hpp"
#include "vkblr/io/safetensors.hpp"

namespace vkblr::io {

// What a .npy file's header says, validated against the file's size.
struct NpyHeader {
  std::uint64_t rows = 0, cols = 0;
  Dtype dtype = Dtype::F32;       // F32, F16 or F64 ('<f4', '<f2', '<f8')
  std::uint64_t data_offset = 0;  // bytes from the file's start
  std::uint64_t file_bytes = 0;
};
NpyHeader read_npy_header(const std::string& path);

// The array as f32 [shape[0]][shape[1]], converted by widen_to_f32
// (io/widen.hpp: f2 exactly, f8 rounded to nearest).
Matrix read_npy_matrix(const std::string& path);

// Token ids: a 1-D array of '<u2', '<u4', '<u8', '<i4' or '<i8' (numpy's
// uint16 a byte-level or small-vocabulary tokenizer's files use, up to
// int64 as PyTorch's), every id in [0, vocab_size). Throws vkblr::Error
// naming the file, and for a bad id its position and value: "PATH: token
// 1234 is 300, outside the vocabulary of 272 (0 to 271)"; also for no ids,
// another rank or dtype, and the .npy errors above.
std::vector<std::uint32_t> read_npy_token_ids(const std::string& path, std::uint32_t vocab_size);

// Token ids as a 1-D stream or a 2-D array [rows][cols] (windows of a
// context, say): the dtypes and checks of read_npy_token_ids, the ids in C
// order. A bad id of a 2-D array is named by its place too: "PATH: token
// 70 (row 1, column 6) is 300, outside ...". Throws for another rank, no
// ids, or a 2-D shape with a side of 0.
struct TokenArray {
  std::vector<std::uint64_t> shape;  // (count,) or (rows, cols)
  std::vector<std::uint32_t> ids;
};
TokenArray read_npy_token_array(const std::string& path, std::uint32_t vocab_size);

}  // namespace vkblr::io
