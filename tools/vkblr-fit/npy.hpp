// npy.hpp — reading a 2-D float array from a NumPy .npy file.
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

#include "vkblr-fit/matrix.hpp"

namespace vkblr::fit {

// The array as f32 [shape[0]][shape[1]]: f2 widened exactly, f8 rounded to
// nearest.
Matrix read_npy_matrix(const std::string& path);

}  // namespace vkblr::fit
