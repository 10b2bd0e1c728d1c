// device_matrix.hpp — dense f32 matrices on the device for vkblr-fit's GPU
// linear algebra (the init's randomized SVD, the refit), and the products
// between them (ops::gemm_f32).
//
// A DeviceMatrix is f32 [rows][cols], packed row-major, in a buffer it owns
// (possibly larger than rows·cols: a matrix may shrink in place, e.g. an
// orthonormal basis that lost columns). Products check shapes and throw
// vkblr::Error naming the operands' shapes.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::fit {

struct DeviceMatrix {
  Buffer buffer;
  std::uint32_t rows = 0, cols = 0;

  std::uint64_t elements() const { return std::uint64_t{rows} * cols; }
};

// Where a matrix's buffer lives: device memory, or host memory the device
// reads and writes over the bus (Context::host_buffer), where
// upload_values and download_matrix are copies with no submit and no wait:
// for the small matrices the host and the device hand each other between
// steps (Gram matrices, r×r factors, an SVD's thin outputs).
enum class MatrixMemory { device, host };

// An uninitialised rows×cols matrix (room for `capacity` elements, at least
// rows·cols; 0: exactly rows·cols).
DeviceMatrix device_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::string_view label,
                           std::uint64_t capacity = 0, MatrixMemory memory = MatrixMemory::device);
// The same in host memory.
DeviceMatrix host_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::string_view label);

// A matrix from host values [rows][cols] (f64, rounded to f32).
DeviceMatrix upload_matrix(Context& ctx, std::span<const double> values, std::uint32_t rows, std::uint32_t cols,
                           std::string_view label, MatrixMemory memory = MatrixMemory::device);
// Replaces the values of `m` (same shape) with host values (f64, rounded to f32).
void upload_values(DeviceMatrix& m, std::span<const double> values);
// The values of `m` as f64 [rows][cols] (waits for the device).
std::vector<double> download_matrix(const DeviceMatrix& m);

// Σ v² over the first `count` floats of `values` (ops::sumsq's fixed-order
// partials, summed in f64 on the host; waits for the device).
double sum_of_squares(Context& ctx, const Buffer& values, std::uint32_t count);

// out = alpha · op(a) · op(b) (+ out when accumulating), op = transpose
// where asked; out must be a different matrix of the product's shape.
Dispatch product(Context& ctx, const DeviceMatrix& a, bool trans_a, const DeviceMatrix& b, bool trans_b,
                 const DeviceMatrix& out, float alpha = 1.0f, bool accumulate = false);

// A block of a device matrix, rows [row0, row0 + rows) × columns
// [col0, col0 + cols), as an operand or output of product() (addressed by
// offsets and the matrix's row length, no copy).
struct MatrixBlock {
  const DeviceMatrix* matrix = nullptr;
  std::uint32_t row0 = 0, rows = 0, col0 = 0, cols = 0;
};
// All of `m`; its rows [row0, row0 + rows); or a block of rows and columns.
// Throw vkblr::Error for an empty block or one past the matrix's end.
MatrixBlock all_of(const DeviceMatrix& m);
MatrixBlock row_block(const DeviceMatrix& m, std::uint32_t row0, std::uint32_t rows);
MatrixBlock block_of(const DeviceMatrix& m, std::uint32_t row0, std::uint32_t rows, std::uint32_t col0,
                     std::uint32_t cols);

// product() on blocks: op(a) is the block [rows][cols] or its transpose.
Dispatch product(Context& ctx, const MatrixBlock& a, bool trans_a, const MatrixBlock& b, bool trans_b,
                 const MatrixBlock& out, float alpha = 1.0f, bool accumulate = false);

}  // namespace vkblr::fit
