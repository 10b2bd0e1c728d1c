// vkblr-fit refuses W and X that f16 staging cannot carry, naming the
// matrix, the value and the bound: all zero, magnitudes above f16's
// largest (65504), or all below its smallest normal (2^-14), and outputs
// X·Wᵀ whose squared norm is zero or overflows f32 (instead of a loss of
// 0 or NaN much later).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/io/input_range.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

fit::DataSpec inputs_of(const std::string& weight, const std::string& activations) {
  return {.weight_path = weight, .activations_path = activations, .train_tokens = 64, .held_out_tokens = 32};
}

}  // namespace

GPU_TEST("vkblr-fit refuses W and X beyond what f16 staging carries", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  const fit::Matrix good_w = fit::synthetic_weight({.m = 32, .n = 48, .seed = 3});
  const fit::Matrix good_x = fit::synthetic_activations({.tokens = 96, .n = 48, .seed = 4});
  vkt::write_matrix_file(dir.file("w.safetensors"), good_w);
  vkt::write_matrix_file(dir.file("x.safetensors"), good_x);
  const auto refusal = [&](const fit::Matrix& w, const fit::Matrix& x) {
    vkt::write_matrix_file(dir.file("w_bad.safetensors"), w);
    vkt::write_matrix_file(dir.file("x_bad.safetensors"), x);
    return vkt::error_of(
        [&] { fit::load_device_data(ctx, inputs_of(dir.file("w_bad.safetensors"), dir.file("x_bad.safetensors"))); });
  };
  fit::Matrix w = good_w;
  for (float& v : w.values) v = 0;
  CHECK_THAT(refusal(w, good_x), ContainsSubstring("W (" + dir.file("w_bad.safetensors") + ") is all zero"));
  for (float& v : w.values) v = 1e-30f;
  CHECK_THAT(refusal(w, good_x), ContainsSubstring("|values| of at most 1e-30, below f16's smallest normal") &&
                                     ContainsSubstring("Rescale"));
  w = good_w;
  w(5, 7) = -1e5f;
  CHECK_THAT(refusal(w, good_x), ContainsSubstring("W (") && ContainsSubstring("|value| 1e+05 at [5][7]") &&
                                     ContainsSubstring("beyond f16's largest, 65504") && ContainsSubstring("Rescale"));
  fit::Matrix x = good_x;
  x(90, 1) = 70000.0f;  // a held-out token
  CHECK_THAT(refusal(good_w, x), ContainsSubstring("X (") && ContainsSubstring("|value| 70000 at [90][1]"));
  x = good_x;
  for (float& v : x.values) v = 0;
  CHECK_THAT(refusal(good_w, x), ContainsSubstring("X (") && ContainsSubstring("is all zero"));
  // the edges are fine: the largest f16, and one value at its smallest normal
  w = good_w;
  for (float& v : w.values) v = 1e-6f;
  w(0, 0) = static_cast<float>(fit::kF16MinNormal);
  w(1, 1) = static_cast<float>(fit::kF16Max);
  vkt::write_matrix_file(dir.file("w_edge.safetensors"), w);
  const fit::DeviceData in =
      fit::load_device_data(ctx, inputs_of(dir.file("w_edge.safetensors"), dir.file("x.safetensors")));
  CHECK(in.m == 32);
}

TEST_CASE("vkblr-fit refuses outputs X·Wᵀ of zero or f32-overflowing norm", "[fit][errors]") {
  CHECK_THAT(vkt::error_of([] { fit::check_target_norm(0.0, "training", "W w, X x"); }),
             ContainsSubstring("the outputs X·Wᵀ on the training tokens are all zero (W w, X x)"));
  CHECK_THAT(vkt::error_of([] { fit::check_target_norm(1e39, "held-out", "W w, X x"); }),
             ContainsSubstring("on the held-out tokens overflow f32") && ContainsSubstring("rescale W or X"));
  CHECK_THAT(vkt::error_of([] { fit::check_target_norm(std::numeric_limits<double>::infinity(), "training", ""); }),
             ContainsSubstring("overflow f32"));
  fit::check_target_norm(1e-30, "training", "");
  fit::check_target_norm(1e38, "training", "");
}

GPU_TEST("vkblr-fit: the inputs' checksums tell W and X apart by content", "[fit][gpu]") {
  vkt::TempDir dir;
  const fit::Matrix w = fit::synthetic_weight({.m = 32, .n = 48, .seed = 3});
  vkt::write_matrix_file(dir.file("w.safetensors"), w);
  vkt::write_matrix_file(dir.file("x.safetensors"), fit::synthetic_activations({.tokens = 96, .n = 48, .seed = 4}));
  const fit::DataSpec o = inputs_of(dir.file("w.safetensors"), dir.file("x.safetensors"));
  const fit::DeviceData a = fit::load_device_data(ctx, o);
  CHECK(fit::load_device_data(ctx, o).weight_hash == a.weight_hash);
  CHECK(fit::load_device_data(ctx, o).activation_hash == a.activation_hash);
  fit::Matrix other = w;
  other(31, 47) = std::nextafter(other(31, 47), 1.0f);  // one ulp of one value
  vkt::write_matrix_file(dir.file("w.safetensors"), other);
  const fit::DeviceData b = fit::load_device_data(ctx, o);
  CHECK(b.weight_hash != a.weight_hash);
  CHECK(b.activation_hash == a.activation_hash);
  fit::DataSpec fewer = o;
  fewer.train_tokens = 32;  // X is the tokens used: fewer of them, another X
  CHECK(fit::load_device_data(ctx, fewer).activation_hash != a.activation_hash);
}
