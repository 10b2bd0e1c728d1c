// vkblr/io/npy.hpp — reading a 2-D float array from a NumPy .npy file.
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

#include <string>

#include <cstdint>

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

}  // namespace vkblr::io
