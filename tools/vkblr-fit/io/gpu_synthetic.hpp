// gpu_synthetic.hpp — vkblr-fit's synthetic weights and activations made on
// the device: the distributions of synthetic.hpp (which stays the host
// reference), drawn with the device's counter-based Gaussians
// (ops::gaussian) and f32 GEMMs, in time O(size) on the host.
//
// Weight (synthetic_weight's spec): U [m][k], V [n][k] orthonormal bases of
// Gaussian matrices (orthonormalize.hpp: CholeskyQR2, shifted when square),
// W = U·(V·diag(σ))ᵀ with σ = spectrum_of(spec), the heavy columns scaled,
// then W scaled to the spec's root-mean-square.
// Activations (synthetic_activations' spec): Z [T][n] Gaussian; with a
// covariance decay, X = Z·diag(√λ)·Qᵀ in blocks of at most 4096 channels,
// each block with its own random orthogonal Q_b (the eigenvalues dealt to
// the blocks in turn, so every block sees the whole spectrum; one block —
// the host's construction — up to 4096 channels); the outlier channels
// scaled last, then X rounded to f16. The covariance's eigenvalues are λ
// exactly, as on the host; beyond 4096 channels, channels of different
// blocks are uncorrelated. Every step is per token (Z's draws are indexed
// by their place in the whole X), so X is made a chunk of tokens at a time
// and no f32 copy of it is ever whole.
// Planted layers: a blr layer of random signs and scales plus Gaussian noise.
//
// Deterministic for a seed (a stream per matrix); not the host's draws.
#pragma once

#include <cstdint>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/io/synthetic.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// W f32 [m][n] on the device. Throws vkblr::Error as check_weight_spec.
DeviceMatrix gpu_synthetic_weight(Context& ctx, const SyntheticWeightSpec& spec);

// X f16 [tokens][n] into the first tokens·n·2 bytes of x16 (device memory,
// or host memory the device writes; its offset at the storage-buffer
// alignment), made `chunk_tokens` tokens at a time (rounded as
// f16_rows.hpp's f16_chunk_rows; 0: 64 MiB of f32 per token chunk). The
// device holds besides x16 two f32 [chunk][n] matrices and (with a
// covariance decay) the blocks' bases, n·min(n, 4096) floats. The same bits
// for every chunk size. Throws vkblr::Error as check_activation_spec,
// for tokens·n past the 2^31 draws of a Gaussian stream, or x16 too small.
void gpu_synthetic_activations(Context& ctx, const SyntheticActivationSpec& spec, const Buffer& x16,
                               std::uint32_t chunk_tokens = 0);

// A planted layer: W = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g) + noise·rms(Ŵ)·N(0, 1)
// with random signs, h and g uniform in [0.5, 1.5], ℓ_k = exp(−k/(rank/4))
// (decaying), then W scaled to root-mean-square `rms`.
struct PlantedWeightSpec {
  std::uint32_t m = 0, n = 0, rank = 0, paths = 1;
  double noise = 0.01;
  double rms = 1.0;
  std::uint64_t seed = 1;
};
DeviceMatrix gpu_planted_weight(Context& ctx, const PlantedWeightSpec& spec);

}  // namespace vkblr::fit
