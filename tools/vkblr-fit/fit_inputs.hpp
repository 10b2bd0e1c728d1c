// fit_inputs.hpp — the weight W [m][n] and calibration activations X [T][n]
// of a vkblr-fit run: read from files or generated, validated.
#pragma once

#include <string>

#include "vkblr-fit/checksum.hpp"
#include "vkblr-fit/fit_options.hpp"
#include "vkblr-fit/matrix.hpp"

namespace vkblr::fit {

struct FitInputs {
  Matrix w;                    // [m][n]
  Matrix x_train, x_held_out;  // [T][n], [H][n]
  std::string weight_source, activation_source;
  InputChecksums checksums;    // of w, and of x_train then x_held_out (checksum.hpp)
};

// Reads or generates W and X as `options` say (the sizes already resolved:
// tokens, held_out, synthetic sizes). Throws vkblr::Error with a clear
// message for a missing or bad file, NaN/Inf in W or X, magnitudes f16
// cannot carry (input_range.hpp), a W/X shape mismatch, or too few
// activation tokens.
FitInputs load_fit_inputs(const FitOptions& options);

// A .safetensors tensor or a .npy matrix, chosen by the file's extension.
Matrix read_matrix_file(const std::string& path, const std::string& tensor, const char* what);

}  // namespace vkblr::fit
