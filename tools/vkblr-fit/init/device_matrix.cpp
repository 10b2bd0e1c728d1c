#include "vkblr-fit/init/device_matrix.hpp"

#include <algorithm>

#include "vkblr/error.hpp"
#include "vkblr/ops/gemm_f32.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {

DeviceMatrix device_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::string_view label,
                           std::uint64_t capacity, MatrixMemory memory) {
  require(rows >= 1 && cols >= 1, "device matrix {}: shape {}×{} is empty", label, rows, cols);
  const std::uint64_t bytes = std::max(capacity, std::uint64_t{rows} * cols) * 4;
  return {memory == MatrixMemory::host ? ctx.host_buffer(bytes, label) : ctx.buffer(bytes, label), rows, cols};
}

DeviceMatrix host_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::string_view label) {
  return device_matrix(ctx, rows, cols, label, 0, MatrixMemory::host);
}

DeviceMatrix upload_matrix(Context& ctx, std::span<const double> values, std::uint32_t rows, std::uint32_t cols,
                           std::string_view label, MatrixMemory memory) {
  DeviceMatrix m = device_matrix(ctx, rows, cols, label, 0, memory);
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

double sum_of_squares(Context& ctx, const Buffer& values, std::uint32_t count) {
  const Buffer partials = ctx.host_buffer(ops::kSumsqPartials * 4, "fit.sumsq.partials");
  Recorder rec(ctx);
  rec.add(ops::sumsq(ctx, values, count, partials));
  rec.run();
  double s = 0;
  for (const float p : partials.download<float>(ops::kSumsqPartials)) s += p;
  return s;
}

MatrixBlock all_of(const DeviceMatrix& m) { return {&m, 0, m.rows, 0, m.cols}; }

MatrixBlock row_block(const DeviceMatrix& m, std::uint32_t row0, std::uint32_t rows) {
  return block_of(m, row0, rows, 0, m.cols);
}

MatrixBlock block_of(const DeviceMatrix& m, std::uint32_t row0, std::uint32_t rows, std::uint32_t col0,
                     std::uint32_t cols) {
  require(rows >= 1 && cols >= 1 && std::uint64_t{row0} + rows <= m.rows && std::uint64_t{col0} + cols <= m.cols,
          "device matrix: block of rows {}..{}, columns {}..{} of a {}×{} matrix", row0, std::uint64_t{row0} + rows,
          col0, std::uint64_t{col0} + cols, m.rows, m.cols);
  return {&m, row0, rows, col0, cols};
}

Dispatch product(Context& ctx, const DeviceMatrix& a, bool trans_a, const DeviceMatrix& b, bool trans_b,
                 const DeviceMatrix& out, float alpha, bool accumulate) {
  return product(ctx, all_of(a), trans_a, all_of(b), trans_b, all_of(out), alpha, accumulate);
}

Dispatch product(Context& ctx, const MatrixBlock& a, bool trans_a, const MatrixBlock& b, bool trans_b,
                 const MatrixBlock& out, float alpha, bool accumulate) {
  const std::uint32_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::uint32_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  require(k == kb && out.rows == m && out.cols == n,
          "device product: op(a) {}×{} · op(b) {}×{} into {}×{}: shapes do not match", m, k, kb, n, out.rows, out.cols);
  const std::uint64_t out_id = out.matrix->buffer.id();
  require(out_id != a.matrix->buffer.id() && out_id != b.matrix->buffer.id(),
          "device product: the output is an operand");
  const auto offset = [](const MatrixBlock& x) { return std::uint64_t{x.row0} * x.matrix->cols + x.col0; };
  ops::GemmF32 shape;
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.trans_a = trans_a;
  shape.trans_b = trans_b;
  shape.lda = a.matrix->cols;
  shape.ldb = b.matrix->cols;
  shape.ldo = out.matrix->cols;
  shape.a_offset = offset(a);
  shape.b_offset = offset(b);
  shape.out_offset = offset(out);
  shape.alpha = alpha;
  shape.accumulate = accumulate;
  return ops::gemm_f32(ctx, a.matrix->buffer, b.matrix->buffer, out.matrix->buffer, shape);
}

}  // namespace vkblr::fit
