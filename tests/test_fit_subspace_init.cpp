// vkblr-fit's subspace init (subspace_init.hpp) and the choice of init
// (init_paths.hpp): on planted layers the binary vectors found are the
// planted sign columns and the init sits at the noise floor; a random
// subspace holds none; the init is deterministic for a seed; `best` keeps
// the init with the lower training-token error; bad inputs are refused with
// a message naming the init.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "support/gpu.hpp"
#include "support/planted_fit.hpp"

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init/init_paths.hpp"
#include "vkblr-fit/init/linalg.hpp"
#include "vkblr-fit/report/metrics.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/init/subspace_init.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr::fit;
using vkblr::BlrPathInit;
using Catch::Matchers::ContainsSubstring;

namespace {

using vkt::planted_layer;
using vkt::sign_agreement;
using Planted = vkt::PlantedFit;

double relative_difference(const MatrixF64& a, const Matrix& b) { return relative_weight_error(a, b); }

}  // namespace

TEST_CASE("subspace init recovers a planted layer's signs and sits at its noise floor", "[fit][subspace]") {
  // the planted test's size and noise (tests/test_fit_job.cpp), both ways
  // round: m > n finds S_U, m < n finds S_V (on Wᵀ)
  const auto [m, n] = GENERATE(std::pair<std::uint32_t, std::uint32_t>{128, 96}, std::pair<std::uint32_t, std::uint32_t>{96, 128});
  const std::uint32_t r = 32;
  const Planted p = planted_layer(m, n, r, 0.02 * std::sqrt(double(r)), 7);
  const LayerShape shape{m, n, r, 1};
  SubspaceStats stats;
  const std::vector<BlrPathInit> paths = subspace_init(p.w, shape, {}, &stats);
  const Matrix x = synthetic_activations({.tokens = 1024, .n = n, .seed = 11});
  const double agree = sign_agreement(paths[0], p.layer, m, n, r);
  const double weight_floor = relative_difference(p.clean, p.w);
  const double output_floor = relative_output_error(p.clean, p.w, x);
  const double weight = relative_weight_error(reconstruct_weight(shape, paths), p.w);
  const double output = relative_output_error(reconstruct_weight(shape, paths), p.w, x);
  const double dual = relative_weight_error(reconstruct_weight(shape, dual_svid_init(p.w, shape)), p.w);
  INFO(m << "x" << n << ": " << stats.found[0] << " vectors found, signs agreeing " << agree << "; weight error "
         << weight << " (floor " << weight_floor << ", Dual-SVID " << dual << "), output error " << output
         << " (floor " << output_floor << ")");
  CHECK(stats.found == std::vector<std::uint32_t>{r});
  CHECK(agree >= 0.99);
  // the least-squares scales fit the noise a little: at most the floor
  CHECK(weight <= 1.05 * weight_floor);
  CHECK(output <= 1.1 * output_floor);
  CHECK(weight < 0.1 * dual);
}

TEST_CASE("subspace init: later paths fit the residual, which for a planted 1-path layer is noise",
          "[fit][subspace]") {
  const std::uint32_t m = 128, n = 96, r = 32;
  const Planted p = planted_layer(m, n, r, 0.02 * std::sqrt(double(r)), 5);
  const LayerShape shape{m, n, r, 2};
  const std::vector<BlrPathInit> paths = subspace_init(p.w, shape);
  REQUIRE(paths.size() == 2);
  CHECK(sign_agreement(paths[0], p.layer, m, n, r) >= 0.99);
  // the second path fits part of the noise: below the floor
  CHECK(relative_weight_error(reconstruct_weight(shape, paths), p.w) < relative_difference(p.clean, p.w));
}

TEST_CASE("find_binary_vectors: the sign columns spanning a subspace, none in a random one", "[fit][subspace]") {
  const std::size_t rows = 128, k = 16;
  Rng rng(3);
  MatrixF64 signs(rows, k);
  for (double& v : signs.values) v = rng.uniform_open() < 0.5 ? -1.0 : 1.0;
  // an orthonormal basis of span(signs): signs times a random rotation, orthonormalised
  const TruncatedSvd svd = truncated_svd(signs, k, {.method = SvdMethod::exact});
  SECTION("planted") {
    const BinaryVectors found = find_binary_vectors(svd.u, k, {}, rng);
    REQUIRE(found.signs.cols == k);
    for (std::size_t c = 0; c < k; ++c) {
      CHECK(found.captured[c] > 0.999);
      if (c > 0) CHECK(found.captured[c] <= found.captured[c - 1]);
      // each is ± a planted column
      double best = 0;
      for (std::size_t q = 0; q < k; ++q) {
        double dot = 0;
        for (std::size_t i = 0; i < rows; ++i) dot += found.signs(i, c) * signs(i, q);
        best = std::max(best, std::abs(dot));
      }
      CHECK(best == double(rows));
    }
  }
  SECTION("random") {
    const MatrixF64 basis = random_orthonormal_columns(rows, k, rng);
    const BinaryVectors found = find_binary_vectors(basis, k, {.patience = 64}, rng);
    CHECK(found.signs.cols == 0);
    CHECK(found.captured.empty());
  }
  SECTION("count limits what is kept") {
    CHECK(find_binary_vectors(svd.u, 3, {}, rng).signs.cols == 3);
  }
}

TEST_CASE("subspace init is deterministic for a seed", "[fit][subspace]") {
  const Planted p = planted_layer(128, 96, 32, 0.1, 9);
  const LayerShape shape{128, 96, 32, 2};
  const std::vector<BlrPathInit> a = subspace_init(p.w, shape, {.seed = 4}), b = subspace_init(p.w, shape, {.seed = 4});
  for (std::size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].bits_u == b[k].bits_u);
    CHECK(a[k].bits_v == b[k].bits_v);
    CHECK(a[k].h == b[k].h);
    CHECK(a[k].l == b[k].l);
    CHECK(a[k].g == b[k].g);
  }
  // another seed: other starts, the same planted columns
  const std::vector<BlrPathInit> c = subspace_init(p.w, shape, {.seed = 5});
  CHECK(sign_agreement(c[0], p.layer, 128, 96, 32) >= 0.99);
}

GPU_TEST("initial_paths: best keeps the init with the lower training-token error", "[fit][subspace][gpu]") {
  const Matrix x = synthetic_activations({.tokens = 512, .n = 96, .seed = 11});
  const auto on_device = [&](const Matrix& w) {
    return upload_matrix(ctx, std::vector<double>(w.values.begin(), w.values.end()), static_cast<std::uint32_t>(w.rows),
                         static_cast<std::uint32_t>(w.cols), "test.w");
  };
  SECTION("planted: the subspace init") {
    const Planted p = planted_layer(128, 96, 32, 0.1, 7);
    const DeviceMatrix w = on_device(p.w);
    const InitResult best = initial_paths(ctx, w, p.w, x, {128, 96, 32, 1}, InitMethod::best, 1);
    CHECK(best.used == InitMethod::subspace);
    CHECK(best.subspace_error < 0.2 * best.dual_svid_error);
    const InitResult sub = initial_paths(ctx, w, p.w, x, {128, 96, 32, 1}, InitMethod::subspace, 1);
    CHECK(sub.paths[0].bits_u == best.paths[0].bits_u);
  }
  SECTION("whichever is better, and what it reports is the f64 error") {
    const Matrix w = synthetic_weight({.m = 128, .n = 96, .seed = 2});
    const DeviceMatrix wd = on_device(w);
    const LayerShape shape{128, 96, 32, 2};
    const InitResult best = initial_paths(ctx, wd, w, x, shape, InitMethod::best, 1);
    const double kept = relative_output_error(reconstruct_weight(shape, best.paths), w, x);
    CHECK(std::abs(kept - std::min(best.dual_svid_error, best.subspace_error)) < 1e-9);
    CHECK(initial_paths(ctx, wd, w, x, shape, InitMethod::dual_svid, 1).used == InitMethod::dual_svid);
  }
}

TEST_CASE("subspace init: a rank beyond min(m, n) and a zero W give finite layers", "[fit][subspace]") {
  const auto finite = [](const std::vector<BlrPathInit>& paths) {
    for (const BlrPathInit& p : paths) {
      for (const auto* v : {&p.h, &p.l, &p.g}) {
        for (const float x : *v) {
          if (!std::isfinite(x)) return false;
        }
      }
    }
    return true;
  };
  const Matrix w = synthetic_weight({.m = 64, .n = 48, .seed = 2});
  const LayerShape wide{64, 48, 64, 2};  // rank 64 > min(m, n) = 48
  const std::vector<BlrPathInit> paths = subspace_init(w, wide);
  CHECK(finite(paths));
  // nothing binary in a synthetic W: the fallback columns, about as good as Dual-SVID
  const double error = relative_weight_error(reconstruct_weight(wide, paths), w);
  const double dual = relative_weight_error(reconstruct_weight(wide, dual_svid_init(w, wide)), w);
  INFO("weight error " << error << ", Dual-SVID " << dual);
  CHECK(error < 1.05 * dual);
  CHECK(finite(subspace_init(Matrix(64, 48), {64, 48, 32, 2})));
}

TEST_CASE("subspace init refuses what does not fit, with a message", "[fit][subspace][errors]") {
  const Matrix w = synthetic_weight({.m = 64, .n = 48, .seed = 2});
  CHECK_THROWS_WITH(subspace_init(w, {64, 48, 40, 1}), ContainsSubstring("subspace init") && ContainsSubstring("40"));
  CHECK_THROWS_WITH(subspace_init(w, {64, 64, 32, 1}), ContainsSubstring("subspace init: W is 64×48"));
  CHECK_THROWS_WITH(subspace_init(w, {64, 48, 32, 1}, {.accept = 0}), ContainsSubstring("accept 0"));
  CHECK_THROWS_WITH(subspace_init(w, {64, 48, 32, 1}, {.distinct = 1}), ContainsSubstring("distinct 1"));
  CHECK_THROWS_WITH(subspace_init(w, {64, 48, 32, 1}, {.sweeps = 1}), ContainsSubstring("sweeps 1"));
  CHECK_THROWS_WITH(subspace_init(w, {64, 48, 32, 1}, {.temperature = -1}), ContainsSubstring("temperature -1"));
  Rng rng(1);
  CHECK_THROWS_WITH(find_binary_vectors(MatrixF64(8, 9), 4, {}, rng),
                    ContainsSubstring("subspace init: a basis of 9 columns in 8 rows"));
  CHECK_THROWS_WITH(init_method_from_string("svd"),
                    ContainsSubstring("'svd'") && ContainsSubstring("dual-svid, subspace, best"));
  CHECK(init_method_from_string("best") == InitMethod::best);
}
