// vkblr-fit's magnitude latent start (train/latent_start.hpp): each sign
// matrix of the layer, in the trainer's order, gets w = s·min(rms·a, clamp)
// from its path's Dual-SVID magnitudes; and a run with it is deterministic
// and trains differently from the uniform start.
#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <vector>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/train/latent_start.hpp"

using namespace vkblr;
using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<float> random_magnitudes(std::size_t count, std::uint64_t seed) {
  vkt::Rng rng(seed);
  std::vector<float> a(count);
  for (float& x : a) x = static_cast<float>(std::abs(rng.uniform()) * 4);  // some past the clamp at rms 0.5
  return a;
}

std::vector<float> latents_of(SignMatrix& sm, std::size_t count) {
  for (auto& [name, buffer] : sm.state()) {
    if (name == "w") return buffer->download<float>(count);
  }
  return {};
}

}  // namespace

GPU_TEST("magnitude latent start: w = s·min(rms·a, clamp) for every matrix, in the trainer's order", "[fit][gpu]") {
  const std::uint32_t m = 64, n = 96, r = 32;
  const std::uint32_t rows[] = {m, n, m, n};  // U_0, V_0, U_1, V_1
  std::vector<Buffer> bits;
  std::vector<std::vector<std::uint32_t>> words;
  for (std::uint32_t i = 0; i < 4; ++i) {
    words.push_back(vkt::random_words(std::size_t{rows[i]} * r / 32, 10 + i));
    bits.push_back(ctx.upload(words.back()));
  }
  std::vector<SignMatrix> signs;
  for (std::uint32_t i = 0; i < 4; ++i) signs.emplace_back(ctx, bits[i], rows[i], r, SignInit{}, i);
  std::vector<SignMagnitudes> a;
  for (std::uint32_t p = 0; p < 2; ++p) {
    a.push_back({random_magnitudes(std::size_t{m} * r, 20 + p), random_magnitudes(std::size_t{n} * r, 30 + p)});
  }
  const float rms = 0.5f, clamp = 1.0f;
  start_latents_from_magnitudes(ctx, signs, a, rms, clamp);
  std::size_t clamped = 0;
  for (std::uint32_t i = 0; i < 4; ++i) {
    INFO("matrix " << i);
    const std::vector<float>& mags = i % 2 == 0 ? a[i / 2].u : a[i / 2].v;
    const std::vector<float> w = latents_of(signs[i], mags.size());
    std::size_t wrong = 0;
    for (std::size_t e = 0; e < mags.size(); ++e) {
      const float size = std::min(rms * mags[e], clamp);
      const float want = (words[i][e / 32] >> (e % 32)) & 1u ? size : -size;
      wrong += std::bit_cast<std::uint32_t>(w[e]) != std::bit_cast<std::uint32_t>(want);
      clamped += size == clamp;
    }
    CHECK(wrong == 0);
  }
  CHECK(clamped > 0);  // the clamp was exercised
  CHECK_THROWS_WITH(start_latents_from_magnitudes(ctx, signs, std::span(a).first(1), rms, clamp),
                    ContainsSubstring("4 sign matrices for 1 paths"));
  CHECK_THROWS_WITH(start_latents_from_magnitudes(ctx, signs, a, -1.0f, clamp),
                    ContainsSubstring("--latent-rms -1"));
  std::swap(a[0].u, a[0].v);  // sizes of V for U
  CHECK_THROWS_WITH(start_latents_from_magnitudes(ctx, signs, a, rms, clamp), ContainsSubstring("sign_latents"));
}

GPU_TEST("vkblr-fit: the magnitude latent start is deterministic and trains otherwise than the uniform one",
         "[fit][gpu]") {
  vkt::TempDir dir;
  const auto run = [&](const std::string& name, const std::string& latent_init) {
    FitOptions o = vkt::small_fit_run(dir.file(name));
    o.latent_init = latent_init;
    run_fit(ctx, o);
    return read_blr_result(dir.file(name + ".safetensors"));
  };
  const BlrResult a = run("a", "magnitude"), b = run("b", "magnitude"), u = run("u", "uniform");
  vkt::check_same_layer(a, b);
  std::size_t differ = 0;
  for (std::size_t p = 0; p < a.paths.size(); ++p) differ += a.paths[p].bits_u != u.paths[p].bits_u;
  CHECK(differ > 0);
}
