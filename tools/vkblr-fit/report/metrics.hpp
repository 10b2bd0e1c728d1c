// metrics.hpp — how far an approximation Ŵ [m][n] is from W [m][n], on the
// host in f64. Every error is a ratio of Frobenius norms (not squared; the
// training loss ‖XŴᵀ − XWᵀ‖²/‖XWᵀ‖² is the square of the output error).
//
// Throw vkblr::Error for mismatched shapes, and when the denominator is
// zero (a relative error of nothing is undefined).
#pragma once

#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {

// ‖Ŵ − W‖ / ‖W‖.
double relative_weight_error(const MatrixF64& w_hat, const Matrix& w);

// ‖X·(Ŵ − W)ᵀ‖ / ‖X·Wᵀ‖ on activations X [T][n] (tokens processed in blocks:
// memory O(block·m), time O(T·m·n)).
double relative_output_error(const MatrixF64& w_hat, const Matrix& w, const Matrix& x);

// The weight error with input column j weighted by its activations' mean
// square s_j = (1/T)·Σ_t X_tj²: √(Σ_ij s_j·(Ŵ − W)_ij² / Σ_ij s_j·W_ij²).
// The output error when input channels are uncorrelated; cheap (O(m·n)).
double activation_weighted_error(const MatrixF64& w_hat, const Matrix& w, const Matrix& x);

}  // namespace vkblr::fit
