// vkblr-fit --model-bpw's error-vs-rank curve on the device
// (rank_curve.hpp): the point at rank r is the held-out output error of the
// Dual-SVID init of P·r/32 paths of rank 32, scales as stored, against a
// host reference in f64; the same bits run after run, a shorter curve the
// beginning of a longer one; shapes that do not fit are refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "support/fit_files.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/manifest/rank_curve.hpp"
#include "vkblr-fit/report/metrics.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"
#include "vkblr/half.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::uint32_t kM = 128, kN = 96, kTrain = 128, kHeldOut = 64;

struct CurveLayer {
  fit::Matrix w;         // as read
  fit::Matrix held_out;  // X's held-out tokens as the device has them (f16 values)
  fit::DeviceData data;
};

// The files curve_layer writes, as a fit reads them.
fit::DataSpec curve_data_spec(const vkt::TempDir& dir) {
  fit::DataSpec spec;
  spec.weight_path = dir.file("w.safetensors");
  spec.activations_path = dir.file("x.safetensors");
  spec.train_tokens = kTrain;
  spec.held_out_tokens = kHeldOut;
  return spec;
}

// A 128×96 synthetic W and X of kTrain + kHeldOut tokens (f16 in the file),
// through the files and load_device_data as a fit reads them.
CurveLayer curve_layer(Context& ctx, const vkt::TempDir& dir) {
  CurveLayer l;
  l.w = fit::synthetic_weight({.m = kM, .n = kN, .spectrum_decay = 0.8, .seed = 3});
  const fit::Matrix x =
      fit::synthetic_activations({.tokens = kTrain + kHeldOut, .n = kN, .spectrum_decay = 1.0, .seed = 4});
  fit::SafetensorsWriter wf, xf;
  wf.add_f32("w", {kM, kN}, l.w.values);
  xf.add_f16("x", {x.rows, x.cols}, x.values);
  wf.write(dir.file("w.safetensors"));
  xf.write(dir.file("x.safetensors"));
  l.held_out = fit::Matrix(kHeldOut, kN);
  for (std::size_t i = 0; i < l.held_out.values.size(); ++i) {
    l.held_out.values[i] = f16_to_f32(f32_to_f16(x.values[std::size_t{kTrain} * kN + i]));
  }
  l.data = fit::load_device_data(ctx, curve_data_spec(dir));
  return l;
}

}  // namespace

GPU_TEST("rank curve: rank r's point is the held-out error of the Dual-SVID init of P·r/32 paths of rank 32",
         "[fit][gpu][allocation]") {
  vkt::TempDir dir;
  const CurveLayer l = curve_layer(ctx, dir);
  for (const std::uint32_t paths : {1u, 2u}) {
    INFO(paths << " path(s)");
    const std::vector<double> curve =
        fit::measure_rank_curve(ctx, l.data, {kM, kN, 96, paths}, fit::ScaleDtype::f16, 9);
    REQUIRE(curve.size() == 3);
    for (std::uint32_t k = 1; k <= 3; ++k) {
      // the reference: the dense-residual init of k·P paths of rank 32, its
      // scales as stored, Ŵ and the error in f64 on the host
      const fit::LayerShape blocks{kM, kN, 32, k * paths};
      const std::vector<BlrPathInit> init =
          fit::as_stored(fit::gpu_dual_svid_init_dense(ctx, l.data.w, blocks, {.seed = 9}), fit::ScaleDtype::f16);
      const double want = fit::relative_output_error(fit::reconstruct_weight(blocks, init), l.w, l.held_out);
      INFO("rank " << 32 * k << ": " << curve[k - 1] << ", host " << want);
      CHECK(std::abs(curve[k - 1] - want) <= 2e-5 * want);
    }
    // more blocks fit the residual: the error falls
    CHECK(curve[1] < curve[0]);
    CHECK(curve[2] < curve[1]);
    // the same bits run after run
    CHECK(fit::measure_rank_curve(ctx, l.data, {kM, kN, 96, paths}, fit::ScaleDtype::f16, 9) == curve);
    // a shorter curve is its beginning, bit for bit (the allocation's rounds rely on it)
    CHECK(fit::measure_rank_curve(ctx, l.data, {kM, kN, 64, paths}, fit::ScaleDtype::f16, 9) ==
          std::vector<double>(curve.begin(), curve.begin() + 2));
  }
  // the allocation loads W and the held-out tokens alone: the same curve
  fit::DataSpec held_out_only = curve_data_spec(dir);
  held_out_only.held_out_only = true;
  CHECK(fit::measure_rank_curve(ctx, fit::load_device_data(ctx, held_out_only), {kM, kN, 96, 2}, fit::ScaleDtype::f16,
                                9) == fit::measure_rank_curve(ctx, l.data, {kM, kN, 96, 2}, fit::ScaleDtype::f16, 9));
  // f32 scales are not rounded: another curve
  CHECK(fit::measure_rank_curve(ctx, l.data, {kM, kN, 64, 2}, fit::ScaleDtype::f32, 9) !=
        fit::measure_rank_curve(ctx, l.data, {kM, kN, 64, 2}, fit::ScaleDtype::f16, 9));
}

GPU_TEST("dense-residual init: path 0 is the factor init's bit for bit, the later paths as accurate",
         "[fit][gpu][allocation]") {
  vkt::TempDir dir;
  const CurveLayer l = curve_layer(ctx, dir);
  const fit::LayerShape shape{kM, kN, 32, 3};
  const std::vector<BlrPathInit> factors = fit::gpu_dual_svid_init(ctx, l.data.w, shape, {.seed = 5});
  const std::vector<BlrPathInit> dense = fit::gpu_dual_svid_init_dense(ctx, l.data.w, shape, {.seed = 5});
  REQUIRE(dense.size() == 3);
  CHECK(dense[0].bits_u == factors[0].bits_u);
  CHECK(dense[0].bits_v == factors[0].bits_v);
  CHECK(dense[0].h == factors[0].h);
  CHECK(dense[0].l == factors[0].l);
  CHECK(dense[0].g == factors[0].g);
  // each prefix of paths approximates W as well either way (the residuals
  // differ by rounding only)
  for (std::uint32_t k = 1; k <= 3; ++k) {
    const fit::LayerShape prefix{kM, kN, 32, k};
    const auto error = [&](const std::vector<BlrPathInit>& paths) {
      return fit::relative_weight_error(
          fit::reconstruct_weight(prefix, std::span(paths.data(), k)), l.w);
    };
    INFO(k << " path(s): dense " << error(dense) << ", factors " << error(factors));
    CHECK(std::abs(error(dense) - error(factors)) <= 1e-3 * error(factors));
  }
  // a longer init starts with the shorter one's paths
  const std::vector<BlrPathInit> two = fit::gpu_dual_svid_init_dense(ctx, l.data.w, {kM, kN, 32, 2}, {.seed = 5});
  CHECK(two[1].bits_u == dense[1].bits_u);
  CHECK(two[1].g == dense[1].g);
  CHECK_THAT(vkt::error_of([&] { fit::gpu_dual_svid_init_dense(ctx, l.data.w, {kN, kM, 32, 1}); }),
             ContainsSubstring("GPU Dual-SVID init (dense residual): W is 128×96, the layer 96×128"));
}

GPU_TEST("rank curve: shapes that do not fit are refused", "[fit][gpu][allocation][errors]") {
  vkt::TempDir dir;
  const CurveLayer l = curve_layer(ctx, dir);
  CHECK_THAT(vkt::error_of([&] { fit::measure_rank_curve(ctx, l.data, {kN, kM, 64, 2}, fit::ScaleDtype::f16, 1); }),
             ContainsSubstring("rank curve: a 96x128 layer for W 128x96"));
  CHECK_THAT(vkt::error_of([&] { fit::measure_rank_curve(ctx, l.data, {kM, kN, 128, 2}, fit::ScaleDtype::f16, 1); }),
             ContainsSubstring("rank 128 exceeds"));
  fit::HeldOutResidual residual(ctx, l.data);
  fit::LowRankTerm term{fit::device_matrix(ctx, kN, 32, "a"), fit::device_matrix(ctx, kN, 32, "b")};
  CHECK_THAT(vkt::error_of([&] { residual.add(term); }),
             ContainsSubstring("a term of factors 96x32 and 96x32 for a 128x96 layer"));
}
