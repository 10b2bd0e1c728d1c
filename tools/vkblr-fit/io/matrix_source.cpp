#include "vkblr-fit/io/matrix_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "vkblr/io/widen.hpp"
#include "vkblr-fit/parallel.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {

// A read-only map of a whole regular file.
struct MatrixSource::Mapping {
  void* base = MAP_FAILED;
  std::size_t bytes = 0;

  Mapping(const std::string& path, std::uint64_t expected_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    require(fd >= 0, "cannot open {}: {}", path, std::strerror(errno));
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!regular || static_cast<std::uint64_t>(st.st_size) != expected_bytes) {
      ::close(fd);
      require(regular, "cannot map {}: not a regular file", path);
      fail("{}: changed while being read: {} bytes, {} when its header was read", path, st.st_size, expected_bytes);
    }
    bytes = static_cast<std::size_t>(st.st_size);
    if (bytes > 0) base = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    require(bytes == 0 || base != MAP_FAILED, "cannot map {}: {}", path, std::strerror(err));
    if (bytes > 0) ::madvise(base, bytes, MADV_SEQUENTIAL);
  }
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, bytes);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

namespace {

std::size_t element_bytes(Dtype d) { return dtype_bits(d) / 8; }

}  // namespace

MatrixSource::MatrixSource(const std::string& path, const std::string& tensor, const char* what) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  require(!ec, "cannot open {}: {} (the {} file)", path, ec.message(), what);  // a loop of links, no permission
  require(exists, "{} file {} does not exist", what, path);
  const std::string ext = std::filesystem::path(path).extension().string();
  std::uint64_t offset = 0, file_bytes = 0;
  if (ext == ".npy") {
    require(tensor.empty(), "{} file {} is .npy: it has no tensor names (drop the tensor name)", what, path);
    const NpyHeader h = read_npy_header(path);
    rows_ = h.rows;
    cols_ = h.cols;
    dtype_ = h.dtype;
    offset = h.data_offset;
    file_bytes = h.file_bytes;
    source_ = path;
  } else {
    require(ext == ".safetensors", "{} file {}: expected .safetensors or .npy", what, path);
    const SafetensorsReader reader(path);
    const TensorInfo& t = reader.choose(tensor);
    reader.check_matrix(t);
    rows_ = t.shape[0];
    cols_ = t.shape[1];
    dtype_ = t.dtype;
    offset = reader.data_offset(t);
    file_bytes = reader.file_bytes();
    source_ = tensor.empty() ? path : path + ":" + tensor;
  }
  map_ = std::make_unique<Mapping>(path, file_bytes);
  require(offset + rows_ * cols_ * element_bytes(dtype_) <= map_->bytes, "{}: the data is past the file's end",
          path);
  data_ = static_cast<const std::byte*>(map_->base) + offset;
}

MatrixSource::~MatrixSource() = default;
MatrixSource::MatrixSource(MatrixSource&&) noexcept = default;
MatrixSource& MatrixSource::operator=(MatrixSource&&) noexcept = default;

std::span<const std::byte> MatrixSource::bytes(std::uint64_t first, std::uint64_t count) const {
  require(first <= rows_ && count <= rows_ - first, "{}: rows [{}, {}) of {}", source_, first, first + count, rows_);
  const std::size_t row_bytes = cols_ * element_bytes(dtype_);
  return {data_ + first * row_bytes, count * row_bytes};
}

MatrixSource::ValueStats MatrixSource::read_rows(std::uint64_t first, std::uint64_t count,
                                                 std::span<float> out) const {
  const std::span<const std::byte> in = bytes(first, count);
  require(out.size() == count * cols_, "{}: {} floats for {} rows of {}", source_, out.size(), count, cols_);
  const std::size_t size = element_bytes(dtype_);
  std::mutex stats_mutex;
  ValueStats stats;
  parallel_ranges(out.size(), std::size_t{1} << 20, [&](std::size_t begin, std::size_t end) {
    widen_to_f32(dtype_, in.subspan(begin * size, (end - begin) * size), out.subspan(begin, end - begin));
    ValueStats piece;
    for (std::size_t i = begin; i < end; ++i) {
      const float v = out[i];
      if (!std::isfinite(v)) {
        if (piece.non_finite++ == 0) piece.first_non_finite = i;
      } else {
        if (std::abs(v) > piece.max_abs) {
          piece.max_abs = std::abs(v);
          piece.max_at = i;
        }
      }
    }
    const std::lock_guard lock(stats_mutex);
    if (piece.max_abs > stats.max_abs || (piece.max_abs == stats.max_abs && piece.max_at < stats.max_at)) {
      stats.max_abs = piece.max_abs;
      stats.max_at = piece.max_at;
    }
    if (piece.non_finite > 0 && (stats.non_finite == 0 || piece.first_non_finite < stats.first_non_finite)) {
      stats.first_non_finite = piece.first_non_finite;
    }
    stats.non_finite += piece.non_finite;
  });
  return stats;
}

}  // namespace vkblr::fit
