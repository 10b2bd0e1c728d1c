#include "vkblr-fit/init/device_matrix.hpp"

#include <algorithm>

#include "vkblr/error.hpp"
#include "vkblr/ops/gemm_f32.hpp"

namespace vkblr::fit {

DeviceMatrix device_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::string_view label,
                           std::uint64_t capacity) {
  require(rows >= 1 && cols >= 1, "device matrix {}: shape {}×{} is empty", label, rows, cols);
  const std::uint64_t elements = std::max(capacity, std::uint64_t{rows} * cols);
  return {ctx.buffer(elements * 4, label), rows, cols};
}

DeviceMatrix upload_matrix(Context& ctx, std::span<const double> values, std::uint32_t rows, std::uint32_t cols,
                           std::string_view label) {
  DeviceMatrix m = device_matrix(ctx, rows, cols, label);
  upload_values(m, values);
  return m;
}

void upload_values(DeviceMatrix& m, std::span<const double> values) {
  require(values.size() == m.elements(), "upload to a {}×{} device matrix: {} values", m.rows, m.cols, values.size());
  const std::vector<float> narrow(values.begin(), values.end());
  m.buffer.upload(narrow);
}

std::vector<double> download_matrix(const DeviceMatrix& m) {
  const std::vector<float> values = m.buffer.download<float>(m.elements());
  return {values.begin(), values.end()};
}

Dispatch product(Context& ctx, const DeviceMatrix& a, bool trans_a, const DeviceMatrix& b, bool trans_b,
                 const DeviceMatrix& out, float alpha, bool accumulate) {
  const std::uint32_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::uint32_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  require(k == kb && out.rows == m && out.cols == n,
          "device product: op(a) {}×{} · op(b) {}×{} into {}×{}: shapes do not match", m, k, kb, n, out.rows,
          out.cols);
  require(out.buffer.id() != a.buffer.id() && out.buffer.id() != b.buffer.id(),
          "device product: the output is an operand");
  ops::GemmF32 shape;
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.trans_a = trans_a;
  shape.trans_b = trans_b;
  shape.lda = a.cols;
  shape.ldb = b.cols;
  shape.ldo = out.cols;
  shape.alpha = alpha;
  shape.accumulate = accumulate;
  return ops::gemm_f32(ctx, a.buffer, b.buffer, out.buffer, shape);
}

}  // namespace vkblr::fit
