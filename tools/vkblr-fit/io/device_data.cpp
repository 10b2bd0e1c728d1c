#include "vkblr-fit/io/device_data.hpp"

#include <algorithm>
#include <format>
#include <vector>

#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/input_range.hpp"
#include "vkblr-fit/io/f16_rows.hpp"
#include "vkblr-fit/io/gpu_synthetic.hpp"
#include "vkblr-fit/io/matrix_source.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

constexpr std::uint64_t kChunkFloats = std::uint64_t{16} << 20;  // 64 MiB of f32 per staged chunk

void check_values(const MatrixSource& src, const MatrixSource::ValueStats& s, std::uint64_t first_row,
                  const char* what) {
  if (s.non_finite > 0) {
    const std::uint64_t i = s.first_non_finite;
    fail("{} ({}) has {} NaN or infinite value(s), the first at [{}][{}]; every value must be finite", what,
         src.source(), s.non_finite, first_row + i / src.cols(), i % src.cols());
  }
  if (s.max_abs > kF16Max) {
    check_f16_magnitude(s.max_abs, first_row + s.max_at / src.cols(), s.max_at % src.cols(),
                        std::format("{} ({})", what, src.source()));
  }
}

// The whole matrix's largest magnitude: not zero, and not below f16's
// normals (input_range.hpp).
void check_largest(const MatrixSource& src, double max_abs, const char* what) {
  check_f16_magnitude(max_abs, 0, 0, std::format("{} ({})", what, src.source()));
}

// Rows [0, rows) of `src` into dst f32 [rows][cols] on the device.
double upload_f32(const MatrixSource& src, std::uint64_t rows, Buffer& dst, const char* what) {
  const std::uint64_t chunk_rows = std::max<std::uint64_t>(1, kChunkFloats / src.cols());
  std::vector<float> staging(std::min(rows, chunk_rows) * src.cols());
  double max_abs = 0;
  for (std::uint64_t r = 0; r < rows; r += chunk_rows) {
    const std::uint64_t count = std::min(chunk_rows, rows - r);
    const std::span<float> part(staging.data(), count * src.cols());
    const MatrixSource::ValueStats s = src.read_rows(r, count, part);
    check_values(src, s, r, what);
    max_abs = std::max(max_abs, s.max_abs);
    dst.write(part.data(), part.size_bytes(), r * src.cols() * 4);
  }
  return max_abs;
}

// Rows [first, first + rows) of `src` into dst f16 [rows][cols] on the
// device: F16 data bit for bit; other dtypes converted to f32 on the host
// and to f16 on the device (narrow_rows, round to nearest even).
double upload_f16(Context& ctx, const MatrixSource& src, std::uint64_t first, std::uint64_t rows, Buffer& dst,
                  const char* what) {
  const std::uint64_t cols = src.cols();
  const std::uint64_t chunk_rows = f16_chunk_rows(ctx, cols, kChunkFloats / cols, rows);
  if (src.dtype() == Dtype::F16) {
    std::vector<float> scan(std::min(rows, chunk_rows) * cols);
    double max_abs = 0;
    for (std::uint64_t r = 0; r < rows; r += chunk_rows) {
      const std::uint64_t count = std::min(chunk_rows, rows - r);
      const MatrixSource::ValueStats s = src.read_rows(first + r, count, std::span(scan.data(), count * cols));
      check_values(src, s, first + r, what);
      max_abs = std::max(max_abs, s.max_abs);
      const std::span<const std::byte> b = src.bytes(first + r, count);
      dst.write(b.data(), b.size(), r * cols * 2);
    }
    return max_abs;
  }
  std::vector<float> staging(std::min(rows, chunk_rows) * cols);
  Buffer wide = ctx.buffer(staging.size() * 4, "fit.data.chunk");
  double max_abs = 0;
  for (std::uint64_t r = 0; r < rows; r += chunk_rows) {
    const std::uint64_t count = std::min(chunk_rows, rows - r);
    const std::span<float> part(staging.data(), count * cols);
    const MatrixSource::ValueStats s = src.read_rows(first + r, count, part);
    check_values(src, s, first + r, what);
    max_abs = std::max(max_abs, s.max_abs);
    wide.write(part.data(), part.size_bytes());
    Recorder rec(ctx);
    rec.add(narrow_rows(ctx, wide, dst, r, static_cast<std::uint32_t>(count), static_cast<std::uint32_t>(cols)));
    rec.run();
  }
  return max_abs;
}

void make_w16(Context& ctx, DeviceData& d) {
  d.w16 = ctx.buffer(std::uint64_t{d.m} * d.n * 2, "fit.w16");
  Recorder rec(ctx);
  rec.add(ops::cvt(ctx, d.w.buffer, d.w16, d.m, d.n, 1.0f));
  rec.run();
}

}  // namespace

Buffer DeviceData::tokens(std::uint64_t first, std::uint64_t count) const {
  require(first + count <= std::uint64_t{train_tokens} + held_out_tokens, "device data: tokens [{}, {}) of {}", first,
          first + count, train_tokens + held_out_tokens);
  return x16.view(first * n * 2, count * n * 2);
}

DeviceData load_device_data(Context& ctx, const DataSpec& spec) {
  DeviceData d;
  d.train_tokens = spec.train_tokens;
  d.held_out_tokens = spec.held_out_tokens;
  const std::uint64_t need = std::uint64_t{spec.train_tokens} + spec.held_out_tokens;
  require(spec.train_tokens >= 1 && spec.held_out_tokens >= 1, "device data: {} training and {} held-out tokens",
          spec.train_tokens, spec.held_out_tokens);

  // W
  if (spec.weight_path.empty()) {
    require(spec.synthetic_m > 0 && spec.synthetic_n > 0, "synthetic weight: shape {}x{}", spec.synthetic_m,
            spec.synthetic_n);
    switch (spec.family) {
      case DataSpec::Family::standard:
        d.w = gpu_synthetic_weight(ctx, {.m = spec.synthetic_m, .n = spec.synthetic_n, .seed = spec.seed});
        d.weight_source = std::format("synthetic {}x{} (seed {})", spec.synthetic_m, spec.synthetic_n, spec.seed);
        break;
      case DataSpec::Family::exponential:
        d.w = gpu_synthetic_weight(ctx, {.m = spec.synthetic_m,
                                         .n = spec.synthetic_n,
                                         .spectrum = WeightSpectrum::exponential,
                                         .spectrum_scale = spec.family_rank / 6.0,
                                         .heavy_columns = std::max(1u, spec.synthetic_n / 100),
                                         .rms = 1.0,
                                         .seed = spec.seed});
        d.weight_source = std::format("synthetic exponential-spectrum {}x{} (rank {}, seed {})", spec.synthetic_m,
                                      spec.synthetic_n, spec.family_rank, spec.seed);
        break;
      case DataSpec::Family::planted:
        d.w = gpu_planted_weight(ctx, {.m = spec.synthetic_m,
                                       .n = spec.synthetic_n,
                                       .rank = spec.family_rank,
                                       .paths = 2,
                                       .seed = spec.seed});
        d.weight_source = std::format("synthetic planted {}x{} (rank {}, 2 paths, 1 % noise, seed {})",
                                      spec.synthetic_m, spec.synthetic_n, spec.family_rank, spec.seed);
        break;
    }
    d.weight_hash = xxh3_64(d.weight_source);
  } else {
    const MatrixSource src(spec.weight_path, spec.weight_tensor, "weight");
    require(src.rows() >= 1 && src.cols() >= 1 && src.rows() <= 0xffffffffu && src.cols() <= 0xffffffffu,
            "weight {} is {}x{}", src.source(), src.rows(), src.cols());
    d.w = device_matrix(ctx, static_cast<std::uint32_t>(src.rows()), static_cast<std::uint32_t>(src.cols()), "fit.w");
    d.weight_max_abs = upload_f32(src, src.rows(), d.w.buffer, "W");
    check_largest(src, d.weight_max_abs, "W");
    d.weight_hash = xxh3_64(src.bytes(0, src.rows()));
    d.weight_source = src.source();
  }
  d.m = d.w.rows;
  d.n = d.w.cols;
  if (!spec.held_out_only) make_w16(ctx, d);

  // X: training tokens, then held-out ones (of a file, only the held-out
  // ones for held_out_only)
  const bool skip_training = spec.held_out_only && !spec.activations_path.empty();
  const std::uint64_t first_row = skip_training ? spec.train_tokens : 0;
  const std::uint64_t rows = need - first_row;
  if (skip_training) d.train_tokens = 0;
  const std::uint64_t x_bytes = rows * d.n * 2;
  d.x_in_host_memory = spec.x_memory == DataSpec::XMemory::host ||
                       (spec.x_memory == DataSpec::XMemory::automatic && ctx.caps().device_type != "cpu" &&
                        static_cast<double>(x_bytes) > 0.5 * static_cast<double>(ctx.caps().device_local_bytes));
  d.x16 = d.x_in_host_memory ? ctx.host_buffer(x_bytes, "fit.x16.host") : ctx.buffer(x_bytes, "fit.x16");
  if (spec.activations_path.empty()) {
    SyntheticActivationSpec a{.tokens = static_cast<std::uint32_t>(need), .n = d.n, .seed = spec.seed + 1};
    if (spec.family == DataSpec::Family::standard) {
      a.spectrum_decay = spec.activation_decay;
    } else {  // independent Gaussian channels, 1/64 of them ×8
      a.outlier_channels = std::max(1u, d.n / 64);
      a.outlier_scale = 8;
    }
    gpu_synthetic_activations(ctx, a, d.x16);
    d.activation_source = std::format("synthetic Gaussian {}x{}, covariance spectrum decay {}, {} outlier channels x{} "
                                      "(seed {})",
                                      need, d.n, a.spectrum_decay, a.outlier_channels, a.outlier_scale, a.seed);
    d.activation_hash = xxh3_64(d.activation_source);
  } else {
    const MatrixSource src(spec.activations_path, spec.activations_tensor, "activations");
    require(src.cols() == d.n, "activations {} have {} columns but W has n = {} (X must be [T][n])", src.source(),
            src.cols(), d.n);
    require(src.rows() >= need,
            "activations {} have {} tokens; {} training + {} held-out are needed (--tokens, --held-out)",
            src.source(), src.rows(), spec.train_tokens, spec.held_out_tokens);
    d.activation_max_abs = upload_f16(ctx, src, first_row, rows, d.x16, "X");
    if (!skip_training) check_largest(src, d.activation_max_abs, "X");  // a fit's load checks the whole X
    d.activation_hash = xxh3_64(src.bytes(first_row, rows));
    d.activation_source = src.source();
  }
  return d;
}

}  // namespace vkblr::fit
