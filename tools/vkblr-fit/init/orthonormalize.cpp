#include "vkblr-fit/init/orthonormalize.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "vkblr-fit/init/host_lapack.hpp"
#include "vkblr/error.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

constexpr double kKeepEigenvalue = 1e-6;  // relative to the largest, for the SVQB pass
constexpr std::uint32_t kMaxPasses = 6;
// Shifted CholeskyQR (Fukaya et al. 2020): s = 11·(rows·l + l(l+1))·u·‖G‖,
// u the f32 unit roundoff, ‖G‖ bounded by its trace.
constexpr double kShiftUnits = 11;
constexpr double kUnitRoundoff = 0x1p-24;

// G = YᵀY on the device, as f64 on the host.
std::vector<double> gram(Context& ctx, const DeviceMatrix& y, DeviceMatrix& g) {
  g.rows = g.cols = y.cols;
  Recorder rec(ctx);
  rec.add(product(ctx, y, true, y, false, g));
  rec.run();
  return download_matrix(g);
}

// y ← y·t (t [l][k] on the host); y takes scratch's buffer.
void multiply_right(Context& ctx, DeviceMatrix& y, DeviceMatrix& scratch, const std::vector<double>& t,
                    std::uint32_t k, DeviceMatrix& small) {
  small.rows = y.cols;
  small.cols = k;
  upload_values(small, t);
  scratch.rows = y.rows;
  scratch.cols = k;
  Recorder rec(ctx);
  rec.add(product(ctx, y, false, small, false, scratch));
  rec.run();
  std::swap(y, scratch);
}

}  // namespace

OrthonormalizeStats orthonormalize(Context& ctx, DeviceMatrix& y, DeviceMatrix& scratch) {
  require(y.rows >= y.cols, "orthonormalize: {}×{} has more columns than rows", y.rows, y.cols);
  require(scratch.buffer.size() >= y.elements() * 4, "orthonormalize: scratch holds {} bytes, needs {}",
          scratch.buffer.size(), y.elements() * 4);
  // the Gram matrix and the factor cross between host and device every pass
  DeviceMatrix g = host_matrix(ctx, y.cols, y.cols, "fit.orth.gram");
  DeviceMatrix small = host_matrix(ctx, y.cols, y.cols, "fit.orth.factor");
  OrthonormalizeStats stats;
  int cholesky_passes = 0;  // plain passes since the basis became well conditioned
  bool shifted = false;
  while (cholesky_passes < 2) {
    require(stats.passes < kMaxPasses, "orthonormalize: no orthonormal basis after {} passes (non-finite values?)",
            stats.passes);
    ++stats.passes;
    const std::size_t cols = y.cols;
    const std::vector<double> g_host = gram(ctx, y, g);
    std::vector<double> factor = g_host;
    if (cholesky_upper(factor, cols)) {
      invert_upper(factor, cols);
      multiply_right(ctx, y, scratch, factor, y.cols, small);
      ++cholesky_passes;
      continue;
    }
    cholesky_passes = 0;
    if (!shifted) {  // shifted CholeskyQR: G + s·I is positive definite in f64
      shifted = true;
      ++stats.shifted_passes;
      factor = g_host;
      double trace = 0;
      for (std::size_t i = 0; i < cols; ++i) trace += g_host[i * cols + i];
      const double shift = kShiftUnits * static_cast<double>(y.rows * cols + cols * (cols + 1)) * kUnitRoundoff * trace;
      for (std::size_t i = 0; i < cols; ++i) factor[i * cols + i] += shift;
      if (cholesky_upper(factor, cols)) {
        invert_upper(factor, cols);
        multiply_right(ctx, y, scratch, factor, y.cols, small);
        continue;
      }
    }
    // rank deficient: an eigenvalue pass drops the dependent directions
    ++stats.eigen_passes;
    const SymmetricEigen e = symmetric_eigen(g_host, cols);
    std::size_t keep = 0;
    while (keep < cols && e.values[keep] > kKeepEigenvalue * e.values[0] && e.values[keep] > 0) ++keep;
    if (keep == 0) {  // y is zero
      y.cols = 0;
      return stats;
    }
    std::vector<double> t(cols * keep);
    for (std::size_t i = 0; i < cols; ++i) {
      for (std::size_t j = 0; j < keep; ++j) t[i * keep + j] = e.vectors[i * cols + j] / std::sqrt(e.values[j]);
    }
    multiply_right(ctx, y, scratch, t, static_cast<std::uint32_t>(keep), small);
    cholesky_passes = 1;  // one Cholesky pass more refines it
  }
  return stats;
}

}  // namespace vkblr::fit
