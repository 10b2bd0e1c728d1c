#include "vkblr-fit/train/latent_start.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vkblr/error.hpp"

namespace vkblr::fit {

void start_latents_from_magnitudes(Context& ctx, std::span<SignMatrix> signs,
                                   std::span<const SignMagnitudes> magnitudes, float rms, float clamp) {
  std::vector<SignMatrix*> borrowed;
  for (SignMatrix& s : signs) borrowed.push_back(&s);
  start_latents_from_magnitudes(ctx, std::span<SignMatrix* const>(borrowed), magnitudes, rms, clamp);
}

void start_latents_from_magnitudes(Context& ctx, std::span<SignMatrix* const> signs,
                                   std::span<const SignMagnitudes> magnitudes, float rms, float clamp) {
  require(signs.size() == 2 * magnitudes.size(), "--latent-init magnitude: {} sign matrices for {} paths",
          signs.size(), magnitudes.size());
  require(std::isfinite(rms) && rms >= 0.0f, "--latent-rms {}: must be finite and >= 0", rms);
  const auto latents = [&](std::span<const float> a) {
    std::vector<float> out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) out[i] = std::min(rms * a[i], clamp);
    return out;
  };
  for (std::size_t p = 0; p < magnitudes.size(); ++p) {
    signs[2 * p]->set_latent_magnitudes(ctx, latents(magnitudes[p].u), clamp);
    signs[2 * p + 1]->set_latent_magnitudes(ctx, latents(magnitudes[p].v), clamp);
  }
}

}  // namespace vkblr::fit
