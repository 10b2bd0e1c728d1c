// matrix_source.hpp — a 2-D array in an input file (a .npy array or a
// safetensors tensor), read by rows straight from a memory map: no copy of
// the whole file on the host, no per-element parsing, as fast as the disk.
//
// The header is validated by the file's reader (npy.hpp, safetensors.hpp);
// the data is then mapped read-only. Values are F32, F16, BF16 or F64
// (.npy: <f4, <f2, <f8), converted to f32 by widen_to_f32 as the readers
// convert them (io/widen.hpp), by as many threads as there are cores for
// large ranges. Throws vkblr::Error naming the file: every error
// of its reader, another dtype, another rank than 2, a mapping that fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {

class MatrixSource {
 public:
  // `tensor`: the safetensors tensor's name (empty: the file's only tensor);
  // must be empty for .npy. `what` names the input in messages ("weight").
  MatrixSource(const std::string& path, const std::string& tensor, const char* what);
  ~MatrixSource();
  MatrixSource(MatrixSource&&) noexcept;
  MatrixSource& operator=(MatrixSource&&) noexcept;

  std::uint64_t rows() const { return rows_; }
  std::uint64_t cols() const { return cols_; }
  Dtype dtype() const { return dtype_; }  // F32, F16, BF16 or F64
  // "path" or "path:tensor"
  const std::string& source() const { return source_; }

  // Rows [first, first + count) as f32, row-major, into out (count·cols);
  // returns what the values hold (for the checks of the inputs).
  struct ValueStats {
    double max_abs = 0;                    // of the finite values
    std::uint64_t max_at = 0;              // index of the first value of that magnitude, from row `first`
    std::uint64_t non_finite = 0;          // NaN and ±Inf values
    std::uint64_t first_non_finite = 0;    // index of the first, from row `first` (when non_finite > 0)
  };
  ValueStats read_rows(std::uint64_t first, std::uint64_t count, std::span<float> out) const;
  // The stored bytes of rows [first, first + count) (little-endian, dtype()).
  std::span<const std::byte> bytes(std::uint64_t first, std::uint64_t count) const;

 private:
  struct Mapping;
  std::unique_ptr<Mapping> map_;
  const std::byte* data_ = nullptr;  // the first row
  std::uint64_t rows_ = 0, cols_ = 0;
  Dtype dtype_ = Dtype::F32;
  std::string source_;
};

}  // namespace vkblr::fit
