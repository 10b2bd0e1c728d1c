#include "vkblr-fit/fit_inputs.hpp"

#include <filesystem>
#include <format>

#include "vkblr-fit/input_range.hpp"
#include "vkblr-fit/npy.hpp"
#include "vkblr-fit/safetensors.hpp"
#include "vkblr-fit/synthetic.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {

Matrix read_matrix_file(const std::string& path, const std::string& tensor, const char* what) {
  // A path that cannot be examined (a symlink loop, no permission) is left
  // to the reader, whose error names the path and the cause.
  std::error_code ec;
  require(std::filesystem::exists(path, ec) || ec, "{} file {} does not exist", what, path);
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") {
    require(tensor.empty(), "{} file {} is .npy: it has no tensor names (drop --tensor)", what, path);
    return read_npy_matrix(path);
  }
  require(ext == ".safetensors", "{} file {}: expected .safetensors or .npy", what, path);
  SafetensorsReader reader(path);
  return reader.read_matrix(reader.choose(tensor));
}

FitInputs load_fit_inputs(const FitOptions& o) {
  FitInputs in;
  if (o.weight_path.empty()) {
    in.w = synthetic_weight({.m = o.synthetic_m, .n = o.synthetic_n, .seed = o.seed});
    in.weight_source = std::format("synthetic {}x{} (seed {})", o.synthetic_m, o.synthetic_n, o.seed);
  } else {
    in.w = read_matrix_file(o.weight_path, o.tensor, "weight");
    in.weight_source = o.weight_path + (o.tensor.empty() ? "" : ":" + o.tensor);
  }
  require_finite(in.w, "W (" + in.weight_source + ")");
  check_f16_range(in.w, "W (" + in.weight_source + ")");
  const std::size_t need = std::size_t{o.tokens} + o.held_out;
  Matrix x;
  if (o.activations_path.empty()) {
    x = synthetic_activations({.tokens = static_cast<std::uint32_t>(need),
                               .n = static_cast<std::uint32_t>(in.w.cols),
                               .spectrum_decay = o.activation_decay,
                               .seed = o.seed + 1});
    in.activation_source =
        std::format("synthetic Gaussian {}x{}, covariance spectrum decay {}, with outlier channels (seed {})", need,
                    in.w.cols, o.activation_decay, o.seed + 1);
  } else {
    x = read_matrix_file(o.activations_path, o.activations_tensor, "activations");
    in.activation_source = o.activations_path + (o.activations_tensor.empty() ? "" : ":" + o.activations_tensor);
    require(x.cols == in.w.cols, "activations {} have {} columns but W has n = {} (X must be [T][n])",
            in.activation_source, x.cols, in.w.cols);
    require(x.rows >= need, "activations {} have {} tokens; {} training + {} held-out are needed (--tokens, --held-out)",
            in.activation_source, x.rows, o.tokens, o.held_out);
    x.values.resize(need * x.cols);
    x.rows = need;
  }
  require_finite(x, "X (" + in.activation_source + ")");
  check_f16_range(x, "X (" + in.activation_source + ")");
  TokenSplit split = split_tokens(x, o.held_out);
  in.x_train = std::move(split.train);
  in.x_held_out = std::move(split.held_out);
  in.checksums = {matrix_checksum({&in.w}), matrix_checksum({&in.x_train, &in.x_held_out})};
  return in;
}

}  // namespace vkblr::fit
