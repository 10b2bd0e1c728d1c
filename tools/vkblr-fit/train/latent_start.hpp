// latent_start.hpp — where the sign latents of a vkblr-fit run start
// (--latent-init magnitude): each sign's latent is its Dual-SVID factor
// entry's size, w = s·min(rms·a, clamp) with a = |U′_ij| / rms(U′)
// (SignMagnitudes, dual_svid.hpp), so that training flips the signs of
// small entries first. Uniform latents (s·tau) are SignMatrix's own start.
#pragma once

#include <span>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr/context.hpp"
#include "vkblr/sign.hpp"

namespace vkblr::fit {

// signs: a layer's sign matrices in the trainer's order U_0, V_0, U_1,
// V_1, ...; magnitudes: one entry per path, of the matrices' sizes. Waits
// for the device. Throws vkblr::Error for counts or sizes that do not
// match, rms < 0 or not finite, or a matrix without latents (bop).
void start_latents_from_magnitudes(Context& ctx, std::span<SignMatrix> signs,
                                   std::span<const SignMagnitudes> magnitudes, float rms, float clamp);
// The same with the matrices borrowed (LlamaTrainer::sign_matrices()).
void start_latents_from_magnitudes(Context& ctx, std::span<SignMatrix* const> signs,
                                   std::span<const SignMagnitudes> magnitudes, float rms, float clamp);

}  // namespace vkblr::fit
